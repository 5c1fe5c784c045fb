"""The `poll` section on PostgreSQL: the same writers and poller against a throw-away server.

The server is the tests' (`tests.pg_server.PostgresServer`: Debian's PostgreSQL on 127.0.0.1,
a temporary data directory, run as the postgres user when we are root), but with PostgreSQL's
own durability settings (every commit flushed to disk), as a team server runs; `--pg-fast`
uses the tests' settings instead (no flushing), and the figures say which. Where it cannot be
started the section says why and goes on without these figures.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

PollFn = Callable[[argparse.Namespace, Path, str, str, int], list[Any]]


def postgres_poll(args: argparse.Namespace, tmp: Path, poll_database: PollFn,
                  say: Callable[[str], None]) -> list[Any]:
    from tests.pg_server import FAST_SETTINGS, PostgresServer, PostgresUnavailable

    settings = (f"the tests' settings: {FAST_SETTINGS} (--pg-fast)" if args.pg_fast
                else "PostgreSQL's default durability: every commit flushed to disk")
    say(f"  the same load on PostgreSQL (a local throw-away server; {settings}):")
    try:
        server = PostgresServer(durable=not args.pg_fast).start()
    except (PostgresUnavailable, OSError) as exc:
        say(f"  PostgreSQL figures skipped: {exc}")
        return []
    try:
        label = "PostgreSQL, tests' settings: " if args.pg_fast else "PostgreSQL: "
        return poll_database(args, tmp, server.create_database(), label, args.pg_pollers)
    finally:
        server.stop()
