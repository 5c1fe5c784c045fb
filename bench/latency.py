"""The `latency` section of the benchmark: a full run against the stand-in with set latencies.

Two runs: the fixed-latency run (every model answer `--latency-model` s; comparable with
earlier figures), then, unless `--tokens-per-second 0`, the same run where a model answer also
takes its completion tokens at that rate and the writer answers at report length
(`--report-words`), as a real model writes. Each prints its wall time against the lower bound
worked out from the run's own record with the same model (see bench/README.md), the per-phase
table (step, starts at s, takes s) and where the prompt tokens go: per phase, per page read,
per role (the run's usage record) and per task (the prompts the stand-in saw).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from research.core.records import Step, Subtopic

from bench.latency_calls import Call, EarlyChecks, chain_bound, overlapping  # noqa: F401 - re-exported


@dataclass(frozen=True)
class Kit:
    """The benchmark's helpers (passed in: `python -m bench.benchmark` runs as __main__, so
    importing it from here would load a second copy with the wrong idea of __main__)."""
    engine_child: Callable[..., None]
    real_main: Callable[[], Any]
    row: Callable[..., Any]
    say: Callable[[str], None]

LLM_APIS = ("openai", "gemini")
SEARCH_APIS = ("tavily", "arxiv", "semanticscholar")
LATENCY_TARGET = 1.15
WALL_TARGET_S = 60.0           # issue 11, at 80 tokens/s and 1,500-word answers
TOKENS_PER_PAGE_TARGET = 2000  # prompt tokens per page read
FINDINGS_TASKS = ("SubtopicFindings", "OpenQuestions")  # a unit's last calls, all at once


@dataclass(frozen=True)
class Latency:
    model: float
    search: float
    page: float
    tokens_per_second: float = 0.0

    def call(self, completion_tokens: int) -> float:
        """What one model answer takes at the least: the fixed latency plus generation."""
        rate = self.tokens_per_second
        return self.model + (completion_tokens / rate if rate else 0.0)


@dataclass
class Unit:
    """One research unit (a subtopic or a quick lookup) as the run recorded it."""
    key: str
    order: int            # position in the steps table: the order the pool started units
    measured: float       # the step's own duration (its last attempt)
    query_calls: int      # SearchQueries calls
    search_waves: int     # of those, how many were followed by searches (all at once)
    scoring_calls: int    # RelevanceScores calls (batches of SCORE_BATCH, each sent once its pages are read)
    findings_calls: int   # findings and gaps calls (FINDINGS_TASKS), under way together
    pages: int            # pages fetched: sources kept + pages skipped
    chain: float = 0.0    # its lower bound: the longest of its chains (see `unit_chain`)
    chain_n: int = 0      # model calls one after another on that chain

    def bound(self, lat: Latency) -> float:
        return self.chain

    def chain_calls(self) -> int:
        return self.chain_n


@dataclass
class Phase:
    name: str
    start: float
    end: float
    bound: float
    calls: int            # model calls one after another on this phase's critical path
    detail: str = ""
    units: list[Unit] | None = None
    prompt_tokens: int = 0
    model_calls: int = 0
    pages: int = 0
    extra: list[str] = field(default_factory=list)

    @property
    def measured(self) -> float:
        return self.end - self.start


def _epoch(stamp: str | None) -> float | None:
    if not stamp:
        return None
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _llm_text(api: str, body: Any) -> str:
    """The prompt text of a logged OpenAI or Gemini request."""
    if not isinstance(body, dict):
        return ""

    def text(value: Any) -> str:
        if isinstance(value, list):
            return "".join(str(p.get("text", "")) for p in value if isinstance(p, dict))
        return str(value or "")

    if api == "openai":
        return "\n\n".join(text(m.get("content")) for m in body.get("messages") or []
                           if isinstance(m, dict))
    parts = [text((body.get("systemInstruction") or {}).get("parts"))]
    parts += [text(c.get("parts")) for c in body.get("contents") or [] if isinstance(c, dict)]
    return "\n\n".join(parts)


def _words(text: str) -> str:
    """A search query as words only: providers clean queries differently (arXiv drops
    punctuation), the words stay."""
    return " ".join(re.findall(r"\w+", text.lower()))


def _search_query(request: dict[str, Any]) -> str:
    if request["api"] == "tavily":
        return _words(str((request["json"] or {}).get("query", "")))
    query = request.get("query") or {}
    return _words(str(query.get("search_query", "")).removeprefix("all:") or str(query.get("query", "")))


def _waves(calls: Sequence[float], searches: Sequence[float]) -> int:
    """How many of the query calls (arrival times) were followed by searches before the next."""
    ordered = sorted(calls)
    bounds = [*ordered[1:], float("inf")]
    return sum(1 for a, b in zip(ordered, bounds, strict=True) if any(a <= t < b for t in searches))


def schedule(units: Sequence[Unit], slots: int, lat: Latency) -> tuple[float, int]:
    """Greedy list schedule of the units, in the order they started, each onto the slot that
    frees first, each taking its own lower bound: the makespan, and the model calls in sequence
    on the slot that ends last."""
    ends = [0.0] * max(1, slots)
    calls = [0] * len(ends)
    for unit in sorted(units, key=lambda u: u.order):
        i = min(range(len(ends)), key=ends.__getitem__)
        ends[i] += unit.bound(lat)
        calls[i] += unit.chain_calls()
    last = max(range(len(ends)), key=ends.__getitem__)
    return ends[last], calls[last]


def _calls(requests: Sequence[dict[str, Any]], lat: Latency) -> list[Call]:
    from tests.standin.server import _task_of

    out = []
    for r in requests:
        if r["api"] not in LLM_APIS:
            continue
        sent = float(r["time"])
        out.append(Call(sent, float(r.get("answered") or sent + lat.model),
                        _task_of(r["api"], r["json"]) or "writer", _llm_text(r["api"], r["json"]),
                        lat.call(int(r.get("completion_tokens") or 0))))
    return out


def _groups(by_key: dict[str, Step], plan: list[Subtopic],
            titles: dict[str, str]) -> list[tuple[str, list[str]]]:
    """The run's phases in pipeline order, each with the step keys that ran in it."""
    groups: list[tuple[str, list[str]]] = []
    # The plan's call goes out beside pre-flight's and the clarify step's (plan.Ahead): one phase.
    before = [k for k in ("preflight", "clarify", "inherit", "plan") if k in by_key]
    if before:
        groups.append((" + ".join(before), before))
    first = [f"research:{s.id}" for s in plan
             if s.round == 1 and not s.inherited and f"research:{s.id}" in by_key]
    groups.append((f"research round 1 ({len(first)} subtopics)", first))
    r = 1
    while f"triage:{r}" in by_key:
        groups.append((f"triage {r}", [f"triage:{r}"]))
        decisions = by_key[f"triage:{r}"].result.get("decisions") or []
        for i, d in enumerate(decisions, start=1):
            titles[f"followup:{r}:{i}"] = str(d.get("question", ""))[:150]
        lookups = [k for k in by_key if k.startswith(f"followup:{r}:")]
        new = [f"research:{s.id}" for s in plan
               if s.round == r + 1 and f"research:{s.id}" in by_key]
        if lookups or new:
            groups.append((f"after triage {r}: {len(lookups)} lookups + {len(new)} new subtopics",
                           lookups + new))
        r += 1
    groups.append(("write", ["write"]))
    c = 1
    while f"review:{c}" in by_key:
        groups.append((f"review {c}", [f"review:{c}"]))
        if f"revise:{c}" in by_key:
            groups.append((f"revise {c}", [f"revise:{c}"]))
        c += 1
    groups += [("verify", ["verify"]), ("deliver", ["deliver"])]
    return groups


