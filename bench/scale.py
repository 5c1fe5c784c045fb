"""The `scale` section (issue 18 point 8): queued runs on PostgreSQL with 1, 2 and 4 workers.

Each pass gets a fresh database on a throw-away local PostgreSQL server (tests/pg_server.py):
the store and the run queue (DBOS's tables) both live there, as for a team. The benchmark
process only enqueues and watches, as a dashboard with `DEEP_RESEARCH_WORKERS=external` does;
`python -m research worker --concurrency C` processes execute against the stand-in server at
fixed latencies. A poller thread reads what the Run page's live panel reads, every 100 ms,
during the load. Then two workers, one run, and the worker executing it is killed with SIGKILL
mid-research: how long until the other carried it on, and how many steps ran twice.

The figures come from the store (runs' start and end, the steps' events), the DBOS workflow
table (who executes what) and this process's clock at enqueue time.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from research.core.records import EventRow, Run, Step

ROOT = Path(__file__).resolve().parent.parent
QUESTION = "How are heat pumps, solar and storage changing household energy use in region {n}?"
TERMINAL = ("completed", "failed", "cancelled")
WORKER_COUNTS = (1, 2, 4)
Say = Callable[[str], None]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("Scale (queued runs on PostgreSQL, several workers)")
    group.add_argument("--scale-runs", type=int, default=24, help="runs per pass (default 24)")
    group.add_argument("--scale-concurrency", type=int, default=2,
                       help="runs each worker executes at once (default 2)")
    group.add_argument("--scale-workers", default="1,2,4",
                       help="worker counts, one pass each (default 1,2,4)")
    group.add_argument("--scale-timeout", type=float, default=1800.0,
                       help="give up on a pass after this many seconds (default 1800)")


# -- figures (pure; tests/test_bench_scale.py) ----------------------------------------------

def when(stamp: str) -> float:
    """A stored UTC ISO time ("...Z") as epoch seconds."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def percentile(values: Iterable[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); 0.0 for no values."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = max(0, -(-len(ordered) * q // 100) - 1)
    return ordered[int(rank)]


def steps_run_twice(events: Iterable[EventRow]) -> tuple[list[str], list[str]]:
    """(steps started twice at the same attempt, steps completed twice) from a run's events.

    A retry starts a step again with a higher attempt number; the same attempt started twice
    means the step was executed again (after a crash, or by two workers at once). Completed
    twice means both executions went through to the end: that must never happen."""
    started: Counter[tuple[str, int]] = Counter()
    completed: Counter[str] = Counter()
    for event in events:
        key = event.step
        if not key:
            continue
        if event.type == "step_started":
            started[(key, int(event.data.get("attempt") or 1))] += 1
        elif event.type == "step_completed":
            completed[key] += 1
    return (sorted({key for (key, _), n in started.items() if n > 1}),
            sorted(key for key, n in completed.items() if n > 1))


def steps_redone(before: Mapping[str, Step],
                 after: Iterable[Step]) -> tuple[list[str], list[str]]:
    """(steps started again, finished steps executed again) between two reads of a run's steps
    table. A step's row keeps its first start until it is started again; a finished step's
    end changes only if it was executed again, which must never happen. (The events can miss
    a start the killed worker had not yet written.)"""
    rerun, redone = [], []
    for step in after:
        old = before.get(step.key)
        if old is None:
            continue
        if step.started_at != old.started_at:
            rerun.append(step.key)
        if old.status == "done" and step.finished_at != old.finished_at:
            redone.append(step.key)
    return sorted(rerun), sorted(redone)


# -- processes -------------------------------------------------------------------------------

@dataclass
class Workers:
    """`python -m research worker` processes, each in its own process group."""

    env: dict[str, str]
    cwd: Path
    concurrency: int
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def start(self, count: int) -> None:
        for _ in range(count):
            name = f"w{len(self.procs) + 1}"
            with (self.cwd / f"{name}.err").open("wb") as err:
                self.procs[name] = subprocess.Popen(
                    [sys.executable, "-m", "research", "worker", "--concurrency",
                     str(self.concurrency)], cwd=self.cwd, env=self.env,
                    stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        deadline = time.monotonic() + 180
        for name, proc in self.procs.items():
            log = self.cwd / f"{name}.err"
            while b"is executing queued runs" not in log.read_bytes():
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"worker {name} did not start: {log.read_text()[-500:]}")
                time.sleep(0.2)

    def kill(self, name: str) -> None:
        """SIGKILL: no handler, no cleanup, no last commit."""
        proc = self.procs[name]
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(15)

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGINT)
        for proc in self.procs.values():
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(15)


class Poller(threading.Thread):
    """What live_panel in app_pages/run.py reads per refresh, every 100 ms, on a run in progress."""

    def __init__(self, url: str, run_ids: list[str]) -> None:
        super().__init__(name="bench-scale-poller", daemon=True)
        self.url, self.run_ids = url, run_ids
        self.times: list[float] = []
        self.errors: list[str] = []
        self.halt = threading.Event()

    def run(self) -> None:
        from dashboard import views
        from research.core.progress import percent
        from storage import Store

        store = Store(self.url)
        i = 0
        try:
            while not self.halt.is_set():
                rid = self.run_ids[i % len(self.run_ids)]
                i += 1
                begin = time.perf_counter()
                try:
                    view = store.live_view(rid, events=views.EVENT_TAIL)  # dashboard/run_live.py
                    current = view.run
                    if current is None or current.status in TERMINAL:  # it polls live runs only
                        self.halt.wait(0.01)
                        continue
                    percent(current, view.steps)
                    views.typed_events(view.events)
                    self.times.append(time.perf_counter() - begin)
                except Exception as exc:  # noqa: BLE001 - counted and printed, not fatal
                    self.errors.append(str(exc)[:200])
                self.halt.wait(max(0.0, 0.1 - (time.perf_counter() - begin)))
        finally:
            store.close()


# -- the section -----------------------------------------------------------------------------

@dataclass
class Setup:
    """The stand-in's environment for workers (with keys) and the run configuration."""

    worker_env: dict[str, str]
    config: Any
    tmp: Path
    args: argparse.Namespace


def _setup(standin: Any, tmp: Path, args: argparse.Namespace) -> Setup:
    from research.core.config import build_config

    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("DEEP_RESEARCH_", "OPENAI_", "GEMINI_", "TAVILY_"))}
    env = {**base, **standin.env(), "DEEP_RESEARCH_SEARCH": "tavily",
           "DEEP_RESEARCH_SECRETS_FILE": str(tmp / "no-secrets.toml"), "PYTHONPATH": str(ROOT)}
    config = build_config(env=env, preset="quick", SUBTOPIC_COUNT=3, SOURCES_PER_SUBTOPIC=5,
                          REVIEW_CYCLES=1)
    return Setup(env, config, tmp, args)


