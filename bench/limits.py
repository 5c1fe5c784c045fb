"""The `limits` section of the benchmark: full runs on the accounts people really have (issue 31).

Each scenario is a stand-in account or server limited as its provider documents it
(tests/standin/limits.py, tests/standin/local.py), and a full run (the standard preset, then
the quick one) in a child process against it, capped by a total time limit. Printed per run:
its status, wall time against the floor its limits imply, the rate-limit answers it received,
its failed model calls and steps, and the waiting lines it showed. See bench/README.md.

The floor is worked out from what the stand-in answered:
  an account    the most of: tokens past the first minute's allowance / tokens-per-minute
                (OpenAI: prompt + completion; Gemini: input only) and calls past it /
                requests-per-minute, in minutes (the minute starts full);
  a local server  every answer one after another at its token rate (completion tokens / rate);
and, beside either, the searches at the search APIs' pace (arXiv one every 3 s, Semantic
Scholar one a second) when `--limits-search-pacing` is on (the default).
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing as mp
import queue
import re
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LLM_APIS = ("openai", "gemini")
WALL_TARGET = 1.3  # wall at most 1.3x the floor (issue 31, point 7)
SEARCH_PACE = {"arxiv": 3.0, "semanticscholar": 1.0}  # seconds between requests, as documented
# What says the run waits: today's retry lines, and any line that says it waits for a limit,
# a quota, its turn or a queue (the wording the engine will use is not fixed here).
_WAIT_WORDS = re.compile(r"\bwait", re.I)
_LIMIT_WORDS = re.compile(r"limit|quota|turn|queue|busy|rate", re.I)
_NOT_WAITING = frozenset({"waiting", "search_failed", "step_failed", "source_skipped", "error",
                          "cancelled", "completed"})  # "waiting": for the person


@dataclass(frozen=True)
class Scenario:
    key: str
    label: str
    provider: str                    # DEEP_RESEARCH_PROVIDER
    model: str
    account: dict[str, Any] = field(default_factory=dict)  # StandinServer.set_account
    local: dict[str, Any] | None = None                    # StandinServer.set_local_server

    def floor(self, answered: Sequence[dict[str, Any]]) -> tuple[float, str]:
        """The least time the limits allow for these answers (seconds) and which limit sets it."""
        if self.local is not None:
            rate = float(self.local["tokens_per_second"])
            tokens = sum(int(r.get("completion_tokens") or 0) for r in answered)
            parallel = int(self.local.get("parallel", 1))
            return tokens / rate / parallel, (f"{tokens:,} completion tokens at {rate:g} tokens/s, "
                                              f"{parallel} at a time")
        rpm, tpm = self.account.get("requests_per_minute"), self.account.get("tokens_per_minute")
        input_only = self.provider == "gemini"
        tokens = sum(_prompt_tokens(r) + (0 if input_only else int(r.get("completion_tokens") or 0))
                     for r in answered)
        # An account's minute starts full and refills continuously (tests/standin/limits.py):
        # what goes past the first minute's allowance takes its time at the refill rate.
        floors = [(0.0, "no limit")]
        if rpm:
            floors.append((max(0, len(answered) - rpm) / rpm * 60,
                           f"{len(answered)} calls at {rpm:,} a minute"))
        if tpm:
            what = "input tokens" if input_only else "tokens"
            floors.append((max(0, tokens - tpm) / tpm * 60, f"{tokens:,} {what} at {tpm:,} a minute"))
        return max(floors)


SCENARIOS = (
    Scenario("openai-tier1", "OpenAI tier 1, gpt-4.1 (500 RPM, 30,000 TPM)", "openai", "gpt-4.1",
             {"requests_per_minute": 500, "tokens_per_minute": 30_000}),
    Scenario("free-tier", "Gemini free tier, gemini-2.5-flash (10 RPM, 250,000 TPM, 250 RPD)",
             "gemini", "gemini-2.5-flash",
             {"requests_per_minute": 10, "tokens_per_minute": 250_000, "requests_per_day": 250,
              "free_tier": True}),
    Scenario("local", "Local server, Ollama (one answer at a time, 30 tokens/s, 8,192-token "
             "window)", "openai", "llama3.1:8b", {},
             {"kind": "ollama", "parallel": 1, "tokens_per_second": 30.0, "context_tokens": 8192}),
)


def _prompt_tokens(request: dict[str, Any]) -> int:
    """A logged model request's prompt as the stand-in counts it for limits (characters / 4)."""
    from tests.standin.server import _prompt_chars

    return max(1, _prompt_chars(request["api"], request["json"]) // 4)


def _answered(request: dict[str, Any]) -> bool:
    return 200 <= int(request.get("status") or 0) < 300 and not request.get("client_gone")


def failed_calls(requests: Sequence[dict[str, Any]]) -> int:
    """Model calls that never got an answer: a retried call sends the same body again, so the
    requests are grouped by body, and a group with no answer the client took is one failed call."""
    calls: dict[str, bool] = {}
    for r in requests:
        if r["api"] in LLM_APIS:
            body = r["path"] + json.dumps(r["json"], sort_keys=True)
            calls[body] = calls.get(body, False) or _answered(r)
    return sum(1 for ok in calls.values() if not ok)


def says_it_waits(kind: str, message: str) -> bool:
    """An event or log line that tells the person the run waits (for a limit, not for them;
    not a failure that quotes a provider's "please wait")."""
    if kind == "retrying":
        return True
    return kind not in _NOT_WAITING and bool(_WAIT_WORDS.search(message)
                                             and _LIMIT_WORDS.search(message))


class _WaitLines(logging.Handler):
    """Counts the child's log lines that say the run waits (what the log and terminal show)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if says_it_waits("", record.getMessage()):
                self.count += 1
        except Exception:  # noqa: BLE001 - counting must never break the run
            pass


def limits_child(env: dict[str, str], db_path: str, preset: str, question: str, out: Any) -> None:
    """One full run in a fresh process (spawned): its figures, read from its store."""
    try:
        lines = _WaitLines()
        logging.getLogger().addHandler(lines)
        logging.getLogger("research").setLevel(logging.INFO)
        from research import Credentials, build_config, run_research
        from storage import Store

        credentials = Credentials.from_env(env)
        store = Store(db_path, secrets=credentials.secrets())
        config = build_config(env=env, preset=preset)
        began = time.perf_counter()
        run_id = run_research(question, store=store, config=config, credentials=credentials)
        wall = time.perf_counter() - began
        out.put({**_read_run(store, run_id), "wall": wall, "log_wait_lines": lines.count,
                 "parameters": config.parameters_line()})
        store.close()
    except Exception:  # noqa: BLE001 - reported by the parent
        out.put({"crash": traceback.format_exc()})


def _read_run(store: Any, run_id: str) -> dict[str, Any]:
    run = store.get_run(run_id)
    usage = store.usage_totals(run_id)
    events = store.get_events(run_id)
    waits = [e for e in events if says_it_waits(e.type, e.message)]
    return {
        "run_id": run_id, "status": run.status if run else None,
        "error": run.error if run else None, "calls": usage.calls,
        "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
        "wait_lines": len(waits), "wait_examples": list(dict.fromkeys(e.message for e in waits))[:3],
        "failed_steps": sum(1 for e in events if e.type == "step_failed"),
        "failed_searches": sum(1 for e in events if e.type == "search_failed"),
    }


def _cut_off(db_path: Path) -> dict[str, Any]:
    """What a run stopped at the cap left in its store."""
    from storage import Store

    store = Store(str(db_path))
    try:
        runs = store.list_runs(limit=1)
        return _read_run(store, runs[0].id) if runs else {"status": "not started"}
    finally:
        store.close()


@dataclass(frozen=True)
class Kit:
    """The benchmark's helpers (see bench/latency.py's Kit for why they are passed in)."""
    real_main: Callable[[], Any]
    row: Callable[..., Any]
    say: Callable[[str], None]


def one_run(args: argparse.Namespace, tmp: Path, kit: Kit, scenario: Scenario,
            preset: str, question: str) -> dict[str, Any]:
    from tests.standin import StandinServer

    server = StandinServer().start()
    cap = float(args.limits_timeout)
    db_path = tmp / f"limits-{scenario.key}-{preset}.db"
    try:
        server.set_latency(model=args.limits_latency_model, search=0.3, page=0.2,
                           tokens_per_second=args.limits_tokens_per_second)
        if scenario.account:
            server.set_account(scenario.provider, **scenario.account)
        if scenario.local is not None:
            server.set_local_server(model=scenario.model, **scenario.local)
        if args.limits_search_pacing:
            server.set_search_limit("arxiv", min_interval=SEARCH_PACE["arxiv"], connections=1,
                                    status=503)
            server.set_search_limit("semanticscholar", min_interval=SEARCH_PACE["semanticscholar"])
        env = {**server.env(), "DEEP_RESEARCH_PROVIDER": scenario.provider,
               "DEEP_RESEARCH_MODEL": scenario.model,
               "DEEP_RESEARCH_TOTAL_TIMEOUT_MS": str(int(cap * 1000))}
        ctx = mp.get_context("spawn")
        out = ctx.Queue()
        proc = ctx.Process(target=limits_child, args=(env, str(db_path), preset, question, out),
                           name=f"bench-limits-{scenario.key}", daemon=True)
        began = time.perf_counter()
        with kit.real_main():
            proc.start()
        try:
            result = out.get(timeout=cap + 60)  # the run's own total limit, then some grace
        except queue.Empty:
            proc.kill()
            result = {**_cut_off(db_path), "wall": time.perf_counter() - began,
                      "log_wait_lines": None, "cut_off": True}
        proc.join(timeout=30)
        requests = list(server.requests)
    finally:
        server.stop()
    if "crash" in result:
        raise RuntimeError("the engine run crashed:\n" + result["crash"])
    return {**result, "requests": requests}


def figures(scenario: Scenario, run: dict[str, Any], search_pacing: bool) -> dict[str, Any]:
    """The run's limit figures from the stand-in's request log."""
    requests = run["requests"]
    llm = [r for r in requests if r["api"] in LLM_APIS]
    answered = [r for r in llm if _answered(r)]
    floor, why = scenario.floor(answered)
    if search_pacing:
        for api, pace in SEARCH_PACE.items():
            taken = sum(1 for r in requests if r["api"] == api and _answered(r))
            if taken and (taken - 1) * pace > floor:
                floor, why = (taken - 1) * pace, f"{taken} {api} searches, one every {pace:g} s"
    wall = float(run["wall"])
    lines = int(run.get("wait_lines") or 0)
    return {
        "floor": floor, "why": why, "wall": wall,
        "ratio": wall / floor if floor else float("inf"),
        "llm_requests": len(llm), "answered": len(answered),
        "rate_limited": sum(1 for r in llm if r.get("rate_limited") or r.get("status") == 429),
        "search_refused": sum(1 for r in requests
                              if r["api"] not in LLM_APIS and r.get("rate_limited")),
        "failed_calls": failed_calls(requests),
        "client_gone": sum(1 for r in llm if r.get("client_gone")),
        "refused_context": sum(1 for r in llm if r.get("status") == 400),
        "over_window": (sum(1 for r in llm if _prompt_tokens(r) > scenario.local["context_tokens"])
                        if scenario.local is not None else 0),
        "wait_lines": lines,
        "wait_minutes": max(1.0, wall / 60),
    }


def report(kit: Kit, scenario: Scenario, preset: str, run: dict[str, Any],
           f: dict[str, Any]) -> list[Any]:
    say, Row = kit.say, kit.row  # noqa: N806 - the benchmark's row type
    done = run.get("status") == "completed"
    status = str(run.get("status")) + (" (cut off at the time limit)" if run.get("cut_off") else "")
    say(f"  [{scenario.key} / {preset}] {scenario.label}")
    if run.get("parameters"):
        say(f"    {run['parameters']}")
    say(f"    status {status}" + (f": {run['error']}" if run.get("error") else ""))
    say(f"    wall {f['wall']:.1f} s; floor {f['floor']:.1f} s ({f['why']}); ratio "
        f"{f['ratio']:.2f} (target <= {WALL_TARGET})")
    say(f"    model requests {f['llm_requests']} ({f['answered']} answered, {f['rate_limited']} "
        f"rate-limit answers, {f['refused_context']} refused for length, {f['over_window']} over "
        f"the window, {f['client_gone']} given up by the client); failed model calls {f['failed_calls']}; failed steps "
        f"{run.get('failed_steps', 0)}; failed searches {run.get('failed_searches', 0)}; search "
        f"requests refused for pace {f['search_refused']}")
    say(f"    waiting lines shown {f['wait_lines']} in the events, "
        f"{run.get('log_wait_lines', '?')} in the log (target <= minutes waited, "
        f"~{f['wait_minutes']:.0f})" + (f"; e.g. {run['wait_examples'][0]!r}"
                                         if run.get("wait_examples") else ""))
    say(f"    tokens recorded by the run: prompt {int(run.get('input_tokens') or 0):,}, "
        f"completion {int(run.get('output_tokens') or 0):,}; model calls {run.get('calls', 0)}")
    name = f"{scenario.key} / {preset}"
    wall_verdict = ("OK" if f["ratio"] <= WALL_TARGET else "OVER") if done else "n/a: failed"
    return [
        Row("limits", f"{name}: status", status, "completed", "OK" if done else "FAIL"),
        Row("limits", f"{name}: wall / floor", f"{f['wall']:.0f} s / {f['floor']:.0f} s "
            f"({f['ratio']:.2f}x)", f"<= {WALL_TARGET}x", wall_verdict),
        Row("limits", f"{name}: rate-limit answers", str(f["rate_limited"])),
        Row("limits", f"{name}: failed model calls", str(f["failed_calls"]), "0",
            "OK" if f["failed_calls"] == 0 else "FAIL"),
        Row("limits", f"{name}: waiting lines", str(f["wait_lines"]),
            f"<= {f['wait_minutes']:.0f}",
            "OK" if f["wait_lines"] <= f["wait_minutes"] else "OVER"),
    ]


def summary(kit: Kit, done: list[tuple[Scenario, str, dict[str, Any], dict[str, Any]]]) -> None:
    """The section's table, as it goes into a closing note."""
    say = kit.say
    say("")
    say("  | account | preset | status | wall / floor | rate-limit answers | failed calls | "
        "waiting lines |")
    say("  | --- | --- | --- | --- | --- | --- | --- |")
    for scenario, preset, run, f in done:
        status = str(run.get("status")) + (" (cut off)" if run.get("cut_off") else "")
        say(f"  | {scenario.label} | {preset} | {status} | {f['wall']:.0f} s / {f['floor']:.0f} s "
            f"({f['ratio']:.2f}x) | {f['rate_limited']} | {f['failed_calls']} | {f['wait_lines']} |")
    say("")


