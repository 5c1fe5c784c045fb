"""How fast the dashboard and the engine are with a lot of data. Prints figures, asserts nothing.

    .venv/bin/python -m bench.benchmark                      # every section, default sizes
    .venv/bin/python -m bench.benchmark --only run,library   # some sections
    .venv/bin/python -m bench.benchmark --help               # sizes and rates

Sections (issue 3 point 9; the engine run of issue 2 point 12):
  run      The Run page (Streamlit AppTest) of a finished run with 1,000 sources and 5,000 events:
           each tab, first render and warm reruns, plus the same data work without Streamlit.
           Target: under 0.5 s.
  library  The Library page (AppTest) with 10,000 runs: first render, reruns, a search, the last
           page, a status filter, a comparison. Target: under 1 s.
  poll     The Run page's live-panel queries every 100 ms while 8 processes write runs at a heavy
           rate: poll time, "database is locked" errors (must be 0), rows committed vs stored,
           WAL size; then the WAL's peak with 2 and 8 readers polling back to back while a run
           writes large events (bench/wal.py); then the same writers while 4 dashboards poll
           a local PostgreSQL server (bench/poll_pg.py): p50/p95, errors, rows. Target: p95 <
           100 ms. The section's code is bench/poll.py.
  engine   One full research run at default constants against the local stand-in server,
           through the real SDKs, in a child process: wall time, sources, model calls, peak RSS.
  latency  The same run with fixed stand-in latencies (model 1.0 s, search 0.5 s, page 0.3 s),
           then with generation time too (80 tokens/s, 1,500-word writer answers; bench/latency.py):
           wall time against the critical-path lower bound worked out from the run's own record
           (see bench/README.md), per phase with prompt tokens and pages; model calls on the
           path; tokens per page read; sources per second; peak memory. Targets: ratio at most
           1.15; with generation time, wall at most 60 s and 2,000 prompt tokens per page read.
  docs     200 generated documents (PDF, DOCX, Markdown; 2,000 pages) ingested, then passage
           searches over them (bench/docs.py). Targets: 20 pages/s or more; search p95 < 50 ms.
  scale    Queued runs on PostgreSQL executed by 1, 2, then 4 `python -m research worker`
           processes against the stand-in at fixed latencies: runs/min, queue wait p50/p95, the
           live panel's poll p95 under that load; then a worker killed mid-run: time until
           another carried the run on, steps run twice (bench/scale.py). Targets: 4 workers at
           least 3x the runs/min of one; no run lost, none completed twice.
  limits   A standard and a quick run on each account people really have (bench/limits.py):
           OpenAI tier 1 for gpt-4.1 (500 RPM, 30,000 TPM), a free tier of 10 requests a minute,
           a local Ollama server (one answer at a time, 30 tokens/s, 8,192-token window), with
           arXiv and Semantic Scholar paced as documented: wall time against the floor the
           limits imply, rate-limit answers, failed model calls, waiting lines shown. Targets:
           every run completes, nothing failed, wall at most 1.3x the floor, no more waiting
           lines than minutes. Each run is capped (--limits-timeout, default 30 min).

Everything lives in a temporary directory; nothing touches data/ and nothing leaves 127.0.0.1.
The exit status is 0 whatever the figures are (1 only if a section crashed).
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import os
import platform
import random
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from research.core.records import Source, Subtopic

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python bench/benchmark.py` as well as `python -m bench.benchmark`
    sys.path.insert(0, str(ROOT))

# Streamlit's script runner installs the app as sys.modules["__main__"] and leaves it there;
# spawned children must start from this benchmark instead (see `real_main`).
_REAL_MAIN = sys.modules.get("__main__")
APP = str(ROOT / "app.py")
SECTIONS = ("run", "library", "poll", "engine", "latency", "models", "docs", "scale", "limits",
            "estimates")
LONG_SECTIONS = ("scale", "limits", "estimates")  # left out unless asked for by name


def _db_errors() -> tuple[type[BaseException], ...]:
    """What a store write can raise for the database's sake: sqlite3's own errors, and
    SQLAlchemy's wrapping of either driver's (SQLite or PostgreSQL)."""
    from sqlalchemy.exc import DBAPIError

    return (sqlite3.OperationalError, DBAPIError)


DB_ERRORS = _db_errors()
# Provider settings a developer may have exported: the dashboard sections must not see them.
KEY_VARS = ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL", "TAVILY_API_KEY",
            "SEMANTIC_SCHOLAR_API_KEY", "OPENAI_BASE_URL", "GEMINI_BASE_URL", "TAVILY_BASE_URL",
            "DEEP_RESEARCH_PROVIDER", "DEEP_RESEARCH_MODEL", "DEEP_RESEARCH_SEARCH")
QUESTION = "How are heat pumps, solar and storage changing Europe's household energy use?"
WORDS = ("energy grid storage battery heat pump solar panel household demand tariff subsidy "
         "capacity installation efficiency emissions winter peak market policy retrofit "
         "insulation price cost survey adoption region country growth decline forecast "
         "utility network load flexibility consumer report study data trend").split()


# -- figures --------------------------------------------------------------------------------

@dataclass
class Row:
    section: str
    measure: str
    value: str
    target: str = ""
    verdict: str = ""


def pct(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty sequence."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def secs(value: float) -> str:
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def spread(values: Sequence[float]) -> str:
    if not values:
        return "—"
    return f"median {secs(statistics.median(values))}, p95 {secs(pct(values, 95))}"


def verdict(value: float, limit: float) -> str:
    return "ok" if value < limit else "OVER"


def load() -> str:
    try:
        return "load average {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())
    except OSError:
        return "load average unknown"


def say(text: str) -> None:
    print(text, flush=True)


def timed(fn: Callable[[], Any], repeat: int = 5) -> list[float]:
    """`repeat` timings after one untimed call (lazy imports, plotly validators, page cache)."""
    fn()
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def file_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*")) / 1e6


# -- seeding --------------------------------------------------------------------------------

class Lorem:
    """Deterministic filler text, cut from one long pseudo-random passage (fast to slice)."""

    def __init__(self, seed: int = 7) -> None:
        rnd = random.Random(seed)
        self.text = " ".join(rnd.choice(WORDS) for _ in range(40_000)) + ". "
        self.rnd = rnd

    def chars(self, n: int) -> str:
        start = self.rnd.randrange(0, len(self.text) - n - 1) if n < len(self.text) - 1 else 0
        return self.text[start:start + n]

    def sentence(self, words: int = 14) -> str:
        return " ".join(self.rnd.choice(WORDS) for _ in range(words)).capitalize()


def _source(n: int, subtopic: str, lorem: Lorem, text_chars: int) -> Source:
    from research.core.records import Source
    url = f"https://site{n % 97}.example.org/{2015 + n % 11}/article-{n}"
    year, month = 2015 + n % 11, 1 + n % 12
    return Source(
        id=f"s{n:05d}", url=url, canonical_url=url,
        title=f"{lorem.sentence(8)} ({n})", snippet=lorem.chars(300),
        text=lorem.chars(text_chars),
        published=None if n % 9 == 0 else f"{year}-{month:02d}-{1 + n % 28:02d}",
        relevance=round(0.6 + (n * 37 % 41) / 100, 2),
        relevance_reason="on topic", subtopic_id=subtopic,
        provider=("tavily", "arxiv", "semanticscholar")[n % 3], query=lorem.sentence(5),
        round=1 + n % 2, fetched_at="2025-06-01T00:00:00.000Z",
    )


def _draft(plan: list[Subtopic], numbers: list[int], lorem: Lorem, *, revision: bool) -> str:
    """A writer's report of about 2,500 words in SPEC's structure, citing `numbers`."""
    rnd = random.Random(11 if revision else 10)

    def para(sentences: int) -> str:
        return " ".join(f"{lorem.sentence(rnd.randint(10, 20))} [{rnd.choice(numbers)}]."
                        for _ in range(sentences))

    parts = ["## Executive summary", para(6), "## Key findings"]
    parts += [f"- {lorem.sentence(12)} [{rnd.choice(numbers)}][{rnd.choice(numbers)}]."
              for _ in range(8)]
    parts.append("## Analysis by subtopic")
    for sub in plan:
        parts += [f"### {sub.title}", para(8), para(6)]
    parts += ["## Comparison", "| Country | Heat pumps per 1,000 homes | Change |",
              "|---|---|---|"]
    parts += [f"| Country {i} | {20 + i * 7} | +{i}% [{rnd.choice(numbers)}] |" for i in range(8)]
    parts += ["## Where sources disagree", para(4), "## Recommendations", para(4),
              "## Open questions and gaps", para(3), "## Confidence assessment", para(3)]
    if revision:
        parts += ["## What changed since the first draft", para(3)]
    return "\n\n".join(parts) + "\n"


def seed_rich_run(store: Any, *, sources: int, events: int, text_chars: int,
                  subtopics: int = 6) -> str:
    """A completed run with every tab full: plan, steps, sources, findings, queries, skipped
    pages, two drafts, two reviews, the report, usage and a long event log."""
    from research.core.config import build_config
    from research.core.records import Finding, Query, ReviewIssue, SkippedPage, Subtopic
    from research.export import build_document, to_markdown

    lorem = Lorem()
    config = build_config(env={})
    run_id = store.create_run(QUESTION, config.model_dump(mode="json"))
    store.set_run_status(run_id, "running")
    plan = [Subtopic(id=f"t{i}", title=f"Subtopic {i}: {lorem.sentence(4)}",
                     description=lorem.sentence(20), round=1,
                     questions=tuple(lorem.sentence(10) + "?" for _ in range(3)))
            for i in range(1, subtopics + 1)]
    store.save_plan(run_id, plan)
    for key, label in (("preflight", "Checking the providers"), ("plan", "Planning the research")):
        store.start_step(run_id, key, kind=key, label=label)
        store.finish_step(run_id, key, result={})

    records = [_source(n, f"t{n % subtopics + 1}", lorem, text_chars) for n in range(1, sources + 1)]
    for sub in plan:
        mine = [r for r in records if r.subtopic_id == sub.id]
        key = f"research:{sub.id}"
        store.start_step(run_id, key, kind="research", label=f"Researching {sub.title}",
                         subtopic_id=sub.id)
        store.complete_research_step(
            run_id, key, sources=mine,
            findings=[Finding(sub.id, lorem.sentence(18), tuple(r.id for r in mine[i:i + 3]), 0.8)
                      for i in range(0, min(len(mine), 30), 3)],
            queries=[Query(sub.id, lorem.sentence(6), "tavily", 10) for _ in range(5)],
            skipped=[SkippedPage(sub.id, f"https://skipped.example.org/{sub.id}/{i}",
                                 "relevance 0.31 below 0.6") for i in range(40)],
            result={"kept": len(mine)})

    cited = records[:: max(1, len(records) // 60)][:60]
    numbering = {i: r.id for i, r in enumerate(cited, 1)}
    drafts = [_draft(plan, list(numbering), lorem, revision=v > 1) for v in (1, 2)]
    for version, text in enumerate(drafts, 1):
        key = "draft" if version == 1 else "revise:1"
        store.start_step(run_id, key, kind="draft" if version == 1 else "revise", label=key)
        store.save_draft(run_id, version, "draft" if version == 1 else "revision", text, numbering,
                         len(text.split()))
        store.finish_step(run_id, key, result={"version": version})
    for cycle in (1, 2):
        store.start_step(run_id, f"review:{cycle}", kind="review", label=f"Review {cycle}")
        store.save_review(
            run_id, cycle, draft_version=cycle, approved=cycle == 2, model_approved=cycle == 2,
            issues=[ReviewIssue(("high", "medium", "low")[i % 3], lorem.sentence(14),
                                section="Key findings", suggestion=lorem.sentence(10))
                    for i in range(6 if cycle == 1 else 2)],
            strengths=[lorem.sentence(9) for _ in range(3)],
            checks={"unresolved_citations": [], "cited_share": 0.92, "sentences": 120,
                    "cited_sentences": 110, "word_count": len(drafts[cycle - 1].split()),
                    "max_words": 3000, "stale_sources": [], "undated_sources": 2,
                    "passed": cycle == 2})
        store.finish_step(run_id, f"review:{cycle}", result={"approved": cycle == 2})
    doc = build_document(run_id=run_id, question=QUESTION, created_at="2025-06-01T00:00:00Z",
                         parameters_line=config.parameters_line(), draft=drafts[1],
                         numbering=numbering, sources=records)
    store.start_step(run_id, "deliver", kind="deliver", label="Delivering the report")
    store.save_report(run_id, to_markdown(doc), meta={
        "draft_version": 2, "cited_sources": len(doc.sources),
        "parameters_line": config.parameters_line()})
    store.set_citations(run_id, {r.id: ["Key findings"] for r in cited})
    store.finish_step(run_id, "deliver", result={})
    for role, calls in (("lead", 3), ("worker", 60), ("writer", 2), ("reviewer", 2)):
        for _ in range(calls):
            store.add_usage(run_id, role, "openai", "gpt-5-mini", 4000, 900, 0.0027)

    types = ("step_started", "source_found", "source_found", "source_found", "step_completed",
             "retrying", "search_failed")
    for i in range(events):
        kind = types[i % len(types)]
        store.append_event({"run_id": run_id, "type": kind, "step": f"research:t{i % subtopics + 1}",
                            "message": f"{kind.replace('_', ' ')}: {lorem.sentence(10)}",
                            "data": {"url": f"https://site{i % 97}.example.org/x/{i}", "n": i}})
    store.update_totals(run_id, sources=sources, cost_usd=round(67 * 0.0027, 4), calls=67)
    store.set_run_status(run_id, "completed")
    return run_id


def seed_library(store: Any, runs: int, *, batch: int = 1000) -> list[str]:
    """`runs` finished runs with varied questions, presets, statuses and totals.

    Benchmark-only shortcut: the public Store methods run inside one `transaction()`
    per `batch` runs (they nest as no-ops), so seeding 10,000 runs takes seconds, not minutes.
    """
    from research.core.config import build_config

    topics = ("heat pump", "solar", "battery storage", "wind power", "hydrogen", "nuclear",
              "electric cars", "grid tariffs", "insulation", "district heating", "biogas",
              "offshore wind", "smart meters", "geothermal", "carbon prices", "e-bikes",
              "rail freight", "aviation fuel", "recycling", "water use")
    templates = ("How fast is {t} adoption growing in {c}?", "What does {t} cost in {c} today?",
                 "Which policies shaped {t} in {c}?", "What are the risks of {t} in {c}?")
    countries = ("Germany", "France", "Spain", "Poland", "Italy", "Sweden", "the UK", "Norway")
    configs = [build_config(env={}, preset=p).model_dump(mode="json")
               for p in ("quick", "standard", "deep", "exhaustive")]
    ids: list[str] = []
    for start in range(0, runs, batch):
        with store.transaction():  # see the docstring
            for i in range(start, min(runs, start + batch)):
                question = templates[i % 4].format(t=topics[i % len(topics)],
                                                   c=countries[i // 7 % len(countries)])
                run_id = store.create_run(f"{question} (#{i})", configs[i % len(configs)])
                store.set_run_status(run_id, "running")
                if i % 10 == 3:
                    store.set_run_status(run_id, "failed", error="The search provider was down.")
                elif i % 17 == 5:
                    store.set_run_status(run_id, "cancelled")
                else:
                    store.set_run_status(run_id, "completed")
                store.update_totals(run_id, sources=20 + i % 100, cost_usd=round(0.01 + i % 50 / 100, 4),
                                    calls=30 + i % 40, tokens=100_000 + i)
                ids.append(run_id)
    return ids


# -- AppTest --------------------------------------------------------------------------------

def point_dashboard_at(db: Path, tmp: Path) -> None:
    os.environ["DEEP_RESEARCH_DB"] = str(db)
    os.environ["DEEP_RESEARCH_SECRETS_FILE"] = str(tmp / "secrets.toml")
    for name in KEY_VARS:
        os.environ.pop(name, None)


def open_page(page: str, params: dict[str, str]) -> Any:
    """An AppTest that has rendered the app once and is switched to `page` (not yet run)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.switch_page(page)
    at.query_params.update(params)
    return at


