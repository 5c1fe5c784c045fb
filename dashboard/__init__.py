"""The Streamlit dashboard's logic, kept out of the pages so it can be tested without a browser.

- `jobs`: the process-wide job manager that runs research in background threads;
- `estimate`: searches, model calls, time and cost before a run starts;
- `views`: turns store rows into the tables, charts and text the pages show;
- `settings_files`: the secrets file and saved default constants behind the Settings page;
- `ui`: the only module here that imports Streamlit (cached store and job manager, helpers).
"""
