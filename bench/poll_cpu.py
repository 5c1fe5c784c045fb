"""CPU per call of the store's hot paths: the live panel's read (`Store.live_view`), a
heartbeat and a usage upsert, on one SQLite file (or, `--postgres`, a throw-away local
PostgreSQL server), one thread, nothing else running.

    .venv/bin/python -m bench.poll_cpu                          # this checkout's store
    .venv/bin/python -m bench.poll_cpu --against /tmp/old       # and another one's, interleaved

`--against DIR` loads the `storage` package in DIR (another checkout, or a `git archive` of
an older commit) under another name and measures it on the same file in the same process,
taking turns call kind by call kind, round by round, so both see the same machine load: the
machine is shared and noisy, so only medians of many rounds are worth comparing. Each round
times `--calls` calls with the thread's CPU clock (`time.thread_time`); a figure is the
median over `--rounds` rounds, per call.

The run read is a busy one, as the panel sees it mid-run: `--steps` steps with results,
`--events` events (the panel reads the last 200), a few usage rows, 20 sources per step.
`live_view` is a refresh after `--new-events` events were written (a running run);
`live_view_cold` a first refresh (a page just opened: no events known yet).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

EVENT_TAIL = 200  # dashboard.views.EVENT_TAIL, without importing the dashboard
_IMPORT = re.compile(r"\b(from|import) storage\b")


def load_other(folder: Path, name: str) -> Any:
    """The `storage` package in `folder`, importable as `name` (its own imports rewritten)."""
    target = Path(tempfile.mkdtemp(prefix="poll-cpu-")) / name
    shutil.copytree(folder / "storage", target)
    for path in target.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        path.write_text(_IMPORT.sub(rf"\1 {name}", text), encoding="utf-8")
    sys.path.insert(0, str(target.parent))
    return importlib.import_module(name)


def seed(store: Any, steps: int, events: int) -> str:
    """A run in the middle of its research, as the panel reads it."""
    from research.core.records import Finding, Source

    run_id: str = store.create_run("How do heat pumps behave in cold climates?",
                                   {"preset": "standard", "depth": 2, "breadth": 4})
    store.set_run_status(run_id, "running")
    for s in range(steps):
        key = f"research:t{s}"
        store.start_step(run_id, key, kind="research", label=f"Subtopic {s}")
        if s < steps - 2:
            sources = [Source(f"s{s}-{k}", f"https://example.org/{s}/{k}", title=f"Page {k}",
                              text="text " * 50) for k in range(20)]
            store.complete_research_step(
                run_id, key, sources=sources,
                findings=[Finding(None, f"claim {s}", (sources[0].id,))])
    for n in range(events):
        store.append_event({"run_id": run_id, "type": "source_found", "step": f"research:t{n % 6}",
                            "message": f"source found: a page about heat pumps number {n}",
                            "data": {"url": f"https://example.org/{n}", "n": n}})
    for role in ("lead", "worker", "writer"):
        store.add_usage(run_id, role, "openai", "gpt-5-mini", 3000, 700, 0.002)
    return run_id


CALLS = ("live_view", "live_view_cold", "heartbeat", "add_usage")


def calls(store: Any, run_id: str) -> dict[str, Callable[[], object]]:
    def cold() -> object:
        # Inside a write the store keeps no tail: a first refresh. (A store older than
        # `transaction` kept none anyway.)
        with getattr(store, "transaction", contextlib.nullcontext)():
            return store.live_view(run_id, events=EVENT_TAIL)

    return {
        "live_view": lambda: store.live_view(run_id, events=EVENT_TAIL),
        "live_view_cold": cold,
        "heartbeat": lambda: store.heartbeat(run_id, "pid:1@bench"),
        "add_usage": lambda: store.add_usage(run_id, "worker", "openai", "gpt-5-mini",
                                             3000, 700, 0.002),
    }


def appender(store: Any, run_id: str, k: int) -> Callable[[], None]:
    """Appends `k` events, as a run writes them between two refreshes (not timed)."""
    def append() -> None:
        for _ in range(k):
            store.append_event({"run_id": run_id, "type": "source_found", "step": "research:t1",
                                "message": "source found: one more page about heat pumps",
                                "data": {"url": "https://example.org/more", "n": 1}})
    return append


def cpu_per_call(fn: Callable[[], object], n: int) -> float:
    start = time.thread_time()
    for _ in range(n):
        fn()
    return (time.thread_time() - start) / n


def measure(stores: dict[str, Any], run_id: str, rounds: int, n: int, new_events: int,
            ) -> dict[tuple[str, str], list[float]]:
    """{(store, call): [CPU seconds per call, one per round]}, the stores taking turns.
    `live_view` is timed call by call, each after `new_events` events were appended."""
    kinds = {label: calls(store, run_id) for label, store in stores.items()}
    append = appender(next(iter(stores.values())), run_id, new_events)
    times: dict[tuple[str, str], list[float]] = {}
    for by_call in kinds.values():  # warm-up: compile and cache every statement
        for fn in by_call.values():
            cpu_per_call(fn, 20)
    for r in range(rounds):
        order = list(kinds) if r % 2 == 0 else list(reversed(kinds))
        spent = dict.fromkeys(order, 0.0)
        for _ in range(max(1, n // 10)):
            append()
            for label in order:
                start = time.thread_time()
                kinds[label]["live_view"]()
                spent[label] += time.thread_time() - start
        for label in order:
            times.setdefault((label, "live_view"), []).append(spent[label] / max(1, n // 10))
        for call in CALLS[1:]:
            for label in order:
                per_round = n // 10 if call.startswith("live_view") else n
                times.setdefault((label, call), []).append(
                    cpu_per_call(kinds[label][call], max(1, per_round)))
    return times


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, action="append", default=[],
                        help="a folder holding another `storage` package to compare with")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--calls", type=int, default=500,
                        help="calls timed per round (a tenth of them for live_view)")
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument("--events", type=int, default=600)
    parser.add_argument("--postgres", action="store_true",
                        help="on a throw-away local PostgreSQL server instead of a SQLite file")
    parser.add_argument("--new-events", type=int, default=2,
                        help="events appended before each timed live_view (default 2: a run "
                             "writing 20 a second, polled every 100 ms)")
    args = parser.parse_args(argv)

    from storage import Store

    tmp = Path(tempfile.mkdtemp(prefix="poll-cpu-db-"))
    server = None
    db: Path | str = tmp / "cpu.db"
    if args.postgres:  # the tests' throw-away server (tests/pg_server.py), flushing no commit
        from tests.pg_server import PostgresServer

        server = PostgresServer().start()
        db = server.create_database()
    stores: dict[str, Any] = {"this": Store(db)}
    run_id = seed(stores["this"], args.steps, args.events)
    for i, folder in enumerate(args.against):
        other = load_other(folder, f"storage_against{i}")
        stores[str(folder)] = other.Store(db)
    times = measure(stores, run_id, args.rounds, args.calls, args.new_events)
    print(f"CPU per call, median of {args.rounds} rounds (min in brackets); {args.steps} steps, "
          f"{args.events} events; live_view: {args.new_events} new events before each, "
          "live_view_cold: a first refresh (read inside a transaction)")
    for call in CALLS:
        figures = ", ".join(
            f"{label}: {statistics.median(times[label, call]) * 1e3:.4f} ms "
            f"({min(times[label, call]) * 1e3:.4f})" for label in stores)
        print(f"  {call:14} {figures}")
    for store in stores.values():
        store.close()
    if server is not None:
        server.stop()
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