def timed_run(at: Any) -> float:
    start = time.perf_counter()
    at.run()
    return time.perf_counter() - start


def problems(at: Any) -> list[str]:
    return [str(e.value)[:200] for e in at.exception] + [str(e.value)[:200] for e in at.error]


def warm_up_streamlit() -> float:
    """The first AppTest run of the process pays for importing Streamlit, pandas, plotly and the
    pages' modules; report it apart so it does not pollute the first-render figures."""
    import logging

    from streamlit.runtime.scriptrunner_utils import script_run_context
    from streamlit.testing.v1 import AppTest

    # Streamlit resets its loggers' levels on each AppTest; a filter stays.
    logging.getLogger(script_run_context.__name__).addFilter(
        lambda record: "missing ScriptRunContext" not in record.getMessage())
    start = time.perf_counter()
    AppTest.from_file(APP, default_timeout=300).run()
    return time.perf_counter() - start


# -- section: Run page ------------------------------------------------------------------------

RUN_TABS = {  # tab (query param value) -> how to tell its content was rendered
    "Plan": lambda at: any("Subtopic 1" in m.value for m in at.markdown),
    "Sources": lambda at: any("Relevance" in d.value.columns for d in at.dataframe),
    "Review": lambda at: any("Review cycle 1" in m.value for m in at.markdown),
    "Report": lambda at: any("Executive summary" in m.value for m in at.markdown),
    "Tokens and cost": lambda at: any(m.label == "Model calls" for m in at.metric),
}