def critical_path(store: Any, run_id: str, requests: Sequence[dict[str, Any]], lat: Latency,
                  workers: int, began_at: float, ended_at: float) -> list[Phase]:
    """The run's phases in pipeline order, each with its measured time and its lower bound.

    See bench/README.md ("How the latency section computes its lower bound")."""
    steps = store.get_steps(run_id)
    by_key: dict[str, Step] = {s.key: s for s in steps}
    order = {s.key: i for i, s in enumerate(steps)}
    plan = store.get_plan(run_id) or []
    llm = _calls(requests, lat)
    searches = [(float(r["time"]), _search_query(r)) for r in requests if r["api"] in SEARCH_APIS]
    page_times = [float(r["time"]) for r in requests if r["api"] == "pages"]
    asked: dict[str, set[str]] = {}  # step key -> the queries it searched, as words
    for q in store.get_queries(run_id):
        asked.setdefault(str(q.step_key), set()).add(_words(q.query))
    titles = {f"research:{s.id}": s.title for s in plan}
    found_by = {_words(s.query) for s in store.get_sources(run_id, with_text=False)}

    phases: list[Phase] = []
    at = began_at
    early = EarlyChecks()
    for name, keys in _groups(by_key, plan, titles):
        ends = [_epoch(by_key[k].finished_at) for k in keys if k in by_key]
        ends = [e for e in ends if e is not None]
        if not ends:
            continue
        end = max(ends)
        window = [c for c in llm if at <= c.sent <= end]
        if name == "verify":
            window = early.calls + window
        elif not name.startswith(("research round", "after triage")):
            window = early.take(window, sum(p.bound for p in phases))
        tasks = [c.task for c in window]
        if name.startswith(("research round", "after triage")):
            units = [_unit(by_key[k], order[k], titles.get(k, ""), window, searches,
                           asked.get(k, set()), lat, found_by) for k in keys]
            bound, calls = schedule(units, workers, lat)
            phase = Phase(name, at, end, bound, calls, units=units,
                          detail=f"{len(units)} units on {workers} slots")
        elif name.startswith("preflight"):  # with the search pings beside the model calls
            bound, calls = chain_bound(window)
            searched = any(at <= t <= end for t, _ in searches)
            phase = Phase(name, at, end, max(bound, lat.search if searched else 0.0), calls,
                          ", ".join(f"{tasks.count(t)} {t}" for t in dict.fromkeys(tasks))
                          + (", search pings beside them" if searched else ""))
        elif name == "verify":  # its own calls, beside what is left of the early checks
            bound, calls = early.verify_bound(window, sum(p.bound for p in phases))
            phase = Phase(name, at, end, bound, calls,
                          ", ".join(f"{tasks.count(t)} {t}" for t in dict.fromkeys(tasks))
                          + (f" ({len(early.calls)} sent before this step, in {len(early.jobs)} "
                             "early checks)" if early.calls else ""))
        else:  # the calls as they ran: parallel groups (sections, verify batches), in sequence
            bound, calls = chain_bound(window)
            phase = Phase(name, at, end, bound, calls,
                          ", ".join(f"{tasks.count(t)} {t}" for t in dict.fromkeys(tasks))
                          or "no model call")
        phase.prompt_tokens = sum(c.prompt_tokens for c in window)
        phase.model_calls = len(window)
        phase.pages = sum(1 for t in page_times if at <= t <= end)
        phases.append(phase)
        at = end
    phases.append(Phase("finishing (after the last step)", at, ended_at, 0.0, 0))
    return phases


