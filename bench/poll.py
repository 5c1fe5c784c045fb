"""The `poll` section: the Run page's live panel read by dashboards while runs write at a heavy rate.

`args.writers` simulated runs (processes, or threads with `--writer-mode thread`) write events,
usage, heartbeats and research steps; pollers (one per dashboard, each in its own process or
thread, as the writers) read exactly what the live panel reads on each refresh. On SQLite one
poller (`--pollers`), as for one person; then (`bench/wal.py`) the WAL's bound; then, on a
throw-away PostgreSQL server (`bench/poll_pg.py`), the team's case: `--pg-pollers` dashboards
(default 4) polling while the same writers write.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.benchmark import DB_ERRORS, QUESTION, Lorem, Row, _source, pct, real_main, say, secs
from research.core.records import Finding, Query, SkippedPage


@dataclass(frozen=True)
class WriteRates:
    event_s: float      # one event every ... seconds
    usage_s: float      # one model call's usage every ... seconds
    heartbeat_s: float  # one heartbeat every ... seconds
    step_s: float       # one research step (start + complete with sources) every ... seconds
    step_sources: int
    text_chars: int


def _writer(db_path: str, run_id: str, index: int, seconds: float, rates: WriteRates,
            ready: Any, go: Any, out: Any) -> None:
    """One simulated run in its own process: what the engine writes, at `rates`."""
    from storage import Store

    store = Store(db_path)
    lorem = Lorem(seed=index)
    done = {"events": 0, "sources": 0, "usage_calls": 0, "heartbeats": 0, "steps": 0}
    latencies: list[float] = []
    locked = 0
    errors: list[str] = []

    def write(method: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[bool, Any]:
        """(committed?, result) of one Store write; a lock error is counted, not raised."""
        nonlocal locked
        start = time.perf_counter()
        try:
            return True, method(*args, **kwargs)
        except DB_ERRORS as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                locked += 1
            else:
                errors.append(str(exc)[:200])
            return False, None
        finally:
            latencies.append(time.perf_counter() - start)

    ready.put(("writer", index))
    go.wait()
    write(store.set_run_status, run_id, "running")
    now = time.monotonic()
    deadline = now + seconds
    due = {"event": now, "usage": now + 0.05, "beat": now, "step": now + rates.step_s}
    step_n = 0
    while (now := time.monotonic()) < deadline:
        if now >= due["event"]:
            n = done["events"]
            ok, _ = write(store.append_event, {
                "run_id": run_id, "type": "source_found", "step": f"research:t{n % 6}",
                "message": f"source found: {lorem.sentence(10)}",
                "data": {"url": f"https://w{index}.example.org/{n}", "n": n}})
            done["events"] += ok
            due["event"] += rates.event_s
        if now >= due["usage"]:
            ok, _ = write(store.add_usage, run_id, "worker", "openai", "gpt-5-mini", 3000, 700, 0.002)
            done["usage_calls"] += ok
            due["usage"] += rates.usage_s
        if now >= due["beat"]:
            ok, _ = write(store.heartbeat, run_id, f"bench-writer-{index}")
            done["heartbeats"] += ok
            due["beat"] += rates.heartbeat_s
        if now >= due["step"]:
            key = f"research:t{step_n % 6 + 1}:{step_n}"
            base = step_n * rates.step_sources
            batch = [replace(_source(base + k, f"t{step_n % 6 + 1}", lorem, rates.text_chars),
                             id=f"w{index}-{base + k}",
                             url=f"https://w{index}.example.org/a/{base + k}",
                             canonical_url=f"https://w{index}.example.org/a/{base + k}")
                     for k in range(rates.step_sources)]
            write(store.start_step, run_id, key, kind="research", label=key)
            ok, inserted = write(
                store.complete_research_step, run_id, key, sources=batch,
                findings=[Finding(None, lorem.sentence(15), tuple(s.id for s in batch[:3]))
                          for _ in range(8)],
                queries=[Query(None, lorem.sentence(6), "tavily", 10) for _ in range(5)],
                skipped=[SkippedPage(None, f"https://skip.example.org/{index}/{step_n}/{i}", "low")
                         for i in range(10)])
            if ok:
                done["sources"] += len(inserted)
                done["steps"] += 1
            step_n += 1
            due["step"] += rates.step_s
        time.sleep(max(0.0, min(due.values()) - time.monotonic()))
    write(store.set_run_status, run_id, "completed")
    store.close()
    out.put({"kind": "writer", "index": index, "run_id": run_id, "done": done,
             "latencies": latencies, "locked": locked, "errors": errors})


def _poller(db_target: str, run_ids: list[str], index: int, poll_ms: int,
            ready: Any, go: Any, stop: Any, out: Any) -> None:
    """One dashboard's live panel: exactly what `panel` in dashboard/run_live.py reads per
    refresh (`Store.live_view`), every `poll_ms`, on the runs in turn, until `stop` is set."""
    from dashboard import views
    from research.core.progress import percent
    from storage import Store

    store = Store(db_target)
    times: list[float] = []
    cpu: list[float] = []  # this thread's CPU time per poll: wall >> CPU means it waited
    frames: list[float] = []
    locked = 0
    errors: list[str] = []
    ready.put(("poller", index))
    go.wait()
    i = index
    while not stop.is_set():
        rid = run_ids[i % len(run_ids)]
        i += 1
        begin = time.perf_counter()
        begin_cpu = time.thread_time()
        try:
            view = store.live_view(rid, events=views.EVENT_TAIL)
            if view.run is not None:
                percent(view.run, view.steps)
            events = views.typed_events(view.events)
            times.append(time.perf_counter() - begin)
            cpu.append(time.thread_time() - begin_cpu)
            begin_frames = time.perf_counter()
            views.steps_frame(view.steps)
            views.events_frame(events)
            frames.append(time.perf_counter() - begin_frames)
        except DB_ERRORS as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                locked += 1
            else:
                errors.append(str(exc)[:200])
        time.sleep(max(0.0, poll_ms / 1000 - (time.perf_counter() - begin)))
    store.close()
    out.put({"kind": "poller", "index": index, "times": times, "cpu": cpu, "frames": frames,
             "locked": locked, "errors": errors})


def bench_poll(args: argparse.Namespace, tmp: Path) -> list[Row]:
    """The live panel under write load on SQLite (with the WAL's bound), then on PostgreSQL."""
    from bench.poll_pg import postgres_poll
    from bench.wal import wal_figures  # the WAL's bound under readers polling back to back

    rows = poll_database(args, tmp, str(tmp / "poll.db"), "", args.pollers)
    rows += [Row("poll", measure, value) for measure, value in wal_figures(tmp, say)]
    return rows + postgres_poll(args, tmp, poll_database, say)


def _start(args: argparse.Namespace, db_target: str, run_ids: list[str], rates: WriteRates,
           pollers: int) -> tuple[list[Any], Any, Any, Any]:
    """The writers and pollers, started and ready: (all of them, go, stop, out queue)."""
    procs: list[Any]
    if args.writer_mode == "process":
        ctx = mp.get_context("spawn")  # a fresh interpreter each: no inherited connections
        ready, out, go, stop = ctx.Queue(), ctx.Queue(), ctx.Event(), ctx.Event()
        make: Callable[..., Any] = ctx.Process
    else:  # like the dashboard: the job manager's threads share the process (and GIL) with the UI
        ready, out, go, stop = queue.Queue(), queue.Queue(), threading.Event(), threading.Event()
        make = threading.Thread
    procs = [make(target=_writer, args=(db_target, rid, i, args.seconds, rates, ready, go, out),
                  name=f"bench-writer-{i}", daemon=True) for i, rid in enumerate(run_ids)]
    procs += [make(target=_poller, args=(db_target, run_ids, i, args.poll_ms, ready, go, stop, out),
                   name=f"bench-poller-{i}", daemon=True) for i in range(pollers)]
    with real_main():
        for proc in procs:
            proc.start()
    for _ in procs:
        ready.get(timeout=180)
    return procs, go, stop, out


def poll_database(args: argparse.Namespace, tmp: Path, db_target: str, label: str,
                  pollers: int) -> list[Row]:
    """`args.writers` writers and `pollers` pollers on the database `db_target` (a SQLite
    file or a PostgreSQL URL); `label` prefixes the measures ("" for SQLite, as before)."""
    from research.core.config import build_config
    from storage import Store

    sqlite = not db_target.startswith("postgresql")
    db = Path(db_target) if sqlite else tmp / "no-such-file"
    wal = Path(str(db) + "-wal")
    store = Store(db_target)
    config = build_config(env={}).model_dump(mode="json")
    run_ids = [store.create_run(f"Concurrent run {i}: {QUESTION}", config) for i in range(args.writers)]
    rates = WriteRates(event_s=1 / args.event_rate, usage_s=1 / args.usage_rate, heartbeat_s=1.0,
                       step_s=args.step_every, step_sources=args.step_sources,
                       text_chars=args.text_chars)
    kind = args.writer_mode.replace("ss", "sse")
    say(f"  {args.writers} writer {kind}s for {args.seconds:.0f} s, each: {args.event_rate:g} events/s, "
        f"{args.usage_rate:g} usage rows/s, 1 heartbeat/s, a research step with {rates.step_sources} "
        f"sources ({rates.text_chars} chars) every {rates.step_s:g} s; {pollers} poller {kind}"
        f"{'s' if pollers != 1 else ''} (dashboards), each every {args.poll_ms} ms")

    procs, go, stop, out = _start(args, db_target, run_ids, rates, pollers)
    writers: list[dict[str, Any]] = []
    polled: list[dict[str, Any]] = []
    wal_peak = 0
    go.set()
    started = time.monotonic()
    while len(writers) < args.writers and time.monotonic() - started < args.seconds + 120:
        if wal.exists():
            wal_peak = max(wal_peak, wal.stat().st_size)
        try:
            result = out.get(timeout=0.05)
        except queue.Empty:
            continue
        (writers if result["kind"] == "writer" else polled).append(result)
    stop.set()
    while len(polled) < pollers and time.monotonic() - started < args.seconds + 180:
        try:
            result = out.get(timeout=1)
        except queue.Empty:
            continue
        (writers if result["kind"] == "writer" else polled).append(result)
    for proc in procs:
        proc.join(timeout=30)
    wal_end = wal.stat().st_size if wal.exists() else 0
    figures = _figures(store, writers, polled, args)
    store.close()
    _report(figures, args, pollers)
    if sqlite:
        say(f"  WAL: peak {wal_peak / 1e6:.1f} MB, at the end {wal_end / 1e6:.1f} MB; database "
            f"{db.stat().st_size / 1e6:.1f} MB")
    rows = _rows(figures, label, sqlite, pollers)
    if sqlite:
        rows.append(Row("poll", "WAL peak / end", f"{wal_peak / 1e6:.1f} MB / {wal_end / 1e6:.1f} MB"))
    return rows


def _figures(store: Any, writers: list[dict[str, Any]], polled: list[dict[str, Any]],
             args: argparse.Namespace) -> dict[str, Any]:
    """What the writers and pollers reported, and the rows the store holds for each run."""
    lost: list[str] = []
    totals = {"events": 0, "sources": 0, "usage_calls": 0}
    for result in writers:
        rid, done = result["run_id"], result["done"]
        activity = store.latest_activity(rid)
        stored = {"events": activity.events if activity else 0,
                  "sources": store.count_sources(rid),
                  "usage_calls": store.usage_totals(rid).calls}
        for name, count in stored.items():
            totals[name] += count
            if count != done[name]:
                lost.append(f"{rid} {name}: committed {done[name]}, stored {count}")
    return {
        "writers": len(writers), "writers_started": args.writers, "polled": len(polled),
        "poll_times": [x for p in polled for x in p["times"]],
        "poll_cpu": [x for p in polled for x in p["cpu"]],
        "frame_times": [x for p in polled for x in p["frames"]],
        "poll_locked": sum(p["locked"] for p in polled),
        "poll_errors": [e for p in polled for e in p["errors"]],
        "writer_latencies": [x for r in writers for x in r["latencies"]],
        "writer_locked": sum(r["locked"] for r in writers),
        "writer_errors": [e for r in writers for e in r["errors"]],
        "lost": lost, "totals": totals,
        "expected": {name: sum(r["done"][name] for r in writers) for name in totals},
        "scheduled_events": int(args.writers * args.seconds * args.event_rate),
    }


def _report(f: dict[str, Any], args: argparse.Namespace, pollers: int) -> None:
    times, cpu = f["poll_times"], f["poll_cpu"]
    say(f"  writers finished: {f['writers']} of {args.writers}; pollers finished: {f['polled']} "
        f"of {pollers}; polls: {len(times)}")
    say("  poll (Store.live_view: run, steps, activity, usage totals, last 200 events): "
        + (f"p50 {secs(pct(times, 50))}, p95 {secs(pct(times, 95))}, max {secs(max(times))}"
           if times else "no successful poll"))
    if cpu:
        say(f"  CPU per poll in the poller: p50 {_ms(pct(cpu, 50))}, p95 {_ms(pct(cpu, 95))}")
    if times:
        worst = max(range(len(times)), key=times.__getitem__)
        say(f"  slowest poll: {secs(times[worst])} wall, {secs(cpu[worst])} CPU in the poller "
            f"(the rest is waiting: for one of {os.cpu_count()} CPUs, the GIL in thread mode, "
            "or I/O)")
    if f["frame_times"]:
        say(f"  + building the steps and events tables: p50 {secs(pct(f['frame_times'], 50))}, "
            f"p95 {secs(pct(f['frame_times'], 95))}")
    lat = f["writer_latencies"]
    if lat:
        say(f"  writer transactions: {len(lat)}, p50 {secs(pct(lat, 50))}, "
            f"p95 {secs(pct(lat, 95))}, max {secs(max(lat))}")
    say(f"  'database is locked': poller {f['poll_locked']}, writers {f['writer_locked']}; other "
        f"errors: {f['poll_errors'] + f['writer_errors'] or 'none'}")
    expected, totals = f["expected"], f["totals"]
    say(f"  rows committed vs stored: events {expected['events']}/{totals['events']} "
        f"(schedule {f['scheduled_events']}), sources {expected['sources']}/{totals['sources']}, "
        f"usage calls {expected['usage_calls']}/{totals['usage_calls']}; mismatches: "
        f"{f['lost'] or 'none'}")


def _ms(value: float) -> str:
    """A CPU time per poll, to the hundredth of a millisecond (`secs` rounds to whole ones)."""
    return f"{value * 1000:.2f} ms"


def _rows(f: dict[str, Any], label: str, sqlite: bool, pollers: int) -> list[Row]:
    rows: list[Row] = []
    times, lat = f["poll_times"], f["writer_latencies"]
    if times:
        p95 = pct(times, 95)
        rows.append(Row("poll", f"{label}poll p50 / p95 / max ({pollers} pollers, "
                                f"{len(times)} polls)",
                        f"{secs(pct(times, 50))} / {secs(p95)} / {secs(max(times))}",
                        "" if sqlite else "p95 < 100 ms",
                        "" if sqlite else ("ok" if p95 < 0.1 else "SLOW")))
    if f["poll_cpu"]:
        rows.append(Row("poll", f"{label}poll CPU p50 / p95",
                        f"{_ms(pct(f['poll_cpu'], 50))} / {_ms(pct(f['poll_cpu'], 95))}"))
    if lat:
        rows.append(Row("poll", f"{label}writer txn p50 / p95 / max",
                        f"{secs(pct(lat, 50))} / {secs(pct(lat, 95))} / {secs(max(lat))}"))
    locked = f["poll_locked"] + f["writer_locked"]
    errors = locked + len(f["poll_errors"]) + len(f["writer_errors"])
    shown = locked if sqlite else errors
    rows.append(Row("poll", "'database is locked' errors" if sqlite else f"{label}errors",
                    str(shown), "0", "ok" if shown == 0 else "FAIL"))
    totals = f["totals"]
    complete = not f["lost"] and f["writers"] == f["writers_started"]
    rows.append(Row("poll", f"{label}rows committed = stored",
                    f"ev {totals['events']}, src {totals['sources']}, usage {totals['usage_calls']}",
                    "no loss", "ok" if complete else "FAIL"))
    return rows
