"""Quality benchmark: DeepResearch Bench's tasks through our pipeline, scored as its leaderboard
scores them (RACE, FACT) plus the share of cited claims an independent judge finds supported.

    .venv/bin/python -m bench.quality --preset quick --tasks 4 --lang en
    .venv/bin/python -m bench.quality --engines openai-deep-research --yes --max-cost 20

Each task is one research run through the one door (research.runs.inline), with the person's
configured providers and keys (as `python -m research` reads them), at the chosen preset; the
hosted engines asked for run the same tasks beside it. Before spending it shows the estimate
(research.estimate, plus the judges' calls) and asks, unless --yes; --max-cost refuses a larger
estimate and stops starting tasks once the spend reaches it. Everything lands in the results
folder (bench/quality_results.py); running the same command again skips what is done and
resumes a run that was cut off. The README's "Quality benchmark" section says how to read it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from bench.quality_claims import check_claims
from bench.quality_data import (
    DEFAULT_LANG,
    DEFAULT_TASKS,
    DataUnavailable,
    Task,
    fetch_files,
    load,
    pick,
)
from bench.quality_fact import CitedStatement, Pages, fact_check
from bench.quality_judge import DEFAULT_FACT_JUDGE, DEFAULT_RACE_JUDGE, Judge, JudgeSpec
from bench.quality_race import judge_race, race_score
from bench.quality_results import Results, summarise, table, write_json, write_raw_data
from research.cli import run_config
from research.core.config import Credentials, ResearchConfig
from research.core.errors import ConfigError, ResearchError, redact
from research.core.events import Event
from research.core.settings import effective_env, prices_path
from research.engines import HOSTED_ENGINES
from research.estimate import estimate
from research.export.formats import export_run
from research.llm.pricing import PriceTable
from research.phases.start.preflight import check_configuration
from research.runs.inline import resume, run_research
from research.untrusted.fetch import Fetcher, FetchLimits
from storage import TERMINAL_STATUSES, Store

PIPELINE = "pipeline"
CHECKING_ROLES = ("verifier", "auditor", "critic")  # the run's own checks of its claims
# What the judges read and write per task, in tokens (for the estimate): RACE reads the report,
# a reference report (~5,000 words) and ~25 criteria, and scores each; FACT reads the report
# once, then each cited page (a cut page of ~10,000 tokens, about 15 per report).
RACE_CALL = (9_000, 4_000)
FACT_CALLS = (15 * 10_000, 15 * 300)
CLAIMS_CALLS = (6 * 3_000, 6 * 200)
TOKENS_PER_WORD = 1.4


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.quality",
        description="Run DeepResearch Bench's tasks through the pipeline and score the reports "
                    "as its leaderboard does (RACE, FACT), plus the share of supported claims.")
    p.add_argument("--preset", choices=["quick", "standard", "deep", "exhaustive"],
                   default="standard", help="the runs' preset (default standard)")
    p.add_argument("--subtopics", type=int, default=None,
                   help="subtopics per run, instead of the preset's")
    p.add_argument("--sources", type=int, default=None,
                   help="sources kept per subtopic, instead of the preset's")
    p.add_argument("--tasks", type=int, default=DEFAULT_TASKS,
                   help=f"how many tasks of the fixed slice (default {DEFAULT_TASKS})")
    p.add_argument("--lang", choices=["en", "zh", "all"], default=DEFAULT_LANG,
                   help="the tasks' language; 'all' alternates English and Chinese")
    p.add_argument("--engines", default="",
                   help="hosted engines to run beside the pipeline, comma-separated: "
                        + ", ".join(HOSTED_ENGINES))
    p.add_argument("--no-pipeline", action="store_true",
                   help="only the hosted engines given with --engines")
    p.add_argument("--judge", default=DEFAULT_RACE_JUDGE,
                   help=f"RACE's judge as PROVIDER:MODEL (default {DEFAULT_RACE_JUDGE}, the "
                        "benchmark's)")
    p.add_argument("--fact-judge", default=DEFAULT_FACT_JUDGE,
                   help=f"FACT's judge (default {DEFAULT_FACT_JUDGE}, the benchmark's)")
    p.add_argument("--claims-judge", default="",
                   help="the supported-claims judge; must differ from the runs' verifier "
                        "(default: FACT's judge)")
    p.add_argument("--results", type=Path, default=None,
                   help="results folder (default data/quality/PRESET-LANG)")
    p.add_argument("--data", type=Path, default=None,
                   help="a folder with the benchmark's query.jsonl, criteria.jsonl and "
                        "reference.jsonl (default: downloaded once into a cache folder)")
    p.add_argument("--db", default=None, help="the runs' database (default RESULTS/research.db)")
    p.add_argument("--max-cost", type=float, default=None,
                   help="refuse an estimate above this many US dollars, and start no task once "
                        "this much is spent")
    p.add_argument("--yes", action="store_true", help="do not ask before spending")
    return p


@dataclass
class Bench:
    """One invocation: what to run, where it goes, and who judges."""

    tasks: list[Task]
    systems: dict[str, ResearchConfig]
    results: Results
    store: Store
    credentials: Credentials
    prices: PriceTable
    race_judge: Judge
    fact_judge: Judge
    claims_judge: Judge
    say: Callable[[str], None]
    max_cost: float | None = None
    spent: float = 0.0

    def run_task(self, system: str, task: Task) -> bool:
        """The task's report for `system`, run or resumed; False if the run did not complete."""
        results = self.results
        folder = results.task(system, task.id)
        run = results.read(system, task.id, "run") or {}
        if run.get("status") == "completed" and (folder / "report.md").is_file():
            return True
        started = time.monotonic()
        run_id = str(run.get("run_id") or "")

        def on_event(event: Event) -> None:
            nonlocal run_id
            if not run_id:  # the run's first event: remember it, to resume if cut off
                run_id = event.run_id
                results.write(system, task.id, "run", {"run_id": run_id, "status": "running"})

        earlier = self.store.get_run(run_id) if run_id else None
        try:
            if earlier is not None and earlier.status != "completed":
                self.say(f"  resuming run {run_id}")
                resume(run_id, store=self.store, credentials=self.credentials,
                       on_event=on_event, prices=self.prices)
            elif earlier is None:  # (a run completed but not written down yet is only written)
                run_id = ""
                run_research(task.prompt, store=self.store, config=self._capped(system),
                             credentials=self.credentials, on_event=on_event, prices=self.prices)
        except KeyboardInterrupt:
            self._interrupted(run_id)
            raise
        except ResearchError as exc:
            self.say(f"  the run could not go on: {redact(str(exc), self.credentials.secrets())}")
        stored = self.store.get_run(run_id) if run_id else None
        status = stored.status if stored else "failed"
        cost = (stored.totals.cost_usd or 0.0) if stored else 0.0
        self.spent += cost - float(run.get("cost_usd") or 0)
        record = {"run_id": run_id, "status": status, "cost_usd": cost,
                  "seconds": (stored.duration_s if stored and stored.duration_s
                              else time.monotonic() - started),
                  "error": stored.error if stored else None, "preset": self.systems[system].preset}
        if stored and status == "completed":
            (folder / "report.md").write_bytes(export_run(self.store, run_id, "md"))
        elif stored:
            why = redact(stored.error or "no reason given", self.credentials.secrets())
            self.say(f"  the run ended {status}: {why} (run the same command again to resume it)")
        results.write(system, task.id, "run", record)
        return status == "completed"

    def _capped(self, system: str) -> ResearchConfig:
        """The system's config; under --max-cost, a run may spend at most what is left."""
        config = self.systems[system]
        if self.max_cost is None:
            return config
        left = max(0.01, self.max_cost - self.spent - self.judges_spent())
        if 0 < config.max_cost_usd <= left:  # 0: no cap of its own
            return config
        return config.model_copy(update={"max_cost_usd": round(left, 2)})

    def _interrupted(self, run_id: str) -> None:
        if not run_id:
            return
        self.store.close()  # Ctrl-C may have landed inside a transaction: a fresh connection
        run = self.store.get_run(run_id)
        if run is not None and run.status not in TERMINAL_STATUSES:
            self.store.set_run_status(run_id, "interrupted",
                                      error="The quality benchmark was stopped with Ctrl-C.")

    def score_task(self, system: str, task: Task) -> None:
        """RACE, FACT and the supported-claims figure, each unless already scored by this judge
        (the claims figure also needs FACT's statements from this FACT judge)."""
        results, tid = self.results, task.id
        report = (results.task(system, tid) / "report.md").read_text(encoding="utf-8")
        if results.scored(system, tid, "race", self.race_judge.spec.label) is None:
            before = self.race_judge.cost_usd
            judgement = judge_race(self.race_judge, task, report)
            results.write(system, tid, "race", {
                "judge": self.race_judge.spec.label, "judgement": judgement.model_dump(),
                "scores": race_score(judgement, task).to_json(),
                "judge_cost_usd": self.race_judge.cost_usd - before})
        fact = results.scored(system, tid, "fact", self.fact_judge.spec.label)
        claims = results.scored(system, tid, "claims", self.claims_judge.spec.label)
        if fact is not None and claims is not None and \
                claims.get("statements_by") == self.fact_judge.spec.label:
            return
        run_id = str((results.read(system, tid, "run") or {}).get("run_id") or "")
        with self._fetcher(system) as fetcher:
            pages = Pages.of_run(self.store, run_id, fetcher)
            if fact is None:
                before = self.fact_judge.cost_usd
                result, found = fact_check(self.fact_judge, report, pages)
                fact = {"judge": self.fact_judge.spec.label, "result": result.to_json(),
                        "pairs": [p.model_dump() for p in found],
                        "judge_cost_usd": self.fact_judge.cost_usd - before}
                results.write(system, tid, "fact", fact)
            before = self.claims_judge.cost_usd
            pairs = [CitedStatement(**p) for p in fact["pairs"]]
            checked = check_claims(self.claims_judge, pairs, pages)
            results.write(system, tid, "claims", {
                "judge": self.claims_judge.spec.label, "statements_by": self.fact_judge.spec.label,
                "result": checked.to_json(), "judge_cost_usd": self.claims_judge.cost_usd - before})

    def _fetcher(self, system: str) -> Fetcher:
        """For a cited page the run did not store (a hosted engine's, a page it skipped)."""
        config = self.systems[system]
        return Fetcher(FetchLimits(timeout_s=config.fetch_timeout_s,
                                   allow_private_hosts=config.allow_private_hosts,
                                   allowed_ports=config.allowed_ports))

    def judges_spent(self) -> float:
        return sum({id(j): j.cost_usd for j in (self.race_judge, self.fact_judge,
                                                 self.claims_judge)}.values())


