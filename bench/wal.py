"""How large the WAL grows while readers poll back to back and a run writes large events.

SQLite's automatic checkpoint copies the WAL into the database but can only start the WAL
over when no reader is using it; readers polling back to back (dashboards refreshing the Run
page) always are, so without the store's own bound the WAL grows with everything written.
`wal_peak` measures it; the `poll` section of bench/benchmark.py prints it for 2 and 8 readers,
and tests/test_storage_wal.py holds it under a bound.
"""

from __future__ import annotations

import multiprocessing as mp
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from storage import Store
from storage.wal import WAL_LIMIT_BYTES


@dataclass(frozen=True)
class WalPeak:
    readers: int
    written_mb: float      # event bytes written by the run
    peak_mb: float         # largest WAL file seen
    end_mb: float
    polls: int
    seconds: float


def poll_back_to_back(db: str, run_id: str, done: Any, polls: Any,
                      store_options: dict[str, Any]) -> None:
    """What the Run page's live panel reads, again and again until `done` is set."""
    from dashboard.views import EVENT_TAIL, typed_events

    store = Store(db, **store_options)
    while not done.is_set():
        typed_events(store.live_view(run_id, events=EVENT_TAIL).events)
        with polls.get_lock():
            polls.value += 1
    store.close()


def wal_peak(db: Path, *, readers: int, events: int = 200, event_kb: int = 256,
             processes: bool = False, **store_options: Any) -> WalPeak:
    """One run writes `events` events of `event_kb` KB while `readers` poll it back to back.

    Readers are threads of this process, or with `processes` separate processes (several
    dashboards, or a dashboard and a command-line run). The WAL's size is sampled after
    every write and by a watcher thread.
    """
    writer = Store(db, **store_options)
    run_id = writer.create_run("How large does the WAL grow?", {})
    wal = Path(f"{db}-wal")
    ctx = mp.get_context("spawn")
    done, polls = ctx.Event(), ctx.Value("i", 0)
    peak = [0]

    def watch() -> None:
        if wal.exists():
            peak[0] = max(peak[0], wal.stat().st_size)

    def watcher() -> None:
        while not done.is_set():
            watch()
            time.sleep(0.005)

    args = (str(db), run_id, done, polls, store_options)
    workers: list[Any] = [
        ctx.Process(target=poll_back_to_back, args=args, daemon=True) if processes
        else threading.Thread(target=poll_back_to_back, args=args, daemon=True)
        for _ in range(readers)
    ]
    for worker in workers:
        worker.start()
    threading.Thread(target=watcher, daemon=True).start()
    while polls.value < readers:  # every reader is polling before the run writes
        time.sleep(0.01)
    blob = "x" * (event_kb * 1024)
    started = time.perf_counter()
    for n in range(events):
        writer.append_event({"run_id": run_id, "type": "source_found", "step": "research:t1",
                             "message": f"event {n}", "data": {"text": blob, "n": n}})
        watch()
    seconds = time.perf_counter() - started
    done.set()
    for worker in workers:
        worker.join(timeout=30)
    writer.close()
    end = wal.stat().st_size if wal.exists() else 0
    return WalPeak(readers, events * event_kb / 1024, peak[0] / 2**20, end / 2**20,
                   int(polls.value), seconds)


def wal_figures(tmp: Path, say: Any, *, events: int = 400, event_kb: int = 256) -> list[tuple[str, str]]:
    """The `poll` section's WAL lines: peak with 2 and 8 readers, bounded and (for comparison)
    with the bound switched off, as it was before. Returns (measure, value) rows."""
    rows = []
    say(f"  WAL while a run writes {events} events of {event_kb} KB and readers (threads, as the "
        "dashboard's sessions are) poll back to back:")
    for readers in (2, 8):
        figures = []
        for label, limit in (("bounded", WAL_LIMIT_BYTES), ("unbounded", 2**62)):
            db = tmp / f"wal-{readers}-{label}.db"
            peak = wal_peak(db, readers=readers, events=events, event_kb=event_kb,
                            wal_limit_bytes=limit)
            figures.append(peak)
            say(f"    {readers} readers, {label:9}: WAL peak {peak.peak_mb:.1f} MiB, at the end "
                f"{peak.end_mb:.1f} MiB; {peak.polls} polls; writing took {peak.seconds:.1f} s")
        rows.append((f"WAL peak, {readers} readers (limit {WAL_LIMIT_BYTES / 2**20:.0f} MiB)",
                     f"{figures[0].peak_mb:.1f} MiB (unbounded {figures[1].peak_mb:.1f} MiB)"))
    return rows
