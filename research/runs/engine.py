"""Runs as durable workflows of DBOS Transact (why DBOS: docs/design/jobs.md).

The only module that imports DBOS: everything else reaches the engine through the door,
`research.runs` (research/runs/jobs.py), and a test fails if another module imports it.

A run executes as one DBOS workflow with one step, `execute(run_id)`, on the queue `runs`.
DBOS records the workflow in its own system database (a SQLite file beside the store), so a
process killed mid-run leaves it PENDING and the next launch of this machine's worker recovers
it: the step that was in flight runs again, and `execute` skips every pipeline step the store
already holds. Pause and cancel stay ours (`runs.control`, research/runs/control.py): DBOS has no
pause, and its cancel would wait for the running step, which here is the whole run.

The workflow's only input is the run id: DBOS pickles inputs into its database, and keys must
never be stored. A worker's keys come from its own settings (`Worker.credentials`), or, for a
run started or resumed in this process, from the caller, in memory only. A run's failure is
recorded in one place, on the run in the store (`control.record_failure`), never kept here.

Fair share: the queue is partitioned by person (the partition key), with at most
MAX_RUNS_PER_PERSON of one person's runs executing at once over all workers and each worker
running at most its own concurrency; each poll, DBOS visits the partitions in random order, so
one person's twenty queued runs never hold back another person's run beyond a free slot.

Watched topics (issue 36): a DBOS schedule (stored in the system database, so every process
shares it and each tick runs once: https://docs.dbos.dev/python/tutorials/scheduled-workflows)
enqueues `watch_tick` every WATCH_EVERY on the queue `watches`, which only executing processes
listen to (the embedded worker, `python -m research worker`); the tick hands its time to the
worker's `on_tick` (research/living/watches.py), which starts the due watches' updates on the
`runs` queue under their owners' names. The tick's only input is its time.

DBOS is one instance per process; `launch` binds it to one store (and relaunches it when a
test binds another). A process that only enqueues, watches and controls (a dashboard or the
CLI with external workers) launches without listening to the queue.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import uuid4

from dbos import DBOS, DBOSConfig, Queue, SetEnqueueOptions, SetWorkflowID

from research.core.config import DEFAULT_PERSON, MAX_RUNS_PER_PERSON, WORKER_CONCURRENCY, Credentials
from research.core.errors import redact
from research.llm.pricing import PriceTable
from research.runs.control import record_failure
from research.runs.status import QueuePlace
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
WATCH_QUEUE = "watches"
WATCH_SCHEDULE = "watched-topics"
WATCH_WORKFLOW = "watch_tick"
WATCH_EVERY = "*/10 * * * *"  # how often due watches are looked for (they are daily at most)

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
    # What a tick of the watched topics' schedule does here (None: nothing).
    on_tick: Callable[[datetime], object] | None = None
    # What follows a run's execution here, however it ended (telling its person).
    after_run: Callable[[Store, str], None] | None = None


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
        DBOS.register_queue(WATCH_QUEUE, global_concurrency=1, polling_interval_sec=POLL_S * 4,
                            on_conflict="always_update" if listen else "never_update")
        DBOS.apply_schedules([{"schedule_name": WATCH_SCHEDULE, "workflow_fn": watch_tick,
                               "schedule": WATCH_EVERY, "queue_name": WATCH_QUEUE}])
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
    workflow_id = f"{run_id}:{uuid4().hex[:12]}"
    with SetWorkflowID(workflow_id), SetEnqueueOptions(queue_partition_key=person or DEFAULT_PERSON):
        _enqueue_on(_queue, run_id)
    return workflow_id


def _enqueue_on(queue: Queue | None, run_id: str) -> None:
    if queue is None:
        raise RuntimeError("The run worker has not been launched (research.runs.engine.launch).")
    queue.enqueue(research_run, run_id)


def tick_watches_now() -> None:
    """Run one tick of the watched topics' schedule now, on a process that listens to its
    queue, and wait for it."""
    handle = DBOS.trigger_schedule(WATCH_SCHEDULE)
    handle.get_result()


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


def requeue_orphans(executor_id: str) -> list[str]:
    """Hand the runs a dead executor left executing back to the queue; returns their
    workflow ids. `DBOS.resume_workflow` with the queue name sets a workflow ENQUEUED again
    on the same queue and partition
    (https://docs.dbos.dev/python/reference/contexts#resume_workflow); its finished steps
    stay checkpointed."""
    orphans = DBOS.list_workflows(status="PENDING", name=WORKFLOW, executor_id=executor_id,
                                  load_input=False, load_output=False)
    for status in orphans:
        DBOS.resume_workflow(status.workflow_id, queue_name=QUEUE)
    return [status.workflow_id for status in orphans]


def executions(run_id: str) -> list[tuple[str, str]]:
    """(status, executor id) of each of the run's workflows, oldest first."""
    statuses = DBOS.list_workflows(workflow_id_prefix=f"{run_id}:", name=WORKFLOW,
                                   load_input=False, load_output=False)
    return [(str(s.status), str(s.executor_id)) for s in statuses]


def cancel_all(wait_s: float = 10.0) -> None:
    """Give executing runs `wait_s` to end, then cancel every queued or executing workflow
    (a test's runs must not run in the next test). Nothing when the engine never launched."""
    if _launched_url is None:
        return
    deadline = time.monotonic() + wait_s
    while DBOS.list_workflows(status="PENDING", name=WORKFLOW, load_input=False,
                              load_output=False) and time.monotonic() < deadline:
        time.sleep(0.05)
    for status in DBOS.list_workflows(status=ACTIVE_STATES, load_input=False, load_output=False):
        DBOS.cancel_workflow(status.workflow_id)


def _current() -> Worker:
    if _worker is None:
        raise RuntimeError("The run worker has not been launched (research.runs.engine.launch).")
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
            if worker.after_run is not None:  # after a failure is recorded, too
                worker.after_run(store, run_id)
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
        _record_failure(store, run_id, message)


@DBOS.workflow(name=WATCH_WORKFLOW)
def watch_tick(scheduled_at: datetime, context: Any) -> None:
    look_at_watches(scheduled_at.isoformat())


@DBOS.step(name="watches")
def look_at_watches(at: str) -> int:
    """Hand the tick's time to this worker's `on_tick`; returns how many updates it started."""
    worker = _current()
    on_tick = worker.on_tick
    if on_tick is None:
        return 0
    started: list[object] = []

    def look() -> None:
        try:
            found = on_tick(datetime.fromisoformat(at))
            started.extend(found if isinstance(found, list) else [])
        except Exception:  # noqa: BLE001 - one bad look must not stop the next tick
            log.exception("could not look at the watched topics")

    # On a thread of its own, outside this step's context: the updates it starts are runs
    # of their own (DBOS refuses to start a workflow from inside a step), as if started from
    # a page, and the watch's claim in the store keeps a replayed tick from starting twice.
    looker = threading.Thread(target=look, name="watch-tick")
    looker.start()
    looker.join()
    return len(started)


def _record_failure(store: Store, run_id: str, message: str) -> None:
    """A failure the pipeline could not record itself (it escaped `execute`), unless the run
    had already ended."""
    try:
        run = store.get_run(run_id)
        if run is not None and run.status not in ("completed", "failed", "cancelled"):
            record_failure(store, run_id, message)
    except Exception:  # noqa: BLE001 - the database itself may be the problem
        log.exception("could not record the failure of run %s", run_id)