def estimate_line(bench: Bench, todo: dict[str, list[Task]]) -> tuple[float, str]:
    """(dollars, the line shown before asking): the runs' estimate (research.estimate) and the
    judges' calls, for what is left to do."""
    runs_cost = judge_cost = 0.0
    minutes = 0.0
    unestimated = []
    for system, tasks in todo.items():
        if not tasks:
            continue
        config = bench.systems[system]
        words = config.report_max_words
        if config.engine == PIPELINE:
            guess = estimate(config, bench.prices)
            runs_cost += guess.cost_usd * len(tasks)
            minutes += guess.minutes * len(tasks)
        else:
            unestimated.append(system)
            words = 5_000
        report = int(words * TOKENS_PER_WORD)
        race_in, race_out = RACE_CALL[0] + report, RACE_CALL[1]
        for judge, (tin, tout) in ((bench.race_judge, (race_in, race_out)),
                                   (bench.fact_judge, (FACT_CALLS[0] + report, FACT_CALLS[1])),
                                   (bench.claims_judge, CLAIMS_CALLS)):
            judge_cost += bench.prices.cost(judge.spec.model, tin, tout) * len(tasks)
    total = runs_cost + judge_cost
    count = sum(len(t) for t in todo.values())
    line = (f"About ${total:.2f} for {count} task run(s): the runs ~${runs_cost:.2f}, the "
            f"judges ~${judge_cost:.2f}; about {minutes:.0f} min of runs, one after another.")
    if unestimated:
        line += (f" Not counted: what {', '.join(unestimated)} charges per report (a hosted "
                 "engine's price is not known ahead).")
    return total, line


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    env = effective_env()
    credentials = Credentials.from_env(env)
    secrets = credentials.secrets()
    try:
        return _main(args, env, credentials)
    except (ConfigError, DataUnavailable) as exc:
        print(redact(str(exc), secrets), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("Stopped. What is done is kept in the results folder; run the same command "
              "again to go on from there.", file=sys.stderr)
        return 130


def _main(args: argparse.Namespace, env: dict[str, str], credentials: Credentials) -> int:
    def say(text: str) -> None:
        print(text, flush=True)

    if args.tasks < 1:
        raise ConfigError("--tasks must be at least 1.")
    folder = args.data or fetch_files(_cache(env))
    tasks = pick(load(folder), args.tasks, args.lang)
    if not tasks:
        raise ConfigError(f"No task in {folder} matches --lang {args.lang}.")
    systems = _systems(args, env)
    for config in systems.values():
        check_configuration(config, credentials)
    results_folder = args.results or Path("data") / "quality" / f"{args.preset}-{args.lang}"
    results_folder.mkdir(parents=True, exist_ok=True)
    prices = PriceTable.load(prices_path(env))
    any_config = next(iter(systems.values()))
    race, fact = JudgeSpec.parse(args.judge), JudgeSpec.parse(args.fact_judge)
    claims = JudgeSpec.parse(args.claims_judge) if args.claims_judge else fact
    verifier = any_config.role("verifier")
    checkers = {(r.provider, r.model) for r in map(any_config.role, CHECKING_ROLES)}
    if (claims.provider, claims.model) in checkers:
        raise ConfigError(
            f"The supported-claims judge ({claims.label}) is the model that checks the runs' "
            "claims (their verifier): it must be another model, so a run is not graded by the "
            "model that checked it. Choose one with --claims-judge PROVIDER:MODEL.")
    judges: dict[JudgeSpec, Judge] = {}
    for spec in (race, fact, claims):
        if spec not in judges:
            try:
                judges[spec] = Judge(spec, any_config, credentials, prices)
            except ConfigError as exc:
                raise ConfigError(
                    f"The judge {spec.label} cannot be used: {exc} Or choose other judges with "
                    "--judge, --fact-judge and --claims-judge PROVIDER:MODEL (the figures then "
                    "compare only with figures made by the same judges).") from None
    store = Store(args.db or results_folder / "research.db", secrets=credentials.secrets())
    bench = Bench(tasks, systems, Results(results_folder), store, credentials, prices,
                  judges[race], judges[fact], judges[claims], say, max_cost=args.max_cost)
    write_json(results_folder / "settings.json", {
        "preset": args.preset, "lang": args.lang, "tasks": [t.id for t in tasks],
        "systems": list(systems), "race_judge": race.label, "fact_judge": fact.label,
        "claims_judge": claims.label, "verifier": f"{verifier.provider}/{verifier.model}"})
    todo = {s: [t for t in tasks if not _run_done(bench, s, t)] for s in systems}
    cost, line = estimate_line(bench, todo)
    say(f"DeepResearch Bench: {len(tasks)} task(s) ({args.lang}), preset {args.preset}, "
        f"systems {', '.join(systems)}; judges: RACE {race.label}, FACT {fact.label}, "
        f"claims {claims.label}. Results: {results_folder}")
    if any(todo.values()):
        say(line)
        if args.max_cost is not None and cost > args.max_cost:
            raise ConfigError(f"The estimate (${cost:.2f}) is above --max-cost "
                              f"${args.max_cost:.2f}; run fewer --tasks or a lighter --preset.")
        if not args.yes and not _agreed():
            say("Nothing was run.")
            return 1
    failed = 0
    for task in tasks:
        for system in systems:
            if args.max_cost is not None and bench.spent + bench.judges_spent() >= args.max_cost:
                say(f"Stopped: ${args.max_cost:.2f} (--max-cost) is spent. Run again with a "
                    "higher --max-cost to go on.")
                return _finish(bench, 1)
            say(f"[{system}] task {task.id} ({task.language}): {task.prompt[:80]}")
            if not bench.run_task(system, task):
                failed += 1
                continue
            try:
                bench.score_task(system, task)
            except ResearchError as exc:  # a judge failed: what is scored stays, the rest waits
                failed += 1
                say(f"  could not score it: {redact(str(exc), credentials.secrets())} (run the "
                    "same command again to score it)")
    return _finish(bench, 1 if failed else 0)


def _finish(bench: Bench, code: int) -> int:
    ids = [t.id for t in bench.tasks]
    rows = [replace(summarise(bench.results, s, ids), system=_label(s, c))
            for s, c in bench.systems.items()]
    text = table(rows)
    write_json(bench.results.folder / "summary.json", {
        "rows": [r.to_json() for r in rows], "judges": {
            "race": bench.race_judge.spec.label, "fact": bench.fact_judge.spec.label,
            "claims": bench.claims_judge.spec.label}})
    (bench.results.folder / "table.md").write_text(text + "\n", encoding="utf-8")
    for system in bench.systems:
        write_raw_data(bench.results, system, [(t.id, t.prompt) for t in bench.tasks])
    bench.say("")
    bench.say(text)
    bench.say(f"RACE judge {bench.race_judge.spec.label}; FACT judge "
              f"{bench.fact_judge.spec.label}; claims judge {bench.claims_judge.spec.label}. "
              "RACE is relative to the reference reports (50 = as good); compare only with "
              "figures made by the same judges (the leaderboard's changed on 2026-05-11). "
              "How to read the table: README, 'How good are the reports?'.")
    return code


def _label(system: str, config: ResearchConfig) -> str:
    """The table's first column: per preset and per model, as figures are compared."""
    if system != PIPELINE:
        return system
    lead = config.role("lead")
    return f"{system} ({config.preset}, {lead.provider}/{lead.model})"


def _systems(args: argparse.Namespace, env: dict[str, str]) -> dict[str, ResearchConfig]:
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    for engine in engines:
        if engine not in HOSTED_ENGINES:
            raise ConfigError(f"Unknown engine {engine!r}; known: {', '.join(HOSTED_ENGINES)}.")
    names = ([] if args.no_pipeline else [PIPELINE]) + engines
    if not names:
        raise ConfigError("Nothing to run: --no-pipeline needs --engines.")
    # Nobody is there to answer: a benchmark run never stops to ask (clarifying questions, the
    # plan, the next round), whatever the person's settings say for their own runs.
    unattended = {"require_clarification": False, "review_plan": False, "steer": False}
    return {name: run_config(env, preset=args.preset, engine=name, subtopics=args.subtopics,
                             sources=args.sources).model_copy(update=unattended)
            for name in names}


def _run_done(bench: Bench, system: str, task: Task) -> bool:
    run = bench.results.read(system, task.id, "run") or {}
    return bool(run.get("status") == "completed")


def _agreed() -> bool:
    if not sys.stdin.isatty():
        print("Not asking on a non-interactive input: add --yes to go ahead.", file=sys.stderr)
        return False
    return input("Go on? [y/N] ").strip().lower() in ("y", "yes")


def _cache(env: dict[str, str]) -> Path:
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "deep-research-studio" / "deep_research_bench"


if __name__ == "__main__":
    sys.exit(main())
