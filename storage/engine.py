"""Connections and transactions for both databases: the one place that knows how each locks.

SQLite (one file, one computer):
- every connection gets a 30 s busy timeout, WAL journal, `synchronous=NORMAL`, foreign keys
  and the bounded journal size (`storage.wal`); the driver's own implicit transactions are
  off, so the store decides where a transaction starts;
- every write is one short `BEGIN IMMEDIATE` transaction, so writers queue for the lock up
  front instead of failing half-way with "database is locked"; after it commits, the writer
  keeps the WAL small (`storage.wal.WalBound`);
- reads run in autocommit: each query sees the last committed state and never takes a lock
  a writer waits for;
- each thread keeps its own connection (as SQLite connections are cheap to hold and costly
  to set up), so a poll or a write pays no pool round trip.

PostgreSQL (a team server):
- a small connection pool per process; every write is one READ COMMITTED transaction, and
  concurrent upserts are settled by `ON CONFLICT`, so writers never wait on each other for
  long; reads run in autocommit.

A write inside a write (on the same thread) joins it, and reads on that thread see it.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.pool import ConnectionPoolEntry
from sqlalchemy.sql import Executable

from storage import fastsql, wal
from storage.rows import Params, Row

POOL_SIZE = 8            # connections kept open per process (more open while busy, then close)
PG_MAX_OVERFLOW = 24     # PostgreSQL: at most POOL_SIZE + this at once, per process
PG_CONNECT_TIMEOUT_S = 10
PG_RECYCLE_S = 600       # reopen pooled PostgreSQL connections this old (no ping per checkout)


class Tx:
    """An open transaction. `execute` takes a SQLAlchemy statement, or a plain SQL string with
    the driver's own placeholders (`?` on SQLite) for tests and one-off repairs; `run` and
    `run_many` take a statement built once (a module constant) and run it on the driver's
    cursor (`storage.fastsql`): the hot writes of a running run."""

    def __init__(self, conn: Connection, plans: fastsql.Plans | None = None) -> None:
        self.conn = conn
        self._plans = plans or fastsql.Plans(conn.dialect)
        self._driver = _driver(conn)

    def execute(self, statement: Executable | str, params: Any = None) -> Any:
        if isinstance(statement, str):
            args = tuple(params) if isinstance(params, Sequence) else params
            return self.conn.exec_driver_sql(statement, args if args is not None else ())
        return self.conn.execute(statement, params)

    def run(self, statement: Executable, params: Params) -> fastsql.Done:
        """`execute` for a statement built once, with plain parameter values."""
        plan = self._plans.plan(statement, tuple(params))
        return fastsql.run(self._driver, plan, params)

    def inserted_each(self, statement: Executable, rows: Sequence[Params],
                      ) -> list[bool]:
        """For an INSERT that skips conflicts and returns what it inserted: which of `rows`
        (all with the same keys) were inserted (PostgreSQL: in one round trip)."""
        if not rows:
            return []
        plan = self._plans.plan(statement, tuple(rows[0]))
        return fastsql.inserted_each(self._driver, plan, rows,
                                     batched=self.conn.dialect.name == "postgresql")

    def run_many(self, statement: Executable, rows: Sequence[Params]) -> None:
        """`run` once per row (all rows with the same keys), results not read."""
        if rows:
            plan = self._plans.plan(statement, tuple(rows[0]))
            fastsql.run_many(self._driver, plan, rows)


def sqlite_url(path: Path) -> URL:
    return URL.create("sqlite+pysqlite", database=str(path))


def postgres_url(text: str) -> URL:
    """A `postgresql://` URL as SQLAlchemy's psycopg 3 URL."""
    url = make_url(text.strip())
    return url.set(drivername="postgresql+psycopg")


