"""Runs as durable workflows of DBOS Transact (why DBOS: docs/design/jobs.md).

A run executes as one DBOS workflow with one step, `execute(run_id)`, on the queue `runs`.
DBOS records the workflow in its own system database (a SQLite file beside the store), so a
process killed mid-run leaves it PENDING and the next launch of this machine's worker recovers
it: the step that was in flight runs again, and `execute` skips every pipeline step the store
already holds. Pause and cancel stay ours (`runs.control`, research/control.py): DBOS has no
pause, and its cancel would wait for the running step, which here is the whole run.

The workflow's only input is the run id: DBOS pickles inputs into its database, and keys must
never be stored. A worker's keys come from its own settings (`Worker.credentials`), or, for a
run started or resumed in this process, from the caller, in memory only.

DBOS is one instance per process; `launch` binds it to one store (and relaunches it when a
test binds another).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import uuid4

from dbos import DBOS, DBOSConfig, Queue, SetWorkflowID

from research.config import Credentials
from research.errors import redact
from research.llm.pricing import PriceTable
from storage import Store

log = logging.getLogger(__name__)

APP_NAME = "deep-research"
# Fixed on purpose: by default DBOS hashes the workflow source into the version and recovers
# only the current version's work, so any code change would strand interrupted runs.
APP_VERSION = "deep-research-1"
EXECUTOR_ID = "local"  # one machine; a team gives each worker its own (issue 18, point 3)
QUEUE = "runs"
WORKFLOW = "research_run"
RUNS_PER_WORKER = 8  # runs one process executes at once; more wait in the queue
ACTIVE_STATES = ["PENDING", "ENQUEUED"]

Executor = Callable[..., Any]


@dataclass
class Worker:
    """What the workflow needs in this process: the store, how to run a run, and the keys
    and prices of this worker's own settings (read when a recovered run starts)."""

    db_path: Path
    executor: Executor
    credentials: Callable[[], Credentials]
    prices: Callable[[], PriceTable | None]
    handed: dict[str, tuple[Credentials, PriceTable | None]] = field(default_factory=dict)
    crashes: dict[str, str] = field(default_factory=dict)


_lock = threading.Lock()
_worker: Worker | None = None
_launched_url: str | None = None
_queue: Queue | None = None


def system_database_url(db_path: Path) -> str:
    """The DBOS system database: its own SQLite file beside the store, so the two never
    wait on each other's write locks."""
    return f"sqlite:///{db_path.with_name(db_path.stem + '-jobs.sqlite')}"


def launch(worker: Worker) -> None:
    """Start (or keep) this process's DBOS worker for `worker.db_path`. At launch DBOS
    recovers the runs this machine left PENDING when it stopped."""
    global _worker, _launched_url, _queue
    url = system_database_url(worker.db_path)
    with _lock:
        _worker = worker
        if _launched_url == url:
            return
        if _launched_url is not None:
            DBOS.destroy()
        config: DBOSConfig = {
            "name": APP_NAME, "system_database_url": url, "application_version": APP_VERSION,
            "executor_id": EXECUTOR_ID, "log_level": "WARNING",
        }
        DBOS(config=config)
        DBOS.launch()
        _queue = DBOS.register_queue(QUEUE, worker_concurrency=RUNS_PER_WORKER, polling_interval_sec=0.5,
                            on_conflict="always_update")
        _launched_url = url


def enqueue(run_id: str, credentials: Credentials, prices: PriceTable | None) -> str:
    """Queue a (new or resumed) run for execution; returns the workflow id. Each execution
    gets a workflow of its own (`<run id>:<random>`), so a run can be resumed any number of
    times after its earlier workflows ended."""
    worker = _current()
    worker.handed[run_id] = (credentials, prices)
    worker.crashes.pop(run_id, None)
    workflow_id = f"{run_id}:{uuid4().hex[:12]}"
    with SetWorkflowID(workflow_id):
        _enqueue_on(_queue, run_id)
    return workflow_id


def _enqueue_on(queue: Queue | None, run_id: str) -> None:
    if queue is None:
        raise RuntimeError("The run worker has not been launched (research.durable.launch).")
    queue.enqueue(research_run, run_id)


def is_active(run_id: str) -> bool:
    """True while a workflow of this run is queued or executing (in any process on this
    system database)."""
    return bool(DBOS.list_workflows(
        workflow_id_prefix=f"{run_id}:", status=ACTIVE_STATES, name=WORKFLOW, limit=1,
        load_input=False, load_output=False))


def active_runs() -> set[str]:
    """The runs with a queued or executing workflow."""
    statuses = DBOS.list_workflows(status=ACTIVE_STATES, name=WORKFLOW, load_input=False,
                                   load_output=False)
    return {status.workflow_id.split(":", 1)[0] for status in statuses}


def crash(run_id: str) -> str | None:
    """The message of an unexpected error that stopped the run's execution, if any."""
    return _current().crashes.get(run_id)


def _current() -> Worker:
    if _worker is None:
        raise RuntimeError("The run worker has not been launched (research.durable.launch).")
    return _worker


@DBOS.workflow(name=WORKFLOW)
def research_run(run_id: str) -> str:
    return execute_run(run_id)


@DBOS.step(name="execute")
def execute_run(run_id: str) -> str:
    """Run (or continue) the run to a stored end; returns its final status."""
    worker = _current()
    if run_id in worker.handed:
        credentials, prices = worker.handed.pop(run_id)
    else:  # recovered after a restart: this worker's own settings
        credentials, prices = worker.credentials(), worker.prices()
    store = Store(worker.db_path, secrets=credentials.secrets())
    try:
        if store.get_control(run_id) == "cancel":  # cancelled while it waited in the queue
            store.set_run_status(run_id, "cancelled")
        else:
            _guarded(worker, store, run_id, credentials, prices)
        return str((store.get_run(run_id) or {}).get("status") or "missing")
    finally:
        store.close()


def _guarded(worker: Worker, store: Store, run_id: str, credentials: Credentials,
             prices: PriceTable | None) -> None:
    """Never raises: an unexpected error is stored on the run in plain words, keys redacted."""
    try:
        worker.executor(run_id, store=store, credentials=credentials, prices=prices)
    except Exception as exc:  # noqa: BLE001 - the run must end in a stored, readable state
        log.exception("run %s stopped unexpectedly", run_id)
        message = redact(f"The run stopped unexpectedly ({exc.__class__.__name__}: {exc}).",
                         credentials.secrets())
        worker.crashes[run_id] = message
        _record_failure(store, run_id, message)


def _record_failure(store: Store, run_id: str, message: str) -> None:
    try:
        run = store.get_run(run_id)
        if run is not None and run["status"] not in ("completed", "failed", "cancelled"):
            store.set_run_status(run_id, "failed", error=message)
            store.append_event({"run_id": run_id, "type": "error", "message": message})
    except Exception:  # noqa: BLE001 - the database itself may be the problem
        log.exception("could not record the failure of run %s", run_id)
