"""Living reports (issue 36): update a finished report with what is new, and say what changed.

- `update.py`: `start_update`, the one way to start an update run (through research.runs).
- `revise.py`: what an update does inside the pipeline (reuse the plan, keep or rewrite the
  report, open it with "What changed since <date>").
- `changes.py`: `changes`, the claims an update added, changed or no longer supports, and
  the one number (`Changes.score`) a watcher compares with its threshold.

Nothing is imported here: the pipeline imports `revise`, and `update` imports the pipeline's
door (research.runs).
"""
