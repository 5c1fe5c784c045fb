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

Fair share: the queue is partitioned by person (the partition key), with at most
MAX_RUNS_PER_PERSON of one person's runs executing at once over all workers and each worker
running at most its own concurrency; each poll, DBOS visits the partitions in random order, so
one person's twenty queued runs never hold back another person's run beyond a free slot.

DBOS is one instance per process; `launch` binds it to one store (and relaunches it when a
test binds another). A process that only enqueues, watches and controls (a dashboard or the
CLI with external workers) launches without listening to the queue.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import uuid4

from dbos import DBOS, DBOSConfig, Queue, SetEnqueueOptions, SetWorkflowID

from research.core.config import DEFAULT_PERSON, MAX_RUNS_PER_PERSON, WORKER_CONCURRENCY, Credentials
from research.core.errors import redact
from research.core.events import Error
from research.llm.pricing import PriceTable
from storage import Store
from storage.db_value import postgres_url

log = logging.getLogger(__name__)

APP_NAME = "deep-research"
# Fixed on purpose: by default DBOS hashes the workflow source into the version and recovers
# only the current version's work, so any code change would strand interrupted runs.
APP_VERSION = "deep-research-1"
EXECUTOR_ID = "local"  # the embedded worker: a restart recovers this id's unfinished runs
QUEUE = "runs"
WORKFLOW = "research_run"
POLL_S = 0.5  # how often a worker looks for queued runs
ACTIVE_STATES = ["PENDING", "ENQUEUED"]

Executor = Callable[..., Any]


@dataclass
class Worker:
    """What the workflow needs in this process: the store, how to run a run, and the keys
    and prices of this worker's own settings (read when a recovered run starts)."""

    db_path: str | Path  # a SQLite file, or the team's postgresql:// URL
    executor: Executor
    credentials: Callable[[], Credentials]
    prices: Callable[[], PriceTable | None]
    handed: dict[str, tuple[Credentials, PriceTable | None]] = field(default_factory=dict)
    crashes: dict[str, str] = field(default_factory=dict)


_lock = threading.Lock()
_worker: Worker | None = None
_launched_url: str | None = None
_queue: Queue | None = None


def system_database_url(db_path: str | Path, jobs_url: str | None = None) -> str:
    """The DBOS system database. `jobs_url` (DEEP_RESEARCH_JOBS_DB) wins; a store on
    PostgreSQL shares its database (DBOS keeps its tables in its own schema, `dbos`);
    otherwise a SQLite file of its own beside the store, so the two never wait on each
    other's write locks."""
    if jobs_url:
        return jobs_url
    url = postgres_url(db_path)  # also in the form a Path folds "//" into
    if url is not None:
        return url
    path = Path(db_path)
    return f"sqlite:///{path.with_name(path.stem + '-jobs.sqlite')}"


def launch(worker: Worker, *, listen: bool = True, concurrency: int = WORKER_CONCURRENCY,
           executor_id: str = EXECUTOR_ID, jobs_url: str | None = None) -> None:
    """Start (or keep) this process's DBOS instance for `worker.db_path`. With `listen` it
    executes queued runs, at most `concurrency` at once, and at launch recovers the runs
    `executor_id` left PENDING when it stopped; without, it only enqueues and watches."""
    global _worker, _launched_url, _queue
    url = system_database_url(worker.db_path, jobs_url)
    key = f"{url}|{listen}|{concurrency}|{executor_id}"
    with _lock:
        _worker = worker
        if _launched_url == key:
            return
        if _launched_url is not None:
            DBOS.destroy()
        config: DBOSConfig = {
            "name": APP_NAME, "system_database_url": url, "application_version": APP_VERSION,
            "executor_id": executor_id, "log_level": "WARNING",
        }
        DBOS(config=config)
        if not listen:
            DBOS.listen_queues([])
        DBOS.launch()
        _queue = DBOS.register_queue(
            QUEUE, worker_concurrency=concurrency, partition_concurrency=MAX_RUNS_PER_PERSON,
            polling_interval_sec=POLL_S,
            # A worker's own limit is written when it starts; watchers never overwrite it.
            on_conflict="always_update" if listen else "never_update")
        _launched_url = key