def _opposing(title: str) -> str:
    from research.phases.gather.searching import opposing_query

    return opposing_query(title)


def _unit(step: Step, order: int, title: str, window: Sequence[Call],
          searches: Sequence[tuple[float, str]], asked: set[str], lat: Latency,
          found_by: set[str]) -> Unit:
    tag, line = f"<subtopic>{title}</subtopic>", f"Subtopic: {title}\n"
    result = step.result
    began, ended = _epoch(step.started_at) or 0.0, _epoch(step.finished_at) or 0.0
    queries = sorted((c for c in window if c.task == "SearchQueries" and tag in c.text),
                     key=lambda c: c.sent)
    scoring = [c for c in window if c.task == "RelevanceScores" and line in c.text]
    # The findings of the kept sources, group by group, and the gaps call go out together.
    findings = [c for c in window if c.task in FINDINGS_TASKS and tag in c.text]
    mine = [(t, words) for t, words in searches if began <= t <= ended and words in asked]
    pages = int(result.get("sources") or 0) + int(result.get("skipped") or 0)
    # The other side's search waits for no query call (research.phases.gather.searching.other_side).
    other = _words(_opposing(title))
    chain, chain_n = unit_chain(queries, [m for m in mine if m[1] != other],
                                [c.cost for c in scoring],
                                max((c.cost for c in findings), default=0.0),
                                1 if findings else 0, lat,
                                found_by if pages else set())
    return Unit(
        key=step.key, order=order, measured=ended - began, query_calls=len(queries),
        search_waves=_waves([c.sent for c in queries], [t for t, _ in mine]),
        scoring_calls=len(scoring), findings_calls=len(findings), pages=pages,
        chain=chain, chain_n=chain_n,
    )


