"""What `python -m research` says to, and asks of, the person at the terminal: progress lines,
one-line warnings, and the questions a waiting run has (clarifying questions, the plan to
approve, the next round's branches). Everything printed is stripped of terminal control: plan
titles, questions and errors carry model and web text, which must not drive the terminal."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Sequence
from typing import Any

from research import (
    answer_clarification,
    answer_steering,
    approve_plan,
    pending_clarification,
    pending_steering,
    voice,
)
from research.core.errors import ConfigError
from research.core.events import Event, SourceFound
from research.core.progress import percent
from research.core.prompts import strip_control
from research.core.records import JsonObject, Subtopic
from storage import Store


def quiet_logging() -> None:
    """Warnings on stderr as one line each: a person at a terminal gets no tracebacks."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine("%(levelname)s: %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler])


class _OneLine(logging.Formatter):
    def formatException(self, ei: Any) -> str:  # noqa: N802 - logging's name
        return ""

    def format(self, record: logging.LogRecord) -> str:
        record.exc_text = ""
        return strip_control(super().format(record).rstrip())


def answer_waiting(store: Store, run_id: str, args: argparse.Namespace) -> bool:
    """Give a waiting run what it waits for, from flags or by asking. False: cannot."""
    asked = pending_clarification(store, run_id)
    interactive = sys.stdin.isatty()
    if asked:
        if args.answer:
            answer_clarification(store, run_id, args.answer)
            args.answer = []
            return True
        if not interactive:
            return False
        say("Before starting, a few questions (press Enter to skip one):")
        answers = [input(strip_control(f"{i}. {q}\n> "))
                   for i, q in enumerate(asked["questions"], start=1)]
        answer_clarification(store, run_id, answers)
        return True
    if pending_steering(store, run_id) is not None:
        return _steer(store, run_id, args)
    plan = store.get_plan(run_id) or []
    if args.approve_plan:
        approve_plan(store, run_id)
        return True
    if not interactive:
        return False
    say(_plan_text(plan))
    reply = input("Start research with this plan? [Y/n] ").strip().lower()
    if reply in ("", "y", "yes"):
        approve_plan(store, run_id)
        return True
    return False


def _steer(store: Store, run_id: str, args: argparse.Namespace) -> bool:
    """Follow the numbered proposals the flags name (or say enough); False: no choice given."""
    if not (args.follow.strip() or args.add or args.enough):
        return False
    try:
        follow = [int(n) for n in args.follow.replace(" ", "").split(",") if n]
    except ValueError:
        raise ConfigError(f"--follow takes proposal numbers separated by commas, e.g. 1,3 "
                          f"(got {args.follow!r}).") from None
    answer_steering(store, run_id, follow=follow, add=list(args.add), enough=args.enough)
    args.follow, args.add, args.enough = "", [], False
    return True


def _steer_text(asked: JsonObject) -> str:  # a JSON column's value
    lines = [f"Round {asked['round']} is done. The planner proposes to explore next:"]
    lines += [f"  {p['n']}. {strip_control(p['title'])}"
              + (f" ({strip_control(p['why'])[:200]})" if p.get("why") else "")
              for p in asked["proposals"]] or ["  (no new branches)"]
    return "\n".join(lines)


def _plan_text(plan: Sequence[Subtopic]) -> str:
    lines = ["The plan:"]
    for i, sub in enumerate(plan, start=1):
        lines.append(f"  {i}. {sub.title}")
        lines += [f"       - {q}" for q in sub.questions]
    return "\n".join(lines)


def waiting_message(store: Store, run_id: str) -> str:
    proposals = pending_steering(store, run_id)
    if proposals is not None:
        return (f"{_steer_text(proposals)}\nContinue with: python -m research --resume {run_id} "
                f"--follow 1,3 [--add \"a branch of your own\" ...], or --enough to write the "
                "report now.")
    asked = pending_clarification(store, run_id)
    if asked:
        listed = " ".join(f"({i}) {q}" for i, q in enumerate(asked["questions"], start=1))
        return (f"Run {run_id} needs your answers first: {listed} Continue with: "
                f"python -m research --resume {run_id} --answer \"...\" (once per question).")
    return (f"Run {run_id} waits for you to review its plan (in the dashboard, or continue "
            f"as planned with: python -m research --resume {run_id} --approve-plan).")


def say(text: str) -> None:
    """Print a line for the person on stderr, stripped of terminal control: plan titles,
    questions and errors carry model and web text, which must not drive the terminal."""
    print(strip_control(text), file=sys.stderr, flush=True)


class Printer:
    """Progress lines on stderr: time, percent and the event's message."""

    def __init__(self, store: Store, *, quiet: bool) -> None:
        self.store = store
        self.quiet = quiet
        self.started = time.monotonic()

    def __call__(self, event: Event) -> None:
        if self.quiet or isinstance(event, SourceFound):  # one line per source is too many
            return
        run = self.store.get_run(event.run_id)
        pct = percent(run, self.store.get_steps(event.run_id)) if run else 0  # 0: deleted
        elapsed = int(time.monotonic() - self.started)
        say(f"[{elapsed // 60:02d}:{elapsed % 60:02d} {pct:3d}%] "
            f"{voice.plain_error(event.message)}")  # the dashboard's words (research/voice.py)