def bench_run_page(args: argparse.Namespace, tmp: Path) -> list[Row]:
    from storage import Store

    rows: list[Row] = []
    db = tmp / "run-page.db"
    point_dashboard_at(db, tmp)
    store = Store(db)
    start = time.perf_counter()
    run_id = seed_rich_run(store, sources=args.sources, events=args.events, text_chars=args.text_chars)
    seeded = time.perf_counter() - start
    say(f"  seeded 1 run: {store.count_sources(run_id)} sources ({args.text_chars} chars of text "
        f"each), {getattr(store.latest_activity(run_id), 'events', 0)} events, in {seeded:.1f} s; "
        f"database {file_mb(db):.1f} MB")
    rows.append(Row("run", "seed 1 run (sources+events)", f"{seeded:.1f} s"))

    # The same data work the page does, without Streamlit: where the time goes.
    from dashboard import views
    from research.core.progress import percent
    from research.export.run_document import build_document_for_run

    def live() -> None:
        view = store.live_view(run_id, events=views.EVENT_TAIL)  # as dashboard/run_live.py
        if view.run is not None:
            percent(view.run, view.steps)
        views.steps_frame(view.steps)
        views.events_frame(views.typed_events(view.events))

    def sources_tab() -> None:
        frame = views.sources_frame(store.get_sources(run_id, with_text=False), store.get_plan(run_id))
        views.source_charts(frame)

    def report_tab() -> None:
        doc = build_document_for_run(store, run_id)
        views.report_markdown(doc)
        views.sources_markdown(doc)

    def review_tab() -> None:
        drafts = store.get_drafts(run_id)
        store.get_reviews(run_id)
        views.diff_stats(drafts[0].text, drafts[1].text)
        views.draft_diff(drafts[0].text, drafts[1].text, old_name="1", new_name="2")

    for name, fn in (("live panel", live), ("Sources tab", sources_tab), ("Review tab", review_tab),
                     ("Report tab", report_tab)):
        times = timed(fn)
        rows.append(Row("run", f"data only: {name}", spread(times)))
        say(f"  data only (no Streamlit), {name}: {spread(times)}")

    say(f"  Streamlit warm-up (imports, first AppTest of the process): {warm_up_streamlit():.1f} s")
    every_warm: list[float] = []
    for tab, rendered in RUN_TABS.items():
        at = open_page("app_pages/run.py", {"run": run_id, "tab": tab})
        first = timed_run(at)
        warm = [timed_run(at) for _ in range(args.renders)]
        every_warm += warm
        issues = problems(at)
        ok = rendered(at)
        say(f"  Run page, {tab} tab: first {secs(first)}, warm {spread(warm)}"
            + ("" if ok else "  [tab content NOT found]") + (f"  [problems: {issues}]" if issues else ""))
        rows.append(Row("run", f"Run page {tab}: first render", secs(first), "< 0.5 s",
                        verdict(first, 0.5)))
        rows.append(Row("run", f"Run page {tab}: warm", spread(warm), "< 0.5 s",
                        verdict(statistics.median(warm), 0.5) if warm else ""))
    if every_warm:
        rows.append(Row("run", "Run page, all tabs: warm p95", secs(pct(every_warm, 95)), "< 0.5 s",
                        verdict(pct(every_warm, 95), 0.5)))
    store.close()
    return rows


