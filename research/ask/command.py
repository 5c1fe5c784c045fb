"""`python -m research ask RUN_ID "question"`: ask a finished run's report a question.

Prints the checked answer, its check line and the sources it cites (numbered as in the
report) on stdout; errors in plain words on stderr. A question the sources cannot answer
ends with the command that researches it: a follow-up run built on this one
(`python -m research --build-on RUN_ID "question"`, as the dashboard's "Research it" does).

    python -m research ask RUN_ID "Which of these is cheapest per kWh?" [--db PATH_OR_URL]
                           [--owner EMAIL]
    python -m research ask RUN_ID --list
"""

from __future__ import annotations

import argparse

from research.ask.answer import Answer, AskError, ask, conversation, cost_cap, own_run
from research.core.config import Credentials
from research.core.errors import ConfigError
from research.core.prompts import strip_control
from research.core.settings import command_owner, effective_env, prices_path
from research.llm.pricing import PriceTable
from research.terminal import say
from storage import (
    DatabaseUnavailableError,
    DatabaseValueError,
    Store,
    chosen_db,
)
from storage.db_value import redact_url

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m research ask",
        description="Ask a finished run's report a question: answered only from the run's "
                    "own sources, cited with the report's numbers, and checked.")
    p.add_argument("run_id", help="the finished run to ask")
    p.add_argument("question", nargs="?", help="your question (quote it)")
    p.add_argument("--list", action="store_true", help="print the run's questions and answers")
    p.add_argument("--db", help="file path or postgresql:// URL (default: DEEP_RESEARCH_DB)")
    p.add_argument("--owner", help="the person whose run it is (default: DEEP_RESEARCH_OWNER; "
                                   "unset: every run)")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    env = effective_env()
    credentials = Credentials.from_env(env)
    secrets = credentials.secrets()
    owner = command_owner(args.owner, env)
    if not args.list and not (args.question or "").strip():
        return _fail('Type a question after the run id, in quotes: ask RUN_ID "your question".',
                     EXIT_USAGE)
    try:
        store = Store(chosen_db(args.db, env),
                      secrets=secrets)
    except (DatabaseValueError, DatabaseUnavailableError) as exc:
        return _fail(redact_url(str(exc)), EXIT_FAILED)
    try:
        if args.list:
            for answer in conversation(store, args.run_id, person=owner):
                _print(answer)
            return EXIT_OK
        prices = PriceTable.load(prices_path(env))
        cap = cost_cap(store, own_run(store, args.run_id, owner), prices)
        if cap is not None:  # the estimate before anything is sent
            say(cap.line)
        answer = ask(store, args.run_id, args.question, credentials=credentials, person=owner,
                     prices=prices)
        _print(answer)
        if not answer.answered:  # the build-on machinery: a follow-up run, its sources first
            say(f"To research it: python -m research --build-on {args.run_id} "
                f"\"{strip_control(answer.question)}\"")
        return EXIT_OK
    except ConfigError as exc:
        return _fail(str(exc), EXIT_USAGE)
    except AskError as exc:
        return _fail(str(exc), EXIT_FAILED)
    finally:
        store.close()


def _print(answer: Answer) -> None:
    print(f"Q: {strip_control(answer.question)}")
    print(strip_control(answer.text))
    print(f"({strip_control(answer.check_line)})")
    for s in answer.sources:
        print(f"  [{s.number}] {strip_control(s.title)} — {strip_control(s.url)}")
    print()


def _fail(message: str, code: int) -> int:
    say(message)
    return code
