"""The CLI's side of queued runs: `--detach`, `--wait RUN_ID` and `DEEP_RESEARCH_WORKERS=external`.

Then the CLI does not execute the run itself: it queues it for the workers
(`python -m research worker`, or a dashboard's embedded worker) and, unless detached, watches
it until it stops, printing its progress from the store. Keys never go with the run: the
worker uses its own settings.

`research.durable` (and with it DBOS, slow to import) is imported inside the functions: a CLI
run that executes in its own process, the usual case, never needs it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from research.core.config import DEFAULT_PERSON, WorkerSettings
from research.core.errors import ResearchError
from research.core.records import Run
from storage import Store

WATCH_S = 0.5  # how often the CLI looks at a queued or executing run
Say = Callable[[str], None]

if TYPE_CHECKING:
    from research.durable import QueuePlace


def connect(db_path: Path | str, settings: WorkerSettings) -> None:
    """Join the job queue of this store, only to enqueue and watch (never to execute)."""
    from research import durable

    durable.launch(durable.Worker(db_path, _no_executor, _no_credentials, lambda: None),
                   listen=False, executor_id="cli-watcher", jobs_url=settings.jobs_url)


def enqueue(store: Store, run_id: str) -> None:
    """Queue the run for a worker (a resumed run continues where it stopped), as its owner's:
    the run's person is its fair-share person on the queue, whoever queues it."""
    from research import durable

    if durable.is_active(run_id):
        raise ResearchError(f"Run {run_id} is already queued or running on a worker.")
    run = store.get_run(run_id)
    store.set_control(run_id, None)
    durable.enqueue(run_id, None, None, person=(run.person if run else None) or DEFAULT_PERSON)


def wait(store: Store, run_id: str, say: Say, *, quiet: bool = False,
         person: str | None = None) -> Run:
    """Watch the run (of `person`; None: anyone's) until no worker has it queued or
    executing; returns the stored run. Progress lines come from the run's events, as for a
    run executed here."""
    run = store.get_run(run_id, person=person)
    if run is None:
        raise ResearchError(f"There is no run with id {run_id!r}.")
    last_event = max((e.id for e in store.get_events(run_id)), default=0)
    from research import durable

    shown_place: QueuePlace | None = None
    while durable.is_active(run_id):
        place = durable.queue_place(run_id)
        if place is not None and place != shown_place and not quiet:
            say(f"Run {run_id} is queued: {place.describe()}")
        shown_place = place
        for event in store.get_events(run_id, after_id=last_event):
            last_event = event.id
            if not quiet and event.type != "source_found":
                say(f"[worker] {event.message or event.type}")
        time.sleep(WATCH_S)
    return store.get_run(run_id) or run


def _no_executor(run_id: str, **_: Any) -> Any:
    raise RuntimeError("The CLI does not execute queued runs; a worker does.")


def _no_credentials() -> Any:
    raise RuntimeError("The CLI does not execute queued runs; a worker does.")