# -- section: Library -------------------------------------------------------------------------

def shown_ids(at: Any) -> list[str]:
    """The run ids the Library's table lists (its "Open" column links to /run?run=ID)."""
    table = next(d.value for d in at.dataframe if "Open" in d.value.columns)
    return [str(link).rsplit("run=", 1)[-1] for link in table["Open"]]


def bench_library(args: argparse.Namespace, tmp: Path) -> list[Row]:
    from storage import Store

    rows: list[Row] = []
    db = tmp / "library.db"
    point_dashboard_at(db, tmp)
    store = Store(db)
    start = time.perf_counter()
    ids = seed_library(store, args.runs)
    seeded = time.perf_counter() - start
    say(f"  seeded {len(ids)} runs in {seeded:.1f} s; database {file_mb(db):.1f} MB")
    rows.append(Row("library", f"seed {len(ids)} runs", f"{seeded:.1f} s"))

    search_times = timed(lambda: (store.count_runs("heat pump"), store.list_runs(search="heat pump", limit=50)))
    rows.append(Row("library", "data only: count+list with search", spread(search_times)))
    say(f"  data only, search count+list: {spread(search_times)}")

    if "run" not in args.only:
        say(f"  Streamlit warm-up (imports, first AppTest of the process): {warm_up_streamlit():.1f} s")
    at = open_page("app_pages/library.py", {})
    first = timed_run(at)
    warm = [timed_run(at) for _ in range(args.renders)]
    issues = problems(at)
    table = next((d.value for d in at.dataframe if "Question" in d.value.columns), None)
    say(f"  Library: first {secs(first)}, warm {spread(warm)}; table rows shown: "
        f"{None if table is None else len(table)}" + (f"  [problems: {issues}]" if issues else ""))
    rows.append(Row("library", "Library: first render", secs(first), "< 1 s", verdict(first, 1.0)))
    rows.append(Row("library", "Library: warm", spread(warm), "< 1 s",
                    verdict(statistics.median(warm), 1.0) if warm else ""))

    steps: list[tuple[str, Callable[[], Any]]] = [
        ("search 'heat pump'", lambda: at.text_input(key="lib_search").input("heat pump")),
        ("search, no match", lambda: at.text_input(key="lib_search").input("no such words at all")),
        ("clear search", lambda: at.text_input(key="lib_search").input("")),
        ("last page", lambda: at.number_input(key="lib_page").set_value(math.ceil(len(ids) / 50))),
        ("status 'failed'", lambda: (at.number_input(key="lib_page").set_value(1),
                                     at.selectbox(key="lib_status").select("failed"))),
        ("status 'any'", lambda: at.selectbox(key="lib_status").select("any")),
        ("compare 3 runs", lambda: at.multiselect(key="lib_compare").set_value(shown_ids(at)[:3])),
    ]
    for name, action in steps:
        action()
        took = timed_run(at)
        issues = problems(at)
        shown = next((c.value for c in at.caption if "run(s)" in c.value), "")
        shown = shown or next((i.value for i in at.info), "")
        if name.startswith("compare"):
            shown = "comparison table shown" if any(
                "Citations" in d.value.columns for d in at.dataframe) else "NO comparison table"
        say(f"  Library, {name}: {secs(took)} ({shown})" + (f"  [problems: {issues}]" if issues else ""))
        rows.append(Row("library", f"Library: {name}", secs(took), "< 1 s", verdict(took, 1.0)))
    store.close()
    return rows