def unit_chain(queries: Sequence[Call], searches: Sequence[tuple[float, str]],
               scoring: Sequence[float], findings: float, findings_n: int, lat: Latency,
               found_by: set[str]) -> tuple[float, int]:
    """A unit's lower bound and the model calls on it: the longest of the chains its record
    proves (bench/README.md, step 3). Query calls run one after another, each wave's
    searches between them; the findings calls (under way together, `findings` their slowest)
    come after the last wave; a scoring call needs
    a page read (P) after a search; a wave's pages need that wave. `searches`: (time, words)
    of the unit's searches but the other side's; `found_by`: the queries (as words) that
    found a source the run kept."""
    nexts = [c.sent for c in queries[1:]] + [float("inf")]
    chains: list[tuple[float, int]] = []
    at, n = 0.0, 0
    for i, call in enumerate(queries):
        at, n = at + call.cost, n + 1
        wave = {w for t, w in searches if call.sent <= t < nexts[i]}
        if wave:
            at += lat.search
            if scoring and wave & found_by:  # a kept page came from this wave
                chains.append((at + lat.page + min(scoring) + findings, n + 1 + findings_n))
    chains.append((at + findings, n + findings_n))  # the findings wait for every wave
    if scoring and searches:  # a page read follows a search, at the least the other side's
        chains.append((lat.search + lat.page + max(scoring) + findings, 1 + findings_n))
    return max(chains)


def _one_run(args: argparse.Namespace, tmp: Path, kit: Kit, lat: Latency, words: int,
             label: str) -> dict[str, Any]:
    """One full run against the stand-in at these settings; its figures."""
    from storage import Store
    from tests.standin import StandinServer

    server = StandinServer().start()
    try:
        server.set_latency(model=lat.model, search=lat.search, page=lat.page,
                           tokens_per_second=lat.tokens_per_second)
        server.set_answer_words(words)
        env = {**server.env(), "DEEP_RESEARCH_PROVIDER": args.provider}
        ctx = mp.get_context("spawn")
        out = ctx.Queue()
        db_path = tmp / f"latency-{label}.db"
        proc = ctx.Process(target=kit.engine_child, args=(env, str(db_path), out),
                           name="bench-latency", daemon=True)
        with kit.real_main():
            proc.start()
        result = out.get(timeout=args.engine_timeout)
        proc.join(timeout=30)
        requests = list(server.requests)
    finally:
        server.stop()
    if "crash" in result:
        raise RuntimeError("the engine run crashed:\n" + result["crash"])
    if args.keep:  # the stand-in's request log beside the database, for a closer look
        import json

        (tmp / f"latency-{label}-requests.jsonl").write_text("".join(json.dumps(
            {k: r.get(k) for k in ("time", "answered", "completion_tokens", "api", "path", "query",
                                   "json")}) + "\n" for r in requests))
    store = Store(str(db_path))
    try:
        phases = critical_path(store, result["run_id"], requests, lat,
                               int(result["max_parallel_workers"]), result["began_at"],
                               result["ended_at"])
        kept = store.count_sources(result["run_id"])
        roles = role_usage(store.get_usage(result["run_id"]))
    finally:
        store.close()
    return {**result, "phases": phases, "kept": kept, "requests": requests, "roles": roles,
            "tasks": task_usage(_calls(requests, lat))}


@dataclass(frozen=True)
class Usage:
    """Model calls and tokens under one name (a role, or a task: the answer's schema)."""
    name: str
    calls: int
    prompt_tokens: int
    completion_tokens: int


def role_usage(rows: Sequence[Any]) -> list[Usage]:
    """Per role, as the run's usage record counts it (the provider's own token counts), most
    prompt tokens first."""
    by_role: dict[str, list[int]] = {}
    for row in rows:
        acc = by_role.setdefault(str(row.role), [0, 0, 0])
        acc[0] += int(row.calls)
        acc[1] += int(row.input_tokens)
        acc[2] += int(row.output_tokens)
    return sorted((Usage(k, *v) for k, v in by_role.items()), key=lambda u: -u.prompt_tokens)


