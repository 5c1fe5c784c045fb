"""The `poll` section on PostgreSQL: the same writers and poller against a throw-away server.

The server is the tests' (`tests.pg_server.PostgresServer`: Debian's PostgreSQL on 127.0.0.1,
a temporary data directory, run as the postgres user when we are root). Where it cannot be
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
    from tests.pg_server import PostgresServer, PostgresUnavailable

    say("  the same load on PostgreSQL (a local throw-away server):")
    try:
        server = PostgresServer().start()
    except (PostgresUnavailable, OSError) as exc:
        say(f"  PostgreSQL figures skipped: {exc}")
        return []
    try:
        return poll_database(args, tmp, server.create_database(), "PostgreSQL: ",
                             args.pg_pollers)
    finally:
        server.stop()
