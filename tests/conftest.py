"""Shared fixtures: the local stand-in server and a temporary database path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pg_server import db_target, pg_server, pg_url  # noqa: F401 - fixtures (PostgreSQL)
from tests.standin import StandinServer


@pytest.fixture(scope="session")
def standin() -> Iterator[StandinServer]:
    """One stand-in server for the whole test session (reset it per test via standin_env)."""
    server = StandinServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def standin_env(standin: StandinServer) -> dict[str, str]:
    """A clean stand-in (no faults, no delay, empty request log) and the env pointing at it."""
    standin.reset()
    return standin.env()


@pytest.fixture
def tmp_db(tmp_path: Path) -> Path:
    """Path for a fresh SQLite file (not created yet)."""
    return tmp_path / "research.sqlite3"