def stop() -> None:
    """Stop this process's DBOS instance, if it runs: its queue polling and threads end, and
    a later `launch` starts it again. For a process done with the queue for a while (a test
    process moving on to tests that do not use it: an idle instance polls its database about
    four times a second)."""
    global _worker, _launched_url, _queue
    with _lock:
        if _launched_url is not None:
            DBOS.destroy()
        _worker, _launched_url, _queue = None, None, None


def enqueue(run_id: str, credentials: Credentials | None, prices: PriceTable | None, *,
            person: str = DEFAULT_PERSON) -> str:
    """Queue a (new or resumed) run of `person` for execution; returns the workflow id.
    Each execution gets a workflow of its own (`<run id>:<random>`), so a run can be
    resumed any number of times after its earlier workflows ended. `credentials` stay in
    this process's memory (None: the executing worker uses its own settings)."""
    worker = _current()
    if credentials is not None:
        worker.handed[run_id] = (credentials, prices)
    worker.crashes.pop(run_id, None)
    workflow_id = f"{run_id}:{uuid4().hex[:12]}"
    with SetWorkflowID(workflow_id), SetEnqueueOptions(queue_partition_key=person or DEFAULT_PERSON):
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


@dataclass(frozen=True)
class QueuePlace:
    """Where a queued run stands: `place` among its person's queued runs (1 = next of
    theirs to start) and how many runs of everyone are queued ahead of it."""

    place: int
    ahead: int

    def describe(self) -> str:
        """The place in plain words (the Run page, the CLI)."""
        mine = ("next of this person's runs to start" if self.place == 1
                else f"number {self.place} among this person's queued runs")
        others = "no other queued run" if self.ahead == 0 else \
            f"{self.ahead} queued run{'s' if self.ahead != 1 else ''} of everyone"
        return f"{mine} ({others} ahead of it)."


def queue_place(run_id: str) -> QueuePlace | None:
    """The place of the run's queued workflow, or None when it is not waiting in the queue."""
    queued = DBOS.list_workflows(status="ENQUEUED", name=WORKFLOW, queue_name=QUEUE,
                                 load_input=False, load_output=False)
    queued.sort(key=lambda s: s.created_at or 0)
    for index, status in enumerate(queued):
        if status.workflow_id.startswith(f"{run_id}:"):
            person = status.queue_partition_key
            mine = sum(1 for s in queued[:index] if s.queue_partition_key == person)
            return QueuePlace(place=mine + 1, ahead=index)
    return None


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
        run = store.get_run(run_id)
        return run.status if run else "missing"
    finally:
        store.close()


def _guarded(worker: Worker, store: Store, run_id: str, credentials: Credentials,
             prices: PriceTable | None) -> None:
    """Never raises: an unexpected error is stored on the run in plain words, keys redacted."""
    try:
        worker.executor(run_id, store=store, credentials=credentials, prices=prices)
    except Exception as exc:  # noqa: BLE001 - the run must end in a stored, readable state
        log.exception("run %s stopped unexpectedly", run_id)
        message = redact(f"The run stopped because of a problem in the program itself: {exc}.",
                         credentials.secrets())
        worker.crashes[run_id] = message
        _record_failure(store, run_id, message)


def _record_failure(store: Store, run_id: str, message: str) -> None:
    try:
        run = store.get_run(run_id)
        if run is not None and run.status not in ("completed", "failed", "cancelled"):
            store.set_run_status(run_id, "failed", error=message)
            store.append_event(Error(run_id, message))
    except Exception:  # noqa: BLE001 - the database itself may be the problem
        log.exception("could not record the failure of run %s", run_id)