class Database:
    """One database (SQLite file or PostgreSQL URL) and its connections, for one `Store`."""

    def __init__(self, url: URL, *, wal_limit_bytes: int = wal.WAL_LIMIT_BYTES) -> None:
        self.url = url
        self.dialect = url.get_backend_name()
        self._local = threading.local()
        self.wal: wal.WalBound | None = None
        if self.dialect == "sqlite":
            path = Path(url.database or "")
            self.wal = wal.WalBound(path, wal_limit_bytes)
            self.engine = self._sqlite_engine(wal_limit_bytes)
        else:
            self.engine = create_engine(
                url, pool_size=POOL_SIZE, max_overflow=PG_MAX_OVERFLOW, pool_recycle=PG_RECYCLE_S,
                connect_args={"connect_timeout": PG_CONNECT_TIMEOUT_S},
                json_serializer=partial(json.dumps, ensure_ascii=False, default=str),
                isolation_level="AUTOCOMMIT",
            )
        self.plans = fastsql.Plans(self.engine.dialect)

    def _sqlite_engine(self, wal_limit_bytes: int) -> Engine:
        engine = create_engine(
            self.url, pool_size=POOL_SIZE, max_overflow=-1,
            connect_args={"timeout": wal.BUSY_TIMEOUT_MS / 1000, "check_same_thread": False},
            isolation_level="AUTOCOMMIT",
        )

        @event.listens_for(engine, "connect")
        def _configure(dbapi_conn: sqlite3.Connection, _entry: ConnectionPoolEntry) -> None:
            dbapi_conn.isolation_level = None
            dbapi_conn.execute(f"PRAGMA busy_timeout={wal.BUSY_TIMEOUT_MS}")
            wal.enter_wal_mode(dbapi_conn)
            wal.configure(dbapi_conn, wal_limit_bytes)
            dbapi_conn.execute("PRAGMA synchronous=NORMAL")
            dbapi_conn.execute("PRAGMA foreign_keys=ON")
            dbapi_conn.create_function("py_casefold", 1, _casefold, deterministic=True)

        return engine

    # -- transactions ----------------------------------------------------------------------

    def current(self) -> Connection | None:
        """This thread's open write connection, if it is inside `write()`."""
        conn: Connection | None = getattr(self._local, "conn", None)
        return conn

    @contextmanager
    def write(self) -> Iterator[Tx]:
        """One short transaction holding the write lock (SQLite) from the start; nests."""
        open_conn = self.current()
        if open_conn is not None:
            yield Tx(open_conn, self.plans)
            return
        with self._connection() as conn:
            self._local.conn = conn
            try:
                self._begin(conn)
                try:
                    yield Tx(conn, self.plans)
                except BaseException:
                    self._rollback(conn)
                    raise
                _driver(conn).execute("COMMIT")
            finally:
                self._local.conn = None
            if self.wal is not None:
                self.wal.after_commit(raw_sqlite(conn))

    def write_one(self, statement: Executable, params: Params) -> fastsql.Done:
        """`write()` of one statement built once (`Tx.run`). On PostgreSQL, outside a
        transaction, the statement runs alone in autocommit, which is its own transaction:
        one round trip instead of three (BEGIN, it, COMMIT). SQLite keeps `write()`, whose
        BEGIN IMMEDIATE queues writers for the lock up front and which bounds the WAL."""
        if self.dialect == "sqlite" or self.current() is not None:
            with self.write() as tx:
                return tx.run(statement, params)
        plan = self.plans.plan(statement, tuple(params))
        with self._connection() as conn:
            return fastsql.run(_driver(conn), plan, params)

    @contextmanager
    def _connection(self) -> Iterator[Connection]:
        """SQLite: this thread's own connection, kept open; PostgreSQL: one from the pool."""
        if self.dialect != "sqlite":
            with self.engine.connect() as pooled:
                yield pooled
            return
        own: Connection | None = getattr(self._local, "own", None)
        if own is None or own.closed or own.invalidated:
            own = self._local.own = self.engine.connect()
        yield own

    def _rollback(self, conn: Connection) -> None:
        """Undo the open transaction, if the database has not already ended it (SQLite ends
        it itself on some errors, such as a full disk); the original error is what counts."""
        if self.dialect == "sqlite" and not raw_sqlite(conn).in_transaction:
            return
        try:
            _driver(conn).execute("ROLLBACK")
        except Exception:  # noqa: BLE001 - the error that got us here is re-raised instead
            conn.invalidate()

    def _begin(self, conn: Connection) -> None:
        _driver(conn).execute("BEGIN IMMEDIATE" if self.dialect == "sqlite" else "BEGIN")

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A connection for reading: this thread's open write, or one from the pool."""
        open_conn = self.current()
        if open_conn is not None:
            yield open_conn
            return
        with self._connection() as conn:
            yield conn

    def fast_rows(self, statement: Executable, params: Params) -> list[Row]:
        """Rows of a statement built once (a module constant), run on the driver's cursor.

        Why: each open Run page polls four small queries every 2 s while runs write; SQLAlchemy's
        execution path costs several times what SQLite spends answering them, and on a
        loaded machine that is the poll's latency (`storage.fastsql`)."""
        plan = self.plans.plan(statement)
        with self.read() as conn:
            return fastsql.select_rows(_driver(conn), plan, params,
                                       decode_json=self.dialect == "sqlite")

    def fast_batch(self, queries: Sequence[tuple[Executable, Params]]) -> list[list[Row]]:
        """`fast_rows` of several statements on one connection; on PostgreSQL in one round
        trip (`fastsql.select_batch`): what one refresh of the Run page's live panel reads."""
        plans = [(self.plans.plan(statement), params) for statement, params in queries]
        with self.read() as conn:
            return fastsql.select_batch(_driver(conn), plans,
                                        pipelined=self.dialect == "postgresql",
                                        decode_json=self.dialect == "sqlite")

    def rows(self, statement: Executable) -> list[Row]:
        with self.read() as conn:
            return [dict(row) for row in conn.execute(statement).mappings()]

    def dispose(self) -> None:
        """Close this thread's connection and the idle pooled ones (other threads keep theirs;
        the Store stays usable and reconnects on demand)."""
        own: Connection | None = getattr(self._local, "own", None)
        if own is not None:
            own.close()
            self._local.own = None
        self.engine.dispose()


def _driver(conn: Connection) -> Any:
    """The driver's own connection (sqlite3 or psycopg), for BEGIN / COMMIT / ROLLBACK: the
    store opens and ends its transactions itself, on connections in autocommit mode, and
    these statements need none of SQLAlchemy's result handling."""
    return conn.connection.dbapi_connection


def raw_sqlite(conn: Connection) -> sqlite3.Connection:
    dbapi = conn.connection.dbapi_connection
    assert isinstance(dbapi, sqlite3.Connection)
    return dbapi


def _casefold(value: object) -> str | None:
    return value.casefold() if isinstance(value, str) else None