@contextmanager
def real_main() -> Iterator[None]:
    """While starting spawn children: `__main__` is this benchmark again, not the Streamlit app
    (a child would otherwise re-run app.py as its main module)."""
    current = sys.modules.get("__main__")
    if _REAL_MAIN is not None:
        sys.modules["__main__"] = _REAL_MAIN
    try:
        yield
    finally:
        if current is not None:
            sys.modules["__main__"] = current


# -- section: polling while 8 runs write ------------------------------------------------------

def bench_poll(args: argparse.Namespace, tmp: Path) -> list[Row]:
    """The poll section (bench/poll.py)."""
    from bench import poll

    return poll.bench_poll(args, tmp)


# -- section: engine --------------------------------------------------------------------------

def peak_rss_mb() -> float:
    """This process's peak resident set size in MB.

    VmHWM, not getrusage's ru_maxrss: Linux carries ru_maxrss across exec, so a spawned child
    would report the (much larger) parent's peak from before the exec.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class ThreadCounter:
    """How many threads a run starts and the most alive at once: each start is counted as it
    happens (a sampler would miss the short-lived ones), and the peak can only rise at a start."""

    def __init__(self) -> None:
        self.started = 0
        self.peak = threading.active_count()
        self._lock = threading.Lock()

    def install(self) -> ThreadCounter:
        original = threading.Thread.start
        counter = self

        def start(thread: threading.Thread) -> None:
            original(thread)
            with counter._lock:
                counter.started += 1
                counter.peak = max(counter.peak, threading.active_count())

        threading.Thread.start = start  # type: ignore[method-assign]  # this child process only
        return self


def _engine_child(env: dict[str, str], db_path: str, out: Any) -> None:
    """One full run in a fresh process, so peak RSS is the engine's own."""
    try:
        threads = ThreadCounter().install()
        from research import Credentials, build_config, run_research
        from storage import Store

        rss_imported = peak_rss_mb()
        credentials = Credentials.from_env(env)
        store = Store(db_path, secrets=credentials.secrets())
        config = build_config(env=env)
        # As the CLI and the New research page do before they create a run: it builds every
        # role's model and the search providers (so their SDKs are imported, once per process).
        from research.phases.start.preflight import check_configuration

        checked = time.perf_counter()
        check_configuration(config, credentials)
        configuration_s = time.perf_counter() - checked
        began_at = time.time()
        start = time.perf_counter()
        run_id = run_research(QUESTION, store=store, config=config, credentials=credentials)
        wall = time.perf_counter() - start
        ended_at = time.time()
        run = store.get_run(run_id)
        usage = store.usage_totals(run_id)
        steps = store.get_steps(run_id)
        out.put({
            "wall": wall, "status": run.status if run else None, "error": run.error if run else None,
            "run_id": run_id, "began_at": began_at, "ended_at": ended_at,
            "max_parallel_workers": config.max_parallel_workers,
            "sources": store.count_sources(run_id), "calls": usage.calls,
            "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
            "steps": len(steps), "skipped": len(store.get_skipped(run_id)),
            "parameters": config.parameters_line(),
            "rss_imported_mb": rss_imported, "rss_peak_mb": peak_rss_mb(),
            "configuration_s": configuration_s,
            "threads_peak": threads.peak, "threads_started": threads.started,
        })
        store.close()
    except Exception:  # noqa: BLE001 - reported by the parent
        out.put({"crash": traceback.format_exc()})