def _connect(url: str) -> None:
    """Join this database's run queue to enqueue and watch (never to execute)."""
    from research import cli_jobs
    from research.core.config import WorkerSettings

    cli_jobs.connect(url, WorkerSettings.from_env({}))


def _disconnect() -> None:
    """Stop this process's DBOS instance before its database goes away."""
    from dbos import DBOS

    from research import durable

    DBOS.destroy()
    durable._launched_url = None  # noqa: SLF001 - the next launch must start a new instance


def _enqueue(store: Any, setup: Setup, count: int) -> dict[str, float]:
    """`count` new runs, each of its own person (so the per-person limit does not cap the
    workers); returns each run's enqueue time."""
    from research import durable
    from research.pipeline import create_run

    queued: dict[str, float] = {}
    for n in range(count):
        run_id = create_run(store, QUESTION.format(n=n + 1), setup.config)
        queued[run_id] = time.time()
        durable.enqueue(run_id, None, None, person=f"bench-person-{n}")
    return queued


def _wait_done(store: Any, run_ids: Iterable[str], timeout: float) -> dict[str, Run | None]:
    """The stored runs once every one has ended and no workflow of theirs is still queued or
    executing (the store records the end a moment before the workflow returns)."""
    from research import durable

    deadline = time.monotonic() + timeout
    while True:
        runs: dict[str, Run | None] = {rid: store.get_run(rid) for rid in run_ids}
        ended = all(r is not None and r.status in TERMINAL for r in runs.values())
        if (ended and not durable.active_runs() & runs.keys()) or time.monotonic() > deadline:
            return runs
        time.sleep(1.0)


def _workflows(url: str) -> dict[str, list[tuple[str, str]]]:
    """Per run: (status, executor id) of each of its DBOS workflows."""
    from dbos import DBOS

    from research import durable

    out: dict[str, list[tuple[str, str]]] = {}
    for status in DBOS.list_workflows(name=durable.WORKFLOW, load_input=False, load_output=False):
        out.setdefault(status.workflow_id.split(":", 1)[0], []).append(
            (str(status.status), str(status.executor_id)))
    return out


