"""Living reports (issue 36): a finished run updated with what is new, watched on a schedule,
and its person told outside the browser.

- `notify.py`: telling a person through Apprise (targets are secrets, kept like keys).
- `watches.py`: watched topics: when each is due, starting its update, keeping or dropping it.
- `hooks.py`: what the job engine calls after a run ends and at each tick of its schedule.
"""