def task_usage(calls: Sequence[Call]) -> list[Usage]:
    """Per task (the answer's schema, "writer" for free text), as the stand-in saw the
    prompts, most prompt tokens first."""
    by_task: dict[str, list[int]] = {}
    for call in calls:
        acc = by_task.setdefault(call.task, [0, 0])
        acc[0] += 1
        acc[1] += call.prompt_tokens
    return sorted((Usage(k, n, t, 0) for k, (n, t) in by_task.items()),
                  key=lambda u: -u.prompt_tokens)


def usage_table(say: Callable[[str], None], title: str, rows: Sequence[Usage],
                completion: bool = True) -> None:
    """One markdown table of where the tokens go."""
    total = sum(u.prompt_tokens for u in rows) or 1
    head = "| prompt tok | share | per call |" + (" completion tok |" if completion else "")
    say(f"  | {title} | calls {head}")
    say("  | --- | --- | --- | --- | --- |" + (" --- |" if completion else ""))
    for u in [*rows, Usage("total", sum(u.calls for u in rows),
                           sum(u.prompt_tokens for u in rows),
                           sum(u.completion_tokens for u in rows))]:
        say(f"  | {u.name} | {u.calls} | {u.prompt_tokens:,} | {u.prompt_tokens / total:.0%} | "
            f"{u.prompt_tokens // max(1, u.calls):,} |"
            + (f" {u.completion_tokens:,} |" if completion else ""))


def _report(kit: Kit, label: str, lat: Latency, words: int, run: dict[str, Any]) -> list[Any]:
    """Print one run's figures; its summary rows."""
    say, Row = kit.say, kit.row  # noqa: N806 - the benchmark's row type

    phases: list[Phase] = run["phases"]
    requests = run["requests"]
    wall = run["wall"]
    bound = sum(p.bound for p in phases)
    chain = sum(p.calls for p in phases)
    ratio = wall / bound if bound else float("inf")
    pages = sum(1 for r in requests if r["api"] == "pages")
    llm_seen = sum(1 for r in requests if r["api"] in LLM_APIS)
    searches = sum(1 for r in requests if r["api"] in SEARCH_APIS)
    prompt = sum(p.prompt_tokens for p in phases)
    per_page = prompt / pages if pages else float("inf")
    status = "OK" if ratio <= LATENCY_TARGET else "OVER"
    rate = (f", generation {lat.tokens_per_second:g} tokens/s, writer answers ~{words} words"
            if lat.tokens_per_second else ", no generation time (fixed latency only)")
    say(f"  [{label}] stand-in latency: model {lat.model:g} s, search {lat.search:g} s, "
        f"page {lat.page:g} s{rate}; MAX_PARALLEL_WORKERS {run['max_parallel_workers']}; "
        f"status {run['status']}" + (f" ({run['error']})" if run["error"] else ""))
    say(f"  {run['parameters']}")
    say(f"  {'phase':<44} {'starts':>7} {'takes':>8} {'bound':>8} {'extra':>8}  calls  "
        f"{'prompt tok':>10} pages  detail")
    for p in phases:
        say(f"  {p.name:<44} {p.start - run['began_at']:>6.1f}s {p.measured:>7.2f}s {p.bound:>7.2f}s "
            f"{p.measured - p.bound:>+7.2f}s {p.calls:>3}/{p.model_calls:<3} {p.prompt_tokens:>10,} "
            f"{p.pages:>5}  {p.detail}")
        for u in sorted(p.units or [], key=lambda u: u.order):
            say(f"      {u.key:<40} {'':>7} {u.measured:>7.2f}s {u.bound(lat):>7.2f}s "
                f"{u.measured - u.bound(lat):>+7.2f}s {u.chain_calls():>6}  {u.query_calls} query "
                f"call(s), {u.search_waves} search wave(s), {u.pages} pages, {u.scoring_calls} "
                f"scoring call(s), {u.findings_calls} findings call(s)")
    worst = max(phases, key=lambda p: p.measured - p.bound)
    say(f"  wall time {wall:.2f} s; critical-path lower bound {bound:.2f} s; ratio {ratio:.3f} "
        f"(target <= {LATENCY_TARGET}) {status}; most extra time: {worst.name} "
        f"(+{worst.measured - worst.bound:.2f} s)")
    say(f"  model calls in sequence on the critical path {chain}; total model calls {run['calls']} "
        f"(stand-in saw {llm_seen}); searches {searches}")
    say(f"  tokens: prompt {run['input_tokens']:,}, completion {run['output_tokens']:,}; prompt tokens "
        f"per page read {per_page:,.0f} ({prompt:,} prompt tokens the stand-in saw / {pages} pages)")
    say(f"  sources read: {pages} pages fetched = {pages / wall:.2f} pages/s; {run['kept']} sources "
        f"kept = {run['kept'] / wall:.2f} sources/s")
    say(f"  before the clock: the configuration check the CLI and the New research page make "
        f"before a run is created (it imports the provider SDKs) took "
        f"{run.get('configuration_s', 0.0):.2f} s")
    say(f"  peak memory (VmHWM of the engine process) {run['rss_peak_mb']:.0f} MB "
        f"(after imports {run['rss_imported_mb']:.0f} MB)")
    say(f"  threads: at most {run['threads_peak']} alive at once, {run['threads_started']} started")
    say("")
    say("  | step | starts at s | takes s |")
    say("  | --- | --- | --- |")
    for p in phases:
        say(f"  | {p.name} | {p.start - run['began_at']:.1f} | {p.measured:.1f} |")
    say(f"  | total | | {wall:.1f} s, {run['calls']} model calls, {run['input_tokens']:,} prompt "
        f"tokens, {pages} pages read |")
    say("")
    usage_table(say, "role", run["roles"])
    say("")
    usage_table(say, "task (as the stand-in saw the prompts)", run["tasks"], completion=False)
    say("")
    rows = [
        Row("latency", f"{label}: wall time / lower bound", f"{wall:.1f} s / {bound:.1f} s"),
        Row("latency", f"{label}: ratio", f"{ratio:.3f}", f"<= {LATENCY_TARGET}", status),
        Row("latency", f"{label}: model calls on the path / total", f"{chain} / {run['calls']}"),
        Row("latency", f"{label}: tokens prompt / completion",
            f"{run['input_tokens']:,} / {run['output_tokens']:,}"),
        Row("latency", f"{label}: pages/s / kept sources/s",
            f"{pages / wall:.2f} / {run['kept'] / wall:.2f}"),
        Row("latency", f"{label}: peak memory (VmHWM)", f"{run['rss_peak_mb']:.0f} MB"),
        Row("latency", f"{label}: threads peak alive / started",
            f"{run['threads_peak']} / {run['threads_started']}"),
    ]
    if lat.tokens_per_second:
        rows += [
            Row("latency", f"{label}: wall time", f"{wall:.1f} s", f"<= {WALL_TARGET_S:g} s",
                "OK" if wall <= WALL_TARGET_S else "OVER"),
            Row("latency", f"{label}: prompt tokens per page read", f"{per_page:,.0f}",
                f"<= {TOKENS_PER_PAGE_TARGET:,}", "OK" if per_page <= TOKENS_PER_PAGE_TARGET else "OVER"),
        ]
    return rows