def bench_engine(args: argparse.Namespace, tmp: Path) -> list[Row]:
    from tests.standin import StandinServer

    rows: list[Row] = []
    server = StandinServer().start()
    try:
        server.set_delay(args.engine_delay)
        env = {**server.env(), "DEEP_RESEARCH_PROVIDER": args.provider}
        ctx = mp.get_context("spawn")
        out = ctx.Queue()
        proc = ctx.Process(target=_engine_child, args=(env, str(tmp / "engine.db"), out),
                           name="bench-engine", daemon=True)
        with real_main():
            proc.start()
        result = out.get(timeout=args.engine_timeout)
        proc.join(timeout=30)
        counts = {api: server.count(api) for api in ("openai", "gemini", "tavily", "arxiv",
                                                        "semanticscholar", "pages")}
    finally:
        server.stop()
    if "crash" in result:
        raise RuntimeError("the engine run crashed:\n" + result["crash"])
    say(f"  {result['parameters']}")
    say(f"  status {result['status']}{' (' + str(result['error']) + ')' if result['error'] else ''}; "
        f"wall {result['wall']:.1f} s; {result['sources']} sources kept, {result['skipped']} pages "
        f"skipped; {result['steps']} steps")
    say(f"  model calls {result['calls']} (stand-in saw {counts['openai'] + counts['gemini']}); tokens "
        f"{result['input_tokens']:,} in / {result['output_tokens']:,} out; searches "
        f"{counts['tavily'] + counts['arxiv'] + counts['semanticscholar']}; page fetches {counts['pages']}")
    say(f"  peak RSS {result['rss_peak_mb']:.0f} MB (after imports {result['rss_imported_mb']:.0f} MB); "
        f"stand-in delay per API answer {args.engine_delay:g} s")
    say(f"  threads: at most {result['threads_peak']} alive at once, {result['threads_started']} started")
    rows += [
        Row("engine", "status / wall time", f"{result['status']} / {result['wall']:.1f} s"),
        Row("engine", "sources kept / pages fetched", f"{result['sources']} / {counts['pages']}"),
        Row("engine", "model calls / tokens in+out",
            f"{result['calls']} / {result['input_tokens'] + result['output_tokens']:,}"),
        Row("engine", "peak RSS (child process)", f"{result['rss_peak_mb']:.0f} MB"),
        Row("engine", "threads: peak alive / started",
            f"{result['threads_peak']} / {result['threads_started']}"),
    ]
    return rows


