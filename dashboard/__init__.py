"""The Streamlit dashboard's logic, kept out of the pages so it can be tested without a browser.

- `estimate`: searches, model calls, time and cost before a run starts;
- `views`: turns store rows into the tables, charts and text the pages show;
- `settings_files`: the secrets file and saved default constants behind the Settings page;
- `ui`: the only module here that imports Streamlit (cached store and the process's one
  door to runs, `research.runs.Runs`, whose embedded worker runs research in the background).
"""
