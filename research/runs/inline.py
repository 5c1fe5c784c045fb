"""A run executed in the calling process, to its end (the CLI's usual case, and Python).

No job engine: the caller's thread executes the pipeline, and the run's heartbeat
(research/runs/liveness.py) says it is alive while it works.
"""

from __future__ import annotations

from typing import Any

from research.core.config import Credentials, ResearchConfig
from research.core.errors import ConfigError
from research.core.events import EventSink
from research.core.records import Run
from research.pipeline import create_run, execute
from storage import Store


def run_research(
    question: str, *, store: Store, config: ResearchConfig, credentials: Credentials,
    on_event: EventSink | None = None, **deps: Any,
) -> str:
    """Create a run, execute it to the end (blocking) and return its id."""
    run_id = create_run(store, question, config)
    execute(run_id, store=store, credentials=credentials, on_event=on_event, **deps)
    return run_id


def resume(
    run_id: str, *, store: Store, credentials: Credentials, on_event: EventSink | None = None,
    **deps: Any,
) -> Run:
    """Continue an interrupted, failed or paused run without redoing finished steps."""
    run = store.get_run(run_id)
    if run is None:
        raise ConfigError(f"There is no run with id {run_id!r}.")
    if run.status == "completed":
        raise ConfigError(f"Run {run_id} has already completed; there is nothing to resume.")
    return execute(run_id, store=store, credentials=credentials, on_event=on_event, **deps)
