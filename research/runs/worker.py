"""`python -m research worker`: a process that executes queued runs, on any machine.

With `DEEP_RESEARCH_WORKERS=external`, dashboards and the CLI only enqueue, watch and control
runs (through `research.runs.Runs`); workers execute them on the job engine
(research/runs/engine.py). A worker takes its keys from its own
settings (environment or secrets file), never from the queue.

A worker killed with SIGKILL leaves its runs PENDING under its executor id. DBOS recovers
such workflows only when the same executor id starts again, or when told to by Conductor,
which is not open source (docs/design/jobs.md). So every worker beats in a small table of
the system database, and every live worker looks for workers whose beat has stopped; the
first to claim a dead worker's row hands its runs back to the queue (`carry_on_dead_workers`),
where the person's limits apply as to any queued run. A worker that finds its own row
claimed (it stalled for longer than DEAD_AFTER_S and was taken for dead) stops at once, so a
run is never executed by two workers at the same time.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from uuid import uuid4

import sqlalchemy as sa

from research.core.config import Credentials, WorkerSettings
from research.core.errors import ConfigError
from research.core.settings import effective_env, prices_path
from research.living import hooks
from research.llm.pricing import PriceTable
from research.pipeline import execute
from research.runs import engine
from storage import Store, chosen_db

log = logging.getLogger(__name__)

BEAT_S = 2.0  # how often a worker says it is alive
DEAD_AFTER_S = 15.0  # a worker silent this long is dead; its runs go back to the queue
CARRY_ON_WITHIN_S = 60.0  # a dead worker's run is carried on by a live one within this
EXIT_FENCED = 75  # the worker stopped because others took it for dead

_beats = sa.Table(
    "deep_research_workers", sa.MetaData(),
    sa.Column("executor_id", sa.String(200), primary_key=True),
    sa.Column("beat_at", sa.Float, nullable=False),
)


def beats_engine(url: str) -> sa.Engine:
    """An engine on the system database with the beats table in place (several worker
    processes may share a SQLite file: wait for its write lock rather than fail)."""
    connect_args = {"timeout": 30} if url.startswith("sqlite") else {}
    beats = sa.create_engine(url, connect_args=connect_args)
    try:
        _beats.create(beats, checkfirst=True)
    except sa.exc.DBAPIError:
        # Two workers starting at once on a fresh database both see no table and both
        # create it; the loser's error is harmless once the table is there.
        if not sa.inspect(beats).has_table(_beats.name):
            raise
    return beats


def beat(beats: sa.Engine, executor_id: str, *, first: bool = False) -> bool:
    """Record that this worker is alive. False when its row was claimed by another worker
    (it was taken for dead): it must stop executing."""
    now = time.time()
    with beats.begin() as conn:
        if first:
            conn.execute(_beats.insert().values(executor_id=executor_id, beat_at=now))
            return True
        done = conn.execute(_beats.update().where(_beats.c.executor_id == executor_id)
                            .values(beat_at=now))
        return done.rowcount == 1


def carry_on_dead_workers(beats: sa.Engine, *, dead_after_s: float = DEAD_AFTER_S,
                          now: float | None = None) -> list[str]:
    """Hand the runs of workers whose beat stopped back to the queue; returns their workflow
    ids. DBOS recovers a dead executor's PENDING workflows only when that executor id starts
    again or Conductor asks a live one ("When self-hosting in a distributed setting without
    Conductor, it is important to manage workflow recovery so that when an executor crashes,
    restarts, or is shut down, its workflows are recovered",
    https://docs.dbos.dev/production/self-hosting/workflow-recovery; the admin recovery
    endpoint is gone in 3.x, dbos-transact-py#853); `engine.requeue_orphans` does it.
    Deleting the dead worker's row first is the claim: of several live workers, only the
    one whose delete took the row resumes its runs."""
    cutoff = (time.time() if now is None else now) - dead_after_s
    with beats.connect() as conn:
        stale = [row[0] for row in conn.execute(
            sa.select(_beats.c.executor_id).where(_beats.c.beat_at < cutoff))]
    resumed: list[str] = []
    for executor_id in stale:
        with beats.begin() as conn:
            claimed = conn.execute(_beats.delete().where(
                _beats.c.executor_id == executor_id, _beats.c.beat_at < cutoff)).rowcount == 1
        if not claimed:
            continue
        orphans = engine.requeue_orphans(executor_id)
        resumed.extend(orphans)
        log.warning("worker %s stopped answering; %d run(s) handed back to the queue",
                    executor_id, len(orphans))
    return resumed


def executor_id() -> str:
    """Unique per worker process, so a dead worker's runs are never mistaken for a live one's."""
    return f"worker-{socket.gethostname()}-{os.getpid()}-{uuid4().hex[:6]}"


def keep_alive(beats: sa.Engine, me: str, stop: threading.Event,
               on_fenced: Callable[[], None]) -> None:
    """Beat every BEAT_S and carry on dead workers' runs, until `stop` is set. Both
    intervals are read from the module at each beat, not bound at import: the worker tests
    set shorter ones in their worker processes rather than wait out the real ones."""
    while not stop.wait(BEAT_S):
        try:
            if not beat(beats, me):
                on_fenced()
                return
            carry_on_dead_workers(beats, dead_after_s=DEAD_AFTER_S)
        except Exception:  # noqa: BLE001 - a missed beat is retried; DEAD_AFTER_S allows many
            log.warning("could not reach the job database; retrying", exc_info=True)


def _fenced() -> None:
    log.error("This worker was silent for more than %.0f s and its runs went to other "
              "workers; it stops so that no run is executed twice.", DEAD_AFTER_S)
    os._exit(EXIT_FENCED)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m research worker",
                                description="Execute queued research runs until stopped.")
    p.add_argument("--concurrency", type=int, metavar="N",
                   help="runs a worker executes at once (default: "
                        "DEEP_RESEARCH_WORKER_CONCURRENCY or 8); the engine keeps one value "
                        "for all workers, set by the worker started last")
    p.add_argument("--db", help="database (default: DEEP_RESEARCH_DB or data/research.db)")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    env = effective_env()
    try:
        settings = WorkerSettings.from_env(env)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    concurrency = args.concurrency or settings.concurrency
    if not 1 <= concurrency <= 64:
        print("error: --concurrency takes a number from 1 to 64.", file=sys.stderr)
        return 2
    db_path = chosen_db(args.db, env)
    Store(db_path).close()  # the store's schema exists before a run reads it
    me = executor_id()
    # After a run, its person is told (research/living/hooks.py); a tick of the watched
    # topics' schedule starts due updates here, through a `Runs` on this worker's engine.
    engine.launch(engine.Worker(db_path, execute, lambda: _own_credentials(),
                                  lambda: _own_prices(),
                                  on_tick=lambda at: _watch_tick(db_path, at),
                                  after_run=hooks.telling(effective_env)),
                   concurrency=concurrency, executor_id=me, jobs_url=settings.jobs_url)
    beats = beats_engine(engine.system_database_url(db_path, settings.jobs_url))
    beat(beats, me, first=True)
    print(f"Worker {me} is executing queued runs ({concurrency} at once). Stop with Ctrl-C.",
          file=sys.stderr, flush=True)
    stop = threading.Event()
    try:
        keep_alive(beats, me, stop, _fenced)
    except KeyboardInterrupt:
        stop.set()
    return 0


def _watch_tick(db_path: str | Path, at: datetime) -> list[str]:
    from research.runs.jobs import Runs  # a worker imports the door's jobs only when ticking

    runs = Runs(db_path, attach=True)
    try:
        return hooks.on_tick(runs, effective_env)(at)
    finally:
        runs.close()


def _own_credentials() -> Credentials:
    """This worker's keys, read when a run starts: from its environment or secrets file."""
    return Credentials.from_env(effective_env())


def _own_prices() -> PriceTable | None:
    try:
        return PriceTable.load(prices_path(effective_env()))
    except ConfigError:
        return None
