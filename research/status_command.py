"""`python -m research status RUN_ID` and `python -m research list`: a run's state, and the
runs of the library, in the words the dashboard uses (research/voice.py).

    python -m research status RUN_ID       # its label and what it means, sources, cost, warnings
    python -m research list [WORDS] [--limit 20] [--status failed]

Read-only: nothing is started, resumed or marked here. Whether anything executes a run is
asked of the door to runs (research/runs, joined to watch only), as the dashboard, the HTTP
API and the MCP server ask it: a run stored as queued that nothing holds is shown as
interrupted everywhere, and a queued run's place in the queue is said.
"""

from __future__ import annotations

import argparse
import sys

from research import voice
from research.core.prompts import strip_control
from research.core.records import Run
from research.core.settings import command_owner, effective_env
from research.runs import ACTIVE, Runs, RunStatus, status_of
from storage import DatabaseUnavailableError, DatabaseValueError, Store, chosen_db

LIST_LIMIT = 20
QUESTION_CHARS = 80


def parser(command: str) -> argparse.ArgumentParser:
    if command == "status":
        p = argparse.ArgumentParser(prog="python -m research status",
                                    description="A run's state in plain words.")
        p.add_argument("run_id", metavar="RUN_ID")
    else:
        p = argparse.ArgumentParser(prog="python -m research list",
                                    description="Your runs, newest first.")
        p.add_argument("words", nargs="*", help="only runs whose question has these words")
        p.add_argument("--limit", type=int, default=LIST_LIMIT, help="at most this many")
        p.add_argument("--status", choices=sorted(set(voice.LABELS) - {"missing", "retrying",
                                                                     "done"}),
                       help="only runs in this state")
    p.add_argument("--owner", help="whose runs (a team with sign-in; default "
                                   "DEEP_RESEARCH_OWNER, else everyone's)")
    p.add_argument("--db", help="database (default: DEEP_RESEARCH_DB or data/research.db)")
    return p


def main(command: str, argv: list[str]) -> int:
    args = parser(command).parse_args(argv)
    env = effective_env()
    owner = command_owner(args.owner, env)
    try:
        db = chosen_db(args.db, env)
        store = Store(db)
    except (DatabaseValueError, DatabaseUnavailableError) as exc:
        return _fail(str(exc))
    with store:
        runs = Runs(db, watch_only=True, env=lambda: env, store=store)
        try:
            return _answer(command, args, store, runs, owner)
        finally:
            runs.close()


def _answer(command: str, args: argparse.Namespace, store: Store, runs: Runs,
            owner: str | None) -> int:
    if command == "status":
        run = store.get_run(args.run_id.strip(), person=owner)
        if run is None:
            return _fail(f"There is no run with id {args.run_id!r}.")
        _print(describe(run, runs.status(run.id, person=owner)))
        return 0
    found = store.list_runs(search=" ".join(args.words).strip() or None, status=args.status,
                            limit=max(1, args.limit), person=owner)
    if not found:
        print("No runs yet." if not (args.words or args.status) else "No run matches.",
              file=sys.stderr)
    for run in found:
        _print(list_line(run, status_of(run, runs.is_alive(run.id))))
    return 0


def describe(run: Run, now: RunStatus) -> str:
    """A run for `status`: its question, its status line (as it stands now: `now`), its place
    in the queue or the step it is on, what it gathered and cost."""
    lines = [voice.one_line(run.question, 300), voice.status_line(run, now.status)]
    if now.queue is not None:
        lines.append(f"Place in the queue: {now.queue.describe()}")
    elif now.status in ACTIVE and now.step:
        lines.append(f"Now: {voice.one_line(now.step, 120)} ({now.progress}% done).")
    totals = run.totals
    facts = [f"run {run.id}", run.created_at[:16].replace("T", " ") + " UTC"]
    if run.preset:
        facts.append(run.preset.capitalize())
    facts.append(f"{totals.sources or 0} sources")
    facts.append(f"cost {voice.money(totals.cost_usd or 0.0)}")
    lines.append(", ".join(facts) + ".")
    lines += [f"Warning: {voice.plain_error(w)}" for w in run.warnings[1:]]
    return "\n".join(lines)


def list_line(run: Run, status: str | None = None) -> str:
    """One run for `list`: id, label (of `status`, the status to show, when it differs from
    the stored one), date, preset, sources, cost and question."""
    totals = run.totals
    return "  ".join([
        run.id, f"{voice.run_label(run, status):<23}", run.created_at[:16].replace("T", " "),
        f"{run.preset.capitalize():<10}", f"{totals.sources or 0:>3} sources",
        f"{voice.money(totals.cost_usd or 0.0):>11}",
        voice.one_line(run.question, QUESTION_CHARS)])


def _print(text: str) -> None:
    """Questions and errors carry model and web text, which must not drive the terminal."""
    print(strip_control(text), flush=True)


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2