def _pass(server: Any, setup: Setup, workers_n: int, say: Say) -> dict[str, Any]:
    """One pass: a fresh database, `workers_n` workers, `--scale-runs` runs; the figures."""
    from storage import Store

    url = server.create_database()
    Store(url).close()
    _connect(url)
    cwd = setup.tmp / f"scale-{workers_n}"
    cwd.mkdir(exist_ok=True)
    workers = Workers({**setup.worker_env, "DEEP_RESEARCH_DB": url}, cwd,
                      setup.args.scale_concurrency)
    store = Store(url)
    try:
        workers.start(workers_n)
        queued = _enqueue(store, setup, setup.args.scale_runs)
        began = min(queued.values())
        poller = Poller(url, list(queued))
        poller.start()
        runs = _wait_done(store, queued, setup.args.scale_timeout)
        poller.halt.set()
        poller.join(10)
        flows = _workflows(url)
        twice = [k for rid in queued for k in steps_run_twice(store.get_events(rid))[1]]
    finally:
        workers.stop()
        store.close()
    done = [r for r in runs.values() if r is not None and r.status == "completed"]
    ends = [when(r.finished_at) for r in runs.values() if r is not None and r.finished_at]
    waits = [when(r.started_at) - queued[rid] for rid, r in runs.items()
             if r is not None and r.started_at]
    wall = (max(ends) - began) if ends else float("nan")
    lost = [rid for rid, r in runs.items() if r is None or r.status != "completed"
            or [s for s, _ in flows.get(rid, [])] != ["SUCCESS"]]
    figures: dict[str, Any] = {"workers": workers_n, "completed": len(done), "wall": wall,
               "per_min": len(done) / wall * 60 if ends else 0.0,
               "wait_p50": percentile(waits, 50), "wait_p95": percentile(waits, 95),
               "poll_p95": percentile(poller.times, 95), "polls": len(poller.times),
               "poll_errors": poller.errors, "lost": lost, "completed_twice": twice}
    say(f"  {workers_n} worker(s): {len(done)}/{len(queued)} completed in {wall:.0f} s = "
        f"{figures['per_min']:.1f} runs/min; queue wait p50 {figures['wait_p50']:.1f} s, "
        f"p95 {figures['wait_p95']:.1f} s; poll p95 {figures['poll_p95'] * 1000:.0f} ms "
        f"({len(poller.times)} polls, {len(poller.errors)} errors); not completed or not one "
        f"successful workflow: {lost or 'none'}; steps completed twice: {twice or 'none'}")
    return figures


def _kill_test(server: Any, setup: Setup, say: Say) -> dict[str, Any]:
    """Two workers, one run; SIGKILL the one executing it while a research unit is in flight; time until the other worker carries it on; steps run twice."""
    from research.workers import CARRY_ON_WITHIN_S
    from storage import Store

    url = server.create_database()
    Store(url).close()
    _connect(url)
    cwd = setup.tmp / "scale-kill"
    cwd.mkdir(exist_ok=True)
    workers = Workers({**setup.worker_env, "DEEP_RESEARCH_DB": url}, cwd,
                      setup.args.scale_concurrency)
    store = Store(url)
    try:
        workers.start(2)
        [run_id] = _enqueue(store, setup, 1)
        deadline = time.monotonic() + 300
        while not _research_in_flight(store.get_steps(run_id)):
            found = store.get_run(run_id)
            status = found.status if found else None
            if time.monotonic() > deadline or status in TERMINAL:
                raise RuntimeError(f"the run never was caught mid-research (it is {status})")
            time.sleep(0.1)
        [(_, executor)] = _workflows(url)[run_id]
        doomed = next(n for n, p in workers.procs.items() if f"-{p.pid}-" in executor)
        workers.kill(doomed)
        before = {s.key: s for s in store.get_steps(run_id)}  # as the dead worker left them
        in_flight = [k for k, s in before.items() if s.status in ("running", "retrying")]
        killed_at = time.monotonic()
        carried_s = float("nan")
        while time.monotonic() - killed_at < CARRY_ON_WITHIN_S * 2:
            [(status, now_executor)] = _workflows(url)[run_id]
            if now_executor != executor and status in ("PENDING", "SUCCESS"):
                carried_s = time.monotonic() - killed_at
                break
            time.sleep(0.2)
        run = _wait_done(store, [run_id], setup.args.scale_timeout)[run_id]
        started_twice, completed_twice = steps_run_twice(store.get_events(run_id))
        rerun, redone = steps_redone(before, store.get_steps(run_id))
    finally:
        workers.stop()
        store.close()
    say(f"  kill test: killed {doomed} mid-research ({len(in_flight)} step(s) in flight: "
        f"{', '.join(in_flight)}); carried on by the other worker after {carried_s:.1f} s "
        f"(limit {CARRY_ON_WITHIN_S:.0f} s); run {run.status if run else 'missing'}; steps run twice (started "
        f"again after the kill, from the steps table): {len(rerun)} ({', '.join(rerun) or 'none'}); "
        f"finished steps executed again: {redone or 'none'}; from the events: started twice at "
        f"the same attempt {started_twice or 'none'}, completed twice {completed_twice or 'none'}")
    return {"carried_s": carried_s, "status": run.status if run else None, "rerun": rerun,
            "completed_twice": completed_twice + redone, "in_flight": in_flight}


