"""The estimate against what runs really do, at every preset (issue 39: a Quick run was
estimated at ~36 model calls and made 143).

    .venv/bin/python -m bench.estimates                      # every case, about 2-3 minutes
    .venv/bin/python -m bench.estimates --cases quick,deep   # some of them
    .venv/bin/python -m bench.estimates --fakes              # in-process fakes, no sockets (faster)

Each case is one full run against the stand-in (tests/standin), over real HTTP through the real
SDKs unless `--fakes`, in a temporary store. The stand-in writes the report at the length the
writer is asked for (`set_answer_words`), as a model does, and writes new search queries when
asked to refine (a model told "do not repeat earlier queries" does not; the stand-in's own
answer repeats them). Per case, figure by figure: the estimate shown before Start (typical
behaviour, with its range), the estimate under this run's own behaviour (`observed`: what its
models and pages decided, read from the run's record), what the run did, and whether the
second is within research.estimate.ESTIMATE_TOLERANCE of it. The first is what a person sees;
the second checks the estimate's structure (per unit, per page, per review, per check) apart
from what the stand-in's models happen to decide.

Model calls and tokens are counted from the run's usage records (what it paid for), searches
and pages from the stand-in's request log. The stand-in counts tokens as characters / 4 and
its pages are shorter than most web pages (the observed behaviour carries their length); a
real reasoning model's hidden tokens are in neither figure.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from research import Credentials, build_config, resume, run_research
from research.core.config import ResearchConfig
from research.documents import ingest
from research.documents.choice import with_sources
from research.estimate import ESTIMATE_TOLERANCE, Behaviour, Estimate, estimate
from research.llm import pacing
from research.phases.start import plan
from research.report.checks import word_count
from storage import Store

QUESTION = "How is heat pump adoption changing in Europe?"
FIGURES = ("model_calls", "searches", "pages_fetched", "input_tokens", "output_tokens", "cost_usd")
SEARCH_APIS = ("tavily", "arxiv", "semanticscholar")


@dataclass(frozen=True)
class Case:
    """One run: a preset and the settings that change what it does."""
    preset: str
    settings: dict[str, Any]
    mix: str = "web"  # "documents": the person's files only; "both": the web and the files


CASES = {
    "quick": Case("quick", {}),
    "standard": Case("standard", {}),
    "deep": Case("deep", {}),
    "exhaustive": Case("exhaustive", {}),
    "quick+review": Case("quick", {"review_cycles": 2}),
    "quick+plan review": Case("quick", {"review_plan": True}),
    "standard+done when": Case("standard", {"done_when": "the yearly sales figures are known"}),
    "quick+French": Case("quick", {"report_language": "French"}),
    "quick documents": Case("quick", {}, mix="documents"),
    "quick web+documents": Case("quick", {}, mix="both"),
}

_QUERY_LINE = re.compile(r"Earlier queries: (.*)")
_QUERY_COUNT = re.compile(r"Write exactly (\d+) search queries")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_SUBTOPIC = re.compile(r"<subtopic>(.*?)</subtopic>", re.DOTALL)


def new_queries(system: str, user: str, schema: dict | None) -> str | None:
    """The stand-in's answer to a query call, as a model asked not to repeat earlier queries
    writes it: new ones (every other answer stays the stand-in's own)."""
    if (schema or {}).get("title") != "SearchQueries":
        return None
    import json

    count = int(m.group(1)) if (m := _QUERY_COUNT.search(user)) else 3
    subtopic = " ".join(m.group(1).split()) if (m := _SUBTOPIC.search(user)) else "topic"
    asked = len(m.group(1).split("; ")) if (m := _QUERY_LINE.search(user)) else 0
    return json.dumps({"queries": [f"{subtopic} angle {asked + i + 1}" for i in range(count)]})


def observed(store: Store, run_id: str, config: ResearchConfig,
             standin_log: Sequence[dict[str, Any]] | None = None) -> Behaviour:
    """What this run's models and pages decided, read from its record, as a Behaviour: put into
    the estimate, the figures that remain to check are the pipeline's own structure."""
    steps = store.get_steps(run_id)
    units = [s for s in steps if s.kind in ("research", "followup") and s.status == "done"]
    research = [s for s in units if s.kind == "research"]
    kept = sum(int(s.result.get("sources", 0)) for s in units)
    skipped = store.get_skipped(run_id)
    read_reasons = ("relevance", "over the", "not scored")
    unread = sum(1 for p in skipped if not p.reason.startswith(read_reasons))
    chosen = kept + len(skipped)
    read = chosen - unread
    sources = store.get_sources(run_id)
    findings = store.get_findings(run_id)
    follow_ups = sum(1 for f in findings if f.kind == "follow_up"
                     and not (f.step_key or "").startswith("followup:"))
    triages = [s for s in steps if s.kind == "triage" and s.result.get("decisions")]
    lookups = sum(1 for s in units if s.kind == "followup")
    added = sum(int(s.result.get("new_subtopics") or 0) for s in triages)
    allowed = sum(_allowed(config, int(s.result.get("round", 0))) for s in triages
                  if int(s.result.get("round", 0)) < config.rounds_limit())
    reviews = sorted((s for s in steps if s.kind == "review"), key=lambda s: s.key)
    approved = next((i for i, s in enumerate(reviews, 1) if s.result.get("approved")), None)
    revised = [len(s.result.get("revised") or ()) / max(1, len(s.result.get("sections") or {}))
               for s in steps if s.kind == "revise"]
    drafts = [d for d in store.get_drafts(run_id) if d.kind in ("draft", "revision")]
    words = word_count(drafts[-1].text) if drafts else config.words_limit()
    verdicts = store.get_verifications(run_id)
    lookup_searches = [len({q.query for q in store.get_queries(run_id)
                            if q.step_key == s.key}) for s in units if s.kind == "followup"]
    decided = Behaviour(
        asked_again=_asked_again(standin_log) if standin_log is not None else 0.0,
        page_chars=round(sum(len(s.text or "") for s in sources) / len(sources)) if sources else 1,
        findings_per_source=(sum(1 for f in findings if f.kind == "finding") / kept if kept
                             else Behaviour().findings_per_source),
        follow_ups=follow_ups / len(research) if research else 0.0,
        lookups=lookups / len(triages) if triages else 0.0,
        new_subtopics=added / allowed if allowed else 0.0,
        lookup_searches=(sum(lookup_searches) / len(lookup_searches) if lookup_searches
                         else Behaviour().lookup_searches),
        approved_at=approved,
        revised_share=sum(revised) / len(revised) if revised else Behaviour().revised_share,
        changed_share=_changed(drafts, revised),
        report_fill=words / config.words_limit(),
        words_per_claim=words / len(verdicts) if verdicts else Behaviour().words_per_claim,
        challenged_share=(sum(1 for v in verdicts if v.critic_verdict) / len(verdicts)
                          if verdicts else Behaviour().challenged_share),
    )
    # The pages its units could have read had every search found its fill, at this behaviour.
    full = estimate(config, behaviour=replace(decided, read_share=1, relevant_share=1)).pages_read
    return replace(decided, results_share=chosen / full if full else 1.0,
                   read_share=read / chosen if chosen else 1.0,
                   relevant_share=kept / read if read else 1.0)


def _asked_again(log: Sequence[dict[str, Any]]) -> float:
    """The share of model requests that asked again: a request carrying the model's own
    earlier answer (a repair, a request for the missing items)."""
    asked = [entry.get("json") or {} for entry in log if entry["api"] in ("openai", "gemini")]
    again = sum(1 for body in asked if any(m.get("role") in ("assistant", "model")
                                           for m in body.get("messages") or body.get("contents") or []))
    return again / max(1, len(asked) - again)


def _allowed(config: ResearchConfig, round_no: int) -> int:
    """New subtopics a round may add (research.phases.decide.rounds)."""
    if config.schedule == "breadth_depth":
        return max(1, math.ceil(config.breadth / 2 ** (round_no - 1)))
    return max(1, config.subtopic_count // 2)


def _changed(drafts: Sequence[Any], revised: Sequence[float]) -> float:
    """Of the statements in the parts revisions rewrote, the share that are new: sentences of
    each revision not in the draft before it, over the sentences its rewritten parts hold."""
    shares = []
    for before, after, share in zip(drafts, drafts[1:], revised, strict=False):
        old = set(_SENTENCE.split(before.text))
        new = _SENTENCE.split(after.text)
        if new and share:
            shares.append(min(1.0, sum(1 for x in new if x not in old) / (len(new) * share)))
    return sum(shares) / len(shares) if shares else Behaviour().changed_share


@dataclass(frozen=True)
class Measured:
    """One case's run: the configuration, what it did, and the two estimates."""
    name: str
    config: ResearchConfig
    status: str
    actual: dict[str, float]
    shown: Estimate       # typical behaviour: what the person sees before Start
    at_behaviour: Estimate  # this run's own behaviour
    behaviour: Behaviour
    seconds: float


def run_case(name: str, case: Case, standin: Any, tmp: Path, *, fakes: bool = False) -> Measured:
    """Run `case` to its end against `standin` (reset first) and measure it."""
    standin.reset()
    pacing.forget_pacers()
    env = {**standin.env(), "DEEP_RESEARCH_SEARCH_PACE": "0"}
    credentials = Credentials.from_env(env)
    store = Store(tmp / f"{re.sub(r'[^a-z]+', '-', name)}.db", secrets=credentials.secrets())
    config = build_config(env=env, preset=case.preset, fetch_timeout_s=5, **case.settings)
    if case.mix != "web":
        from tests.document_files import docx_bytes, pdf_bytes

        ingest(store, "field-report.pdf", pdf_bytes(), collection="Heat")
        ingest(store, "market-notes.docx", docx_bytes(), collection="Heat")
        config = with_sources(config, case.mix, collection="Heat")  # type: ignore[arg-type]
    standin.set_answer_words(config.words_limit())
    standin.script = new_queries
    deps: dict[str, Any] = {}
    if fakes:
        from tests.fakes import Fakes

        deps = Fakes(standin).deps(config)
    began = time.perf_counter()
    run_id = run_research(QUESTION, store=store, config=config, credentials=credentials, **deps)
    run = store.get_run(run_id)
    if run is not None and run.status == "waiting" and config.review_plan:
        plan.approve(store, run_id)  # the person approves the plan as it is
        run = resume(run_id, store=store, credentials=credentials, **deps)
    seconds = time.perf_counter() - began
    usage = store.usage_totals(run_id)
    actual = {"model_calls": usage.calls, "input_tokens": usage.input_tokens,
              "output_tokens": usage.output_tokens, "cost_usd": usage.cost_usd,
              # Searches of the person's documents stay in-process: its queries, and pre-flight's.
              "searches": sum(standin.count(api) for api in SEARCH_APIS)
              + sum(1 for q in store.get_queries(run_id) if q.provider == "documents")
              + int(config.uses_documents()),
              "pages_fetched": standin.count("pages")}
    behaviour = observed(store, run_id, config, standin.requests)
    measured = Measured(name, config, run.status if run else "missing", actual, estimate(config),
                        estimate(config, behaviour=behaviour), behaviour, seconds)
    if fakes:
        deps["fetcher"].close()
    store.close()
    return measured


def within(estimated: float, actual: float, tolerance: float) -> bool:
    return abs(estimated - actual) <= tolerance * max(actual, 1e-9)


def table(results: Sequence[Measured]) -> list[str]:
    """One block per case: figure, shown (range), at this run's behaviour, actual, verdict."""
    lines = []
    for m in results:
        lines.append(f"\n{m.name} ({m.status}, {m.seconds:.0f} s): {m.config.parameters_line()}")
        lines.append(f"  {'figure':<14} {'shown':>10} {'range':>17} {'at its behaviour':>17} "
                     f"{'actual':>10}  within")
        for figure in FIGURES:
            shown, at = getattr(m.shown, figure), getattr(m.at_behaviour, figure)
            actual = m.actual[figure]
            ranges = {"model_calls": m.shown.calls_range, "cost_usd": m.shown.cost_range}
            low, high = ranges.get(figure, (None, None))
            span = f"{_num(low)}-{_num(high)}" if low is not None else ""
            ok = within(at, actual, ESTIMATE_TOLERANCE[figure])
            lines.append(f"  {figure:<14} {_num(shown):>10} {span:>17} {_num(at):>17} "
                         f"{_num(actual):>10}  {'yes' if ok else 'NO'} "
                         f"(±{ESTIMATE_TOLERANCE[figure]:.0%})")
        lines.append("  its behaviour: " + ", ".join(
            f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}"
            for k, v in vars(m.behaviour).items()))
    return lines


def _num(value: float | None) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value < 100 and not float(value).is_integer():
        return f"{value:.3f}"
    return f"{round(value):,}"


def main(argv: Sequence[str] | None = None, say: Callable[[str], None] = print) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.estimates", description=__doc__.split(
        "\n\n")[0])
    parser.add_argument("--cases", default=",".join(CASES),
                        help=f"comma-separated, from: {', '.join(CASES)}")
    parser.add_argument("--fakes", action="store_true",
                        help="the in-process fakes instead of real HTTP (the counts are the same)")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.cases.split(",") if n.strip()]
    unknown = [n for n in names if n not in CASES]
    if unknown:
        parser.error(f"unknown case(s): {', '.join(unknown)}")
    from tests.standin import StandinServer

    standin = StandinServer().start()
    results = []
    try:
        with tempfile.TemporaryDirectory(prefix="drs-estimates-") as tmp:
            for name in names:
                results.append(run_case(name, CASES[name], standin, Path(tmp), fakes=args.fakes))
                for line in table(results[-1:]):
                    say(line)
    finally:
        standin.stop()
    misses = [(m.name, f) for m in results for f in FIGURES
              if not within(getattr(m.at_behaviour, f), m.actual[f], ESTIMATE_TOLERANCE[f])]
    say(f"\n{len(results)} runs; figures outside the tolerance: "
        + (", ".join(f"{n} {f}" for n, f in misses) or "none"))
    return 0


def bench_estimates(row: Callable[..., Any], say: Callable[[str], None]) -> list[Any]:
    """The `estimates` section of `python -m bench.benchmark`: every case, a row per case
    with the figures outside the tolerance."""
    from tests.standin import StandinServer

    standin = StandinServer().start()
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="drs-estimates-") as tmp:
            for name, case in CASES.items():
                measured = run_case(name, case, standin, Path(tmp))
                for line in table([measured]):
                    say(line)
                misses = [f for f in FIGURES if not within(
                    getattr(measured.at_behaviour, f), measured.actual[f], ESTIMATE_TOLERANCE[f])]
                rows.append(row("estimates", f"{name}: model calls estimated / made",
                                f"{measured.at_behaviour.model_calls} / "
                                f"{measured.actual['model_calls']}",
                                "every figure within its tolerance",
                                "ok" if not misses else "off: " + ", ".join(misses)))
    finally:
        standin.stop()
    return rows


if __name__ == "__main__":
    sys.exit(main())
