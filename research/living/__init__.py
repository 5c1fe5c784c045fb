"""Living reports (issue 36): update a finished report with what is new, say what changed,
watch a topic on a schedule, and tell its person outside the browser.

- `update.py`: `start_update`, the one way to start an update run (through research.runs).
- `revise.py`: what an update does inside the pipeline (reuse the plan, keep or rewrite the
  report, open it with "What changed since <date>").
- `changes.py`: `changes`, the claims an update added, changed or no longer supports, and
  the one number (`Changes.score`) a watcher compares with its threshold.
- `notify.py`: telling a person through Apprise (targets are secrets, kept like keys).
- `watches.py`: watched topics: when each is due, starting its update, keeping or dropping it.
- `hooks.py`: what the job engine calls after a run ends and at each tick of its schedule.

Nothing is imported here: the pipeline imports `revise`, and `update` imports the pipeline's
door (research.runs).
"""