def _research_in_flight(steps: list[Step]) -> bool:
    """Mid-research: a research unit is executing (the run's units run side by side, so
    waiting for one to finish first could miss them all)."""
    return any(s.key.startswith("research:") and s.status == "running" for s in steps)


def bench_scale(args: argparse.Namespace, tmp: Path, row: Callable[..., Any], say: Say) -> list[Any]:
    """The section: passes with 1, 2, 4 workers, then the kill test; rows for the table."""
    from tests.pg_server import PostgresServer, PostgresUnavailable
    from tests.standin import StandinServer

    counts = [int(n) for n in args.scale_workers.split(",") if n.strip()]
    say(f"  {args.scale_runs} runs per pass at the quick preset (3 subtopics, 5 sources, 1 review), "
        f"workers {counts}, {args.scale_concurrency} runs at once per worker; stand-in latencies "
        f"model {args.latency_model:g} s, search {args.latency_search:g} s, page "
        f"{args.latency_page:g} s; a fresh PostgreSQL database per pass")
    try:
        server = PostgresServer().start()
    except (PostgresUnavailable, OSError) as exc:
        say(f"  scale section skipped: {exc}")
        return [row("scale", "skipped", str(exc)[:60])]
    standin = StandinServer().start()
    standin.set_latency(model=args.latency_model, search=args.latency_search,
                        page=args.latency_page)
    rows: list[Any] = []
    try:
        setup = _setup(standin, tmp, args)
        passes = [_pass(server, setup, n, say) for n in counts]
        kill = _kill_test(server, setup, say)
    finally:
        _disconnect()
        standin.stop()
        server.stop()
    base = passes[0]["per_min"] if passes else 0.0
    for p in passes:
        n = p["workers"]
        speedup = p["per_min"] / base if base else 0.0
        target = "3x of 1 worker" if n == 4 else ""
        rows.append(row("scale", f"{n} worker(s): runs/min (x of 1 worker)",
                        f"{p['per_min']:.1f} ({speedup:.2f}x)", target,
                        ("ok" if speedup >= 3 else "SLOW") if n == 4 else ""))
        rows.append(row("scale", f"{n} worker(s): queue wait p50 / p95; poll p95",
                        f"{p['wait_p50']:.1f} s / {p['wait_p95']:.1f} s; "
                        f"{p['poll_p95'] * 1000:.0f} ms", "poll p95 < 100 ms",
                        "ok" if p["poll_p95"] < 0.1 and not p["poll_errors"] else "SLOW"))
        rows.append(row("scale", f"{n} worker(s): runs completed, lost, completed twice",
                        f"{p['completed']}/{args.scale_runs}, {len(p['lost'])}, "
                        f"{len(p['completed_twice'])}", "none lost or twice",
                        "ok" if not p["lost"] and not p["completed_twice"] else "FAIL"))
    rows.append(row("scale", "kill: carried on after; steps run twice",
                    f"{kill['carried_s']:.1f} s; {len(kill['rerun'])} (in flight: "
                    f"{len(kill['in_flight'])})", "run completed, none completed twice",
                    "ok" if kill["status"] == "completed" and not kill["completed_twice"] else "FAIL"))
    return rows