from bench import latency, limits, scale  # noqa: E402 - the sections' code; they need the helpers above


def bench_scale(args: argparse.Namespace, tmp: Path) -> list[Row]:
    """The scale section (bench/scale.py) with this module's table rows."""
    return scale.bench_scale(args, tmp, Row, say)


def bench_latency(args: argparse.Namespace, tmp: Path) -> list[Row]:
    """The latency section (bench/latency.py) with this module's run helpers."""
    kit = latency.Kit(engine_child=_engine_child, real_main=real_main, row=Row, say=say)
    return latency.bench_latency(args, tmp, kit)


def bench_limits(args: argparse.Namespace, tmp: Path) -> list[Row]:
    """The limits section (bench/limits.py) with this module's run helpers."""
    kit = limits.Kit(real_main=real_main, row=Row, say=say)
    return limits.bench_limits(args, tmp, kit, QUESTION)


# -- main -------------------------------------------------------------------------------------

def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.benchmark",
        description="Prints how fast the dashboard and the engine are with a lot of data "
                    "(figures only, no pass/fail on time).")
    parser.add_argument("--only", default=",".join(s for s in SECTIONS if s not in LONG_SECTIONS),
                        help=f"comma-separated sections to run, from {', '.join(SECTIONS)} "
                             "(default: all but scale, limits and estimates: scale and limits take 15 "
                             "minutes or more, estimates has its own command)")
    size = parser.add_argument_group("Run page")
    size.add_argument("--sources", type=int, default=1000, help="sources in the run (default 1000)")
    size.add_argument("--events", type=int, default=5000, help="events in the run (default 5000)")
    size.add_argument("--text-chars", type=int, default=8000,
                      help="extracted page text per source, characters (default 8000)")
    size.add_argument("--renders", type=int, default=4,
                      help="warm reruns timed per page or tab (default 4)")
    lib = parser.add_argument_group("Library")
    lib.add_argument("--runs", type=int, default=10_000, help="runs in the library (default 10000)")
    poll = parser.add_argument_group("Polling under write load")
    poll.add_argument("--writers", type=int, default=8, help="writer processes (default 8)")
    poll.add_argument("--seconds", type=float, default=25.0, help="how long they write (default 25)")
    poll.add_argument("--writer-mode", choices=("process", "thread"), default="process",
                      help="writers as processes (default; SQLite locking across processes) or as "
                           "threads of this process, like the dashboard's job manager")
    poll.add_argument("--poll-ms", type=int, default=100, help="poll interval in ms (default 100)")
    poll.add_argument("--pollers", type=int, default=1,
                      help="dashboards polling the SQLite store, each its own process (default 1)")
    poll.add_argument("--pg-pollers", type=int, default=4,
                      help="dashboards polling the PostgreSQL store (default 4)")
    poll.add_argument("--pg-fast", action="store_true",
                      help="run the PostgreSQL server with the tests' settings (fsync, "
                           "synchronous_commit and full_page_writes off) instead of its "
                           "durable defaults")
    poll.add_argument("--event-rate", type=float, default=20.0, help="events/s per writer (default 20)")
    poll.add_argument("--usage-rate", type=float, default=4.0, help="usage rows/s per writer (default 4)")
    poll.add_argument("--step-every", type=float, default=2.0,
                      help="seconds between research steps per writer (default 2)")
    poll.add_argument("--step-sources", type=int, default=20,
                      help="sources per research step (default 20)")
    eng = parser.add_argument_group("Engine")
    eng.add_argument("--provider", choices=("openai", "gemini"), default="openai")
    eng.add_argument("--engine-delay", type=float, default=0.0,
                     help="stand-in delay before every API answer, seconds (default 0)")
    eng.add_argument("--engine-timeout", type=float, default=600.0,
                     help="give up on the engine run after this many seconds (default 600)")
    latency.add_arguments(parser)
    scale.add_arguments(parser)
    limits.add_arguments(parser)
    parser.add_argument("--keep", action="store_true", help="keep the temporary databases and say where")
    args = parser.parse_args(argv)
    args.only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in args.only if s not in SECTIONS]
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    return args