def bench_limits(args: argparse.Namespace, tmp: Path, kit: Kit, question: str) -> list[Any]:
    wanted = [s.strip() for s in args.limits_scenarios.split(",") if s.strip()]
    known = {s.key: s for s in SCENARIOS}
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise ValueError(f"unknown limits scenario(s) {', '.join(unknown)}; choose from "
                         f"{', '.join(known)}")
    presets = [p.strip() for p in args.limits_presets.split(",") if p.strip()]
    rows: list[Any] = []
    done = []
    for key in wanted:
        for preset in presets:
            scenario = known[key]
            run = one_run(args, tmp, kit, scenario, preset, question)
            f = figures(scenario, run, args.limits_search_pacing)
            rows += report(kit, scenario, preset, run, f)
            done.append((scenario, preset, run, f))
    summary(kit, done)
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("Limits (full runs on rate-limited accounts and a local server)")
    group.add_argument("--limits-scenarios", default=",".join(s.key for s in SCENARIOS),
                       help="comma-separated, from " + ", ".join(s.key for s in SCENARIOS)
                            + " (default: all)")
    group.add_argument("--limits-presets", default="standard,quick",
                       help="the run presets, each a run per scenario (default standard,quick)")
    group.add_argument("--limits-timeout", type=float, default=1800.0,
                       help="each run's total time limit, seconds (default 1800)")
    group.add_argument("--limits-latency-model", type=float, default=0.5,
                       help="seconds every hosted model answer takes before generation (default 0.5)")
    group.add_argument("--limits-tokens-per-second", type=float, default=80.0,
                       help="a hosted model's generation rate (default 80; the local server "
                            "writes at its own 30)")
    group.add_argument("--no-limits-search-pacing", dest="limits_search_pacing",
                       action="store_false",
                       help="let arXiv and Semantic Scholar answer at any pace")
