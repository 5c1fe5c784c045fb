"""The door to a run's life: the dashboard, the CLI, the worker and Python call only this.

    from research.runs import Runs
    runs = Runs("data/research.db")              # one per process and store
    run_id = runs.start(question, config, credentials, person="ada")
    runs.status(run_id)                          # RunStatus: status word, alive, queue place...
    runs.pause(run_id); runs.unpause(run_id); runs.cancel(run_id)
    runs.resume(run_id, credentials); runs.wait(run_id)

Where each part lives:
- `jobs.py`: `Runs`, a run's life on the job engine (start, resume, pause, unpause, cancel,
  wait, watch, status, is_alive, queue_place, crash, sweep).
- `inline.py`: `run_research` and `resume`, a run executed in the calling process to its end
  (the CLI's usual case; no job engine, which is slow to import).
- `control.py`: `RunControl`, which the pipeline checks between units of work (pause,
  cancel, the time limit), and `pause` / `unpause` / `cancel` on a store.
- `liveness.py`: the run's one liveness record (its heartbeat) and the rule that reads it.
- `status.py`: `RunStatus`, `QueuePlace`, `status_of`: what a run looks like from outside.
- `engine.py`: DBOS Transact, the job engine; the only module that imports DBOS.
- `worker.py`: `python -m research worker`, the loop of a process that executes queued runs.

`Runs` and the inline functions are loaded on first use: the pipeline imports `control`
from here, and the inline functions import the pipeline.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from research.runs.control import RunControl, cancel, pause, unpause
from research.runs.liveness import owner_is_dead
from research.runs.status import ACTIVE, RESUMABLE, QueuePlace, RunStatus, status_of

if TYPE_CHECKING:
    from research.runs.inline import resume, run_research
    from research.runs.jobs import Runs

__all__ = [
    "ACTIVE", "RESUMABLE", "QueuePlace", "RunControl", "RunStatus", "Runs", "cancel",
    "owner_is_dead", "pause", "resume", "run_research", "status_of", "unpause",
]

_LATER = {"Runs": "research.runs.jobs", "run_research": "research.runs.inline",
          "resume": "research.runs.inline"}


def __getattr__(name: str) -> Any:
    if name in _LATER:
        return getattr(import_module(_LATER[name]), name)
    raise AttributeError(f"module 'research.runs' has no attribute {name!r}")