def print_table(rows: list[Row]) -> None:
    header = Row("section", "measure", "value", "target", "")
    widths = [max(len(getattr(r, f)) for r in [header, *rows])
              for f in ("section", "measure", "value", "target", "verdict")]
    line = "  ".join("-" * w for w in widths).rstrip()
    say("\n" + line)
    for row in [header, *rows]:
        say("  ".join(getattr(row, f).ljust(w) for f, w in
                      zip(("section", "measure", "value", "target", "verdict"), widths, strict=True)).rstrip())
        if row is header:
            say(line)
    say(line)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    say(f"Deep Research Studio benchmark: Python {platform.python_version()}, SQLite "
        f"{sqlite3.sqlite_version}, {os.cpu_count()} CPUs, {load()}; sections: {', '.join(args.only)}")
    from bench.docs import bench_docs  # the "docs" section lives in its own file
    from bench.estimates import bench_estimates  # so does "estimates" (python -m bench.estimates)
    from bench.models import bench_models  # the "models" section lives in its own file

    runners = {"run": bench_run_page, "library": bench_library, "poll": bench_poll,
               "engine": bench_engine, "latency": bench_latency, "models": bench_models, "docs": bench_docs,
               "scale": bench_scale, "limits": bench_limits,
               "estimates": lambda args, tmp: bench_estimates(Row, say)}
    rows: list[Row] = []
    crashed = False
    tmp_dir = tempfile.mkdtemp(prefix="drs-bench-")
    tmp = Path(tmp_dir)
    saved_env = dict(os.environ)
    began = time.perf_counter()
    try:
        for name in args.only:
            say(f"\n[{name}]")
            start = time.perf_counter()
            try:
                rows += runners[name](args, tmp)
            except Exception:  # noqa: BLE001 - one broken section must not hide the others
                crashed = True
                say(traceback.format_exc())
                rows.append(Row(name, "section crashed", "see above", "", "FAIL"))
            say(f"  ({name} took {time.perf_counter() - start:.0f} s)")
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        if args.keep:
            say(f"\nDatabases kept in {tmp}")
        else:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
    print_table(rows)
    say(f"total {time.perf_counter() - began:.0f} s; {load()} (other work on the machine inflates "
        "every figure)")
    return 1 if crashed else 0


if __name__ == "__main__":
    # Run from the importable module, so spawned children can unpickle its functions by name.
    from bench import benchmark

    sys.exit(benchmark.main())
