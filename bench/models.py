"""Benchmark section "models": one default research run per stand-in model behaviour.

    .venv/bin/python -m bench.benchmark --only models

The stand-in (tests/standin/brain_behaviours.py) answers like common real models: other citation
styles, <think> blocks, fences, extra keys, fewer or more items, a cut-off or refused report,
loose quotes. Per behaviour this prints whether the run completed, how many claims verification
found, the share of them cited, the share verified as supported, how many were removed or left
unchecked, and every disagreement between the report (header, Sources, body) and the run status.
Then the real-outputs sweep (issue 32; skipped when ../shared/real-outputs is absent): complete
runs in which each text real research systems wrote, and mutations of them, is in turn the
answer of every free-text writer role (tests/real_outputs.py): runs, completed, completed with
warnings, unexpected errors (target 0), reports citing at least three sources.
Figures only: nothing here passes or fails.
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bench.benchmark import Row

COLUMNS = ("behaviour", "completed", "claims", "cited", "supported", "removed", "unchecked",
           "secs", "disagreements")


def bench_models(args: argparse.Namespace, tmp: Path) -> list[Row]:
    from tests.standin import StandinServer
    from tests.standin.brain_behaviours import BEHAVIOURS

    server = StandinServer().start()
    table: list[dict[str, str]] = []
    try:
        for behaviour in BEHAVIOURS:
            server.reset()
            server.set_behaviour(behaviour)
            started = time.perf_counter()
            figures = one_run(server.env(), tmp / f"models-{behaviour}.db")
            figures["secs"] = f"{time.perf_counter() - started:.0f}"
            table.append({"behaviour": behaviour, **figures})
    finally:
        server.stop()
    print_models(table)
    return [*behaviour_rows(table), *bench_real_outputs(tmp)]


def behaviour_rows(table: list[dict[str, str]]) -> list[Row]:
    from bench.benchmark import Row

    return [Row("models", r["behaviour"],
                f"{r['completed']}; {r['claims']} claims, {r['cited']} cited, {r['supported']} "
                f"supported, {r['removed']} removed, {r['unchecked']} unchecked",
                "agree", "ok" if r["disagreements"] == "none" else "DISAGREE") for r in table]


def one_run(env: dict[str, str], db: Path) -> dict[str, str]:
    """One run with default settings; its figures as text."""
    from research import Credentials, build_config, run_research
    from storage import Store

    store = Store(db)
    config = build_config(env=env, fetch_timeout_s=3)
    try:
        run_id = run_research("How is heat pump adoption changing in Europe?", store=store,
                              config=config, credentials=Credentials.from_env(env))
    except Exception as exc:  # noqa: BLE001 - a crash is a figure here, not the end of the table
        return {"completed": f"crashed ({type(exc).__name__})", "claims": "-", "cited": "-",
                "supported": "-", "removed": "-", "unchecked": "-", "disagreements": "crash"}
    return figures_of(store, run_id)


def figures_of(store: Any, run_id: str) -> dict[str, str]:
    from research.export.run_document import build_document_for_run
    from research.phases import verify

    run = store.get_run(run_id)
    status = str(run.status if run else None)
    report = store.get_report(run_id)
    if report is None:
        error = " ".join(str(run.error if run else "").split())[:70]
        return {"completed": f"{status}: {error}", "claims": "-", "cited": "-", "supported": "-",
                "removed": "-", "unchecked": "-", "disagreements": disagreements(store, run_id, None)}
    summary = verify.summary(store, run_id)
    checks = report.meta.get("checks") or {}
    doc = build_document_for_run(store, run_id)
    return {
        "completed": status, "claims": str(summary.claims),
        "cited": f"{checks.get('cited_share', 0):.0%}",
        "supported": f"{summary.share_supported:.0%}",
        "removed": str(summary.unsupported_removed), "unchecked": str(summary.unchecked),
        "disagreements": disagreements(store, run_id, doc),
    }


def disagreements(store: Any, run_id: str, doc: Any) -> str:
    """Where the report and the run status tell different stories ("none" when they agree)."""
    from research.phases import verify

    run = store.get_run(run_id)
    status = str(run.status if run else None)
    warned = any(e.type == "warning" for e in store.get_events(run_id))
    found: list[str] = []
    if doc is None:
        if status == "completed":
            found.append("completed without a report")
        elif re.search(r"traceback|broader question", str((run.error if run else None) or ""), re.IGNORECASE):
            found.append("failure message blames the question or shows a traceback")
        return "; ".join(found) or "none"
    summary = verify.summary(store, run_id)
    cited = sorted({int(n) for n in re.findall(r"\[(\d+)\]", doc.body)})
    if cited != list(range(1, len(doc.sources) + 1)):
        found.append(f"body cites {len(cited)} numbers, Sources lists {len(doc.sources)}")
    if not doc.sources:
        found.append("no sources listed")
    if " ".join(summary.line.split()) != doc.verification:
        found.append("header and Verification tab differ")
    if re.search(r"\]\(https?://", doc.body):
        found.append("live links left in the body")
    plain_success = status == "completed" and not warned
    if plain_success and (summary.incomplete or summary.supported == 0 or not cited):
        found.append("plain success, but nothing verified / verification incomplete")
    return "; ".join(found) or "none"


def print_models(table: list[dict[str, str]]) -> None:
    from bench.benchmark import say

    widths = {c: max(len(c), *(len(r.get(c, "")) for r in table)) for c in COLUMNS}
    say("  ".join(c.ljust(widths[c]) for c in COLUMNS))
    for row in table:
        say("  ".join(row.get(c, "").ljust(widths[c]) for c in COLUMNS).rstrip())


def bench_real_outputs(tmp: Path) -> list[Row]:
    """The real-outputs sweep's figures (no rows when the folder is absent)."""
    from bench.benchmark import Row, say
    from tests import real_outputs
    from tests.runs import Runner
    from tests.standin import StandinServer
    from tests.store_files import migrated_copy

    if not real_outputs.available():
        say("real-outputs sweep: skipped (../shared/real-outputs is not here)")
        return []
    server = StandinServer().start()
    runner = Runner(server, server.env(), migrated_copy(tmp / "real-outputs.db"), fakes=True)
    started, cpu = time.perf_counter(), time.process_time()
    try:
        runs = list(real_outputs.sweep(server, runner, real_outputs.texts()))
    finally:
        runner.close()
        server.stop()
    completed = [f for f in runs if f.status == "completed"]
    figures = {
        "runs": len(runs), "completed": len(completed),
        "with warnings": sum(1 for f in completed if f.warnings),
        "unexpected errors": sum(1 for f in runs if f.unexpected),
        "unresolved citations": sum(len(f.unresolved) for f in runs),
        ">=3 cited sources": sum(1 for f in runs if f.cited_sources >= 3),
    }
    say("real-outputs sweep: " + ", ".join(f"{k} {v}" for k, v in figures.items())
        + f" ({time.perf_counter() - started:.0f} s, {time.process_time() - cpu:.0f} CPU-s)")
    for f in runs:
        if f.unexpected or f.status != "completed":
            say(f"  run {f.run_id}: {f.status}: {' '.join(f.error.split())[:160]}")
    return [Row("models", "real-outputs sweep",
                ", ".join(f"{k} {v}" for k, v in figures.items()),
                "0 unexpected errors",
                "ok" if not figures["unexpected errors"] else "UNEXPECTED")]