def bench_latency(args: argparse.Namespace, tmp: Path, kit: Kit) -> list[Any]:
    """The fixed-latency run (comparable with earlier figures), then the generation-time run."""
    fixed = Latency(args.latency_model, args.latency_search, args.latency_page)
    rows = []
    if not args.generation_only:
        rows += _report(kit, "fixed latency", fixed, 0, _one_run(args, tmp, kit, fixed, 0, "fixed"))
    if args.tokens_per_second > 0:
        real = Latency(fixed.model, fixed.search, fixed.page, args.tokens_per_second)
        rows += _report(kit, f"{args.tokens_per_second:g} tok/s", real, args.report_words,
                        _one_run(args, tmp, kit, real, args.report_words, "generation"))
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    lat = parser.add_argument_group("Latency (the engine run with set stand-in latencies)")
    lat.add_argument("--latency-model", type=float, default=1.0,
                     help="seconds every model answer takes before generation (default 1.0)")
    lat.add_argument("--latency-search", type=float, default=0.5,
                     help="seconds every search answer takes (default 0.5)")
    lat.add_argument("--latency-page", type=float, default=0.3,
                     help="seconds every page takes (default 0.3)")
    lat.add_argument("--tokens-per-second", type=float, default=80.0,
                     help="model generation rate for the second run; 0 skips it (default 80)")
    lat.add_argument("--report-words", type=int, default=1500,
                     help="words the stand-in writer answers with in the second run (default 1500)")
    lat.add_argument("--generation-only", action="store_true",
                     help="skip the fixed-latency run")
