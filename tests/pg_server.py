"""A real, throw-away PostgreSQL server for the tests, and the fixtures that use it.

`PostgresServer` runs Debian's PostgreSQL binaries (`scripts/setup.sh --dev` installs them)
on 127.0.0.1, on a free port, with a temporary data directory and trust authentication
(nothing else can reach it). As root, `initdb` and the server run as the `postgres` user,
which owns the temporary directory: PostgreSQL refuses to run as root.

The server is started once per test session; each test that needs a database gets a fresh
one (`pg_url`). `db_target` parametrises a test over both stores: a SQLite file, then a
PostgreSQL URL. Where PostgreSQL cannot be started the PostgreSQL cases are skipped with the
reason, unless DEEP_RESEARCH_REQUIRE_POSTGRES=1 (CI sets it), where they fail instead.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

TEST_PASSWORD = "pg-test-Secret-42"  # trust auth ignores it; present so redaction is tested
REQUIRE_ENV = "DEEP_RESEARCH_REQUIRE_POSTGRES"


class PostgresUnavailable(RuntimeError):
    """PostgreSQL cannot be started here; the message says why."""


def _bin_dir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise PostgresUnavailable(
            "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb); "
            "run scripts/setup.sh --dev")
    return Path(found[-1]).parent


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# The tests' server skips flushing to disk: its data is thrown away, and tests run faster.
FAST_SETTINGS = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"


class PostgresServer:
    """One PostgreSQL server in a temporary directory; `stop()` removes every trace.
    `durable=True` keeps PostgreSQL's own flushing settings (a benchmark's figures must not
    depend on `FAST_SETTINGS`, which no team server should run with)."""

    def __init__(self, *, durable: bool = False) -> None:
        self.durable = durable
        self.bin = _bin_dir()
        self.port = _free_port()
        self.root = Path(tempfile.mkdtemp(prefix="dr-pg-"))
        self.data = self.root / "data"
        self._as: list[str] = []
        if os.geteuid() == 0:
            try:
                user = pwd.getpwnam("postgres")
            except KeyError:
                raise PostgresUnavailable("running as root and there is no postgres user") from None
            os.chown(self.root, user.pw_uid, user.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]

    def _run(self, *args: str, timeout: float = 60) -> None:
        done = subprocess.run([*self._as, *args], capture_output=True, text=True,
                              timeout=timeout, cwd=self.root)
        if done.returncode != 0:
            raise PostgresUnavailable(
                f"{Path(args[0]).name} failed: {(done.stderr or done.stdout).strip()[-600:]}")

    def start(self) -> PostgresServer:
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres",
                  "--auth=trust", "--locale=C.UTF-8", "-E", "UTF8",
                  *([] if self.durable else ["--no-sync"]))
        options = (f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} "
                   f"{'' if self.durable else FAST_SETTINGS} "
                   "-c max_connections=300 -c shared_buffers=32MB")
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-o", options,
                  "-l", str(self.root / "server.log"), "-w", "-t", "60", "start", timeout=90)
        return self

    def url(self, database: str = "postgres", password: str = TEST_PASSWORD) -> str:
        return f"postgresql://postgres:{password}@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A fresh, empty database; returns its URL."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url().replace(f":{TEST_PASSWORD}", ""), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        try:
            if self.data.exists():
                self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate",
                          "-w", "stop")
        except (PostgresUnavailable, subprocess.TimeoutExpired):
            pass
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def _unavailable(reason: str) -> None:
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"PostgreSQL is required here ({REQUIRE_ENV}=1) but: {reason}")
    pytest.skip(f"PostgreSQL tests skipped: {reason}")


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    """The session's PostgreSQL server (skipped, or failed under CI, when it cannot start)."""
    server: PostgresServer | None = None
    try:
        server = PostgresServer().start()
    except (PostgresUnavailable, OSError, subprocess.TimeoutExpired) as exc:
        if server is not None:
            server.stop()
        _unavailable(str(exc))
    assert server is not None
    deadline = time.monotonic() + 10
    while True:  # pg_ctl -w waited for it; a last check that it takes connections
        try:
            server.create_database()
            break
        except Exception as exc:  # noqa: BLE001 - reported as the skip reason
            if time.monotonic() > deadline:
                server.stop()
                _unavailable(f"the server does not accept connections: {exc}")
            time.sleep(0.2)
    try:
        yield server
    finally:
        stop_job_engine()  # a job engine on this server stops while the server is still up
        server.stop()


def stop_job_engine() -> None:
    """Stop this process's job engine (DBOS), if a test launched it (tests/conftest.py)."""
    durable = sys.modules.get("research.runs.engine")
    if durable is not None:
        durable.stop()


@pytest.fixture
def pg_url(pg_server: PostgresServer) -> str:
    """A fresh PostgreSQL database for this test (its URL, password included)."""
    return pg_server.create_database()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The store to test on: a new SQLite file, then a new PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "db" / "research.db")
    return str(request.getfixturevalue("pg_url"))
