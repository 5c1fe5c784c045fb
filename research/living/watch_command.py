"""`python -m research watch ...`: watched topics from the command line, as in the Library.

    python -m research watch RUN_ID --every weekly [--max-cost 0.5] [--threshold 10]
    python -m research watch list
    python -m research watch pause|resume|stop WATCH_ID

The updates themselves run on the job engine's schedule wherever runs execute (the
dashboard's embedded worker or `python -m research worker`; research/living/watches.py).
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime

from research import voice
from research.core.settings import command_owner, effective_env
from research.living import watches
from storage import DatabaseUnavailableError, DatabaseValueError, Store, chosen_db
from storage import watches as watchstore

ACTIONS = ("list", "pause", "resume", "stop")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m research watch",
        description="Watch a finished run's topic: it is updated on a schedule, and you are "
                    "told only when something changed.")
    p.add_argument("target", metavar="RUN_ID|list|pause|resume|stop")
    p.add_argument("watch_id", nargs="?", metavar="WATCH_ID",
                   help="the watch to pause, resume or stop")
    p.add_argument("--every", choices=watchstore.EVERY, default="weekly",
                   help="how often to update (default weekly)")
    p.add_argument("--max-cost", type=float, metavar="USD",
                   help="budget for each update (default: the run's own cap)")
    p.add_argument("--threshold", type=float, default=0.0, metavar="PERCENT",
                   help="tell and keep an update only when more than this share of the "
                        "report's claims changed (default 0: any change)")
    p.add_argument("--owner", help="whose watches (a team with sign-in; default "
                                   "DEEP_RESEARCH_OWNER, else everyone's)")
    p.add_argument("--db", help="database (default: DEEP_RESEARCH_DB or data/research.db)")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    env = effective_env()
    owner = command_owner(args.owner, env)
    try:
        store = Store(chosen_db(args.db, env))
    except (DatabaseValueError, DatabaseUnavailableError) as exc:
        return _fail(str(exc))
    with store:
        if args.target in ACTIONS:
            return _act(store, args.target, args.watch_id, owner)
        try:
            watch = watches.watch(store, args.target, every=args.every, now=datetime.now(UTC),
                                  person=owner, cost_cap=args.max_cost,
                                  threshold=args.threshold / 100)
        except ValueError as exc:
            return _fail(str(exc))
        print(f"Watching run {args.target} {args.every}; the first update is due "
              f"{_when(watch.next_at)}.", file=sys.stderr)
        print(watch.id)
    return 0


def _act(store: Store, action: str, watch_id: str | None, owner: str | None) -> int:
    if action == "list":
        for watch in watchstore.list_watches(store, person=owner):
            run = store.get_run(watch.run_id)
            question = " ".join((run.question if run else "(report deleted)").split())[:70]
            state = "paused" if watch.state == "paused" else f"next {_when(watch.next_at)}"
            print(f"{watch.id}  {watch.every:<7}  {state:<27}  {question}"
                  + (f"  [{voice.plain_error(watch.last_result)}]" if watch.last_result else ""))
        return 0
    if not watch_id:
        return _fail(f"Give the watch to {action}: python -m research watch {action} WATCH_ID "
                     "(see python -m research watch list).")
    if action == "pause":
        done = watchstore.set_state(store, watch_id, "paused", person=owner)
    elif action == "resume":
        done = watches.resume_watch(store, watch_id, now=datetime.now(UTC), person=owner)
    else:
        done = watchstore.remove_watch(store, watch_id, person=owner)
    if not done:
        return _fail(f"There is no watch with id {watch_id!r}.")
    print({"pause": "Paused.", "resume": "Resumed.", "stop": "Stopped; its reports are kept."}
          [action], file=sys.stderr)
    return 0


def _when(stamp: str) -> str:
    return f"{stamp[:10]} {stamp[11:16]} UTC"


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2
