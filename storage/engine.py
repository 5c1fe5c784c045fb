"""Connections and transactions for both databases: the one place that knows how each locks.

SQLite (one file, one computer):
- every connection gets a 30 s busy timeout, WAL journal, `synchronous=NORMAL`, foreign keys
  and the bounded journal size (`storage.wal`); the driver's own implicit transactions are
  off, so the store decides where a transaction starts;
- every write is one short `BEGIN IMMEDIATE` transaction, so writers queue for the lock up
  front instead of failing half-way with "database is locked" (a write of one statement,
  `write_one`, runs alone in autocommit: a single writing statement takes the lock up front
  too); after it commits, the writer keeps the WAL small (`storage.wal.WalBound`);
- reads run in autocommit: each query sees the last committed state and never takes a lock
  a writer waits for;
- each thread keeps its own connection (as SQLite connections are cheap to hold and costly
  to set up), so a poll or a write pays no pool round trip.

PostgreSQL (a team server):
- a small connection pool per process; every write is one READ COMMITTED transaction, and
  concurrent upserts are settled by `ON CONFLICT`, so writers never wait on each other for
  long; reads run in autocommit.

A write inside a write (on the same thread) joins it, and reads on that thread see it.

Every statement is a SQLAlchemy Core statement compiled by SQLAlchemy. It runs through
`Connection.execute`, whose compiled-statement cache (per engine, `query_cache_size`)
compiles each statement built once a single time; what used to cost most on the hot reads
was turning rows into dicts, so `Database.rows` fetches them at once and zips them with their
keys. On SQLite, the reads (`rows`, `value`) and the writes of one statement (`write_one`: a
heartbeat, a usage row, an event) that the store runs again and again skip SQLAlchemy's
per-call work: their compiled SQL runs on the driver's cursor, results converted as
SQLAlchemy converts them (`storage.direct`, plans kept per process). On PostgreSQL those
writes skip the cache's lookup: their SQL is compiled once per process and run by
`Connection.exec_driver_sql` (`storage.compiled`). BEGIN / COMMIT / ROLLBACK go to the
driver's connection (`_driver`). See
https://docs.sqlalchemy.org/en/20/core/connections.html#sql-compilation-caching
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

from sqlalchemy import Connection, CursorResult, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.pool import ConnectionPoolEntry
from sqlalchemy.sql import Executable

from storage import direct, wal
from storage.compiled import Compiled, compile_plain
from storage.rows import Params, Row

POOL_SIZE = 8            # connections kept open per process (more open while busy, then close)
PG_MAX_OVERFLOW = 24     # PostgreSQL: at most POOL_SIZE + this at once, per process
PG_CONNECT_TIMEOUT_S = 10
PG_RECYCLE_S = 600       # reopen pooled PostgreSQL connections this old (no ping per checkout)

# PostgreSQL: `write_one`'s statements as compiled SQL, per process, by statement, parameter
# names and dialect (the statement kept, so that its id stays its own); see `_execute`.
_compiled: dict[tuple[int, tuple[str, ...], str], tuple[Executable, Compiled | None]] = {}


class Tx:
    """An open transaction. `execute` takes a SQLAlchemy statement (with one parameter set,
    or a list of them: one statement for many rows), or a plain SQL string with the driver's
    own placeholders (`?` on SQLite) for tests and one-off repairs."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def execute(self, statement: Executable | str, params: Any = None) -> Any:
        if isinstance(statement, str):
            args = tuple(params) if isinstance(params, Sequence) else params
            return self.conn.exec_driver_sql(statement, args if args is not None else ())
        return self.conn.execute(statement, params)

    def execute_many(self, statement: Executable, rows: Sequence[Params]) -> None:
        """`statement` once per row (all rows with the same keys), in one call; none: nothing."""
        if rows:
            self.conn.execute(statement, list(rows))

    def inserted_each(self, statement: Executable, key: str, rows: Sequence[Params],
                      ) -> list[bool]:
        """For an INSERT that skips conflicts and returns the column `key` of what it
        inserted: which of `rows` (all with the same keys) were inserted. One statement for
        all rows (SQLAlchemy's "insertmanyvalues": one round trip to a team server, where
        each is answered slowly when it is busy); a row counts as inserted when its `key`
        came back, the first row with that key only."""
        if not rows:
            return []
        returned = {row[0] for row in self.conn.execute(statement, list(rows))}
        inserted = []
        for row in rows:
            value = row[key]
            inserted.append(value in returned)
            returned.discard(value)
        return inserted


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
        self._begin_sql = "BEGIN IMMEDIATE" if self.dialect == "sqlite" else "BEGIN"

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
            yield Tx(open_conn)
            return
        with self._connection() as conn:
            self._local.conn = conn
            try:
                _driver(conn).execute(self._begin_sql)
                try:
                    yield Tx(conn)
                except BaseException:
                    self._rollback(conn)
                    raise
                _driver(conn).execute("COMMIT")
            finally:
                self._local.conn = None
            if self.wal is not None:
                self.wal.after_commit(raw_sqlite(conn))

    def write_one(self, statement: Executable, params: Params) -> Any:
        """`write()` of one statement; the first column of its first row (what it returned),
        or None. Outside a transaction the statement runs alone in autocommit, which is its
        own transaction: on PostgreSQL one round trip instead of three (BEGIN, it, COMMIT);
        on SQLite a single writing statement takes the write lock before it reads anything,
        waiting for it under the busy timeout exactly as `BEGIN IMMEDIATE` does, so it too
        needs neither (the heartbeat and the usage upsert take this path many times a
        second). Its SQL is compiled once (`storage.compiled`)."""
        open_conn = self.current()
        if open_conn is not None:
            return self._execute(open_conn, statement, params)
        if self.wal is None:  # PostgreSQL
            with self._connection() as conn:
                return self._execute(conn, statement, params)
        conn = self._own()
        value = self._execute(conn, statement, params)
        self.wal.after_commit(raw_sqlite(conn))
        return value

    def _execute(self, conn: Connection, statement: Executable, params: Params) -> Any:
        """`statement` on `conn`, what it returned (see `write_one`). SQLite: on the driver's
        cursor once its plan is known (`storage.direct`); PostgreSQL: its SQL compiled once
        per process for these parameter names and run by `exec_driver_sql`, or, when its
        results need SQLAlchemy's processing, `execute`."""
        if self.wal is not None:  # SQLite
            return self._first(conn, statement, params)
        key = (id(statement), tuple(params), conn.dialect.name)
        known = _compiled.get(key)
        if known is None or known[0] is not statement:
            known = _compiled[key] = (
                statement, compile_plain(statement, conn.dialect, list(params)))
        compiled = known[1]
        if compiled is None:
            return _first_value(conn.execute(statement, params))
        return _first_value(conn.exec_driver_sql(compiled.sql, compiled.args(params)))

    @contextmanager
    def _connection(self) -> Iterator[Connection]:
        """SQLite: this thread's own connection, kept open; PostgreSQL: one from the pool."""
        if self.dialect != "sqlite":
            with self.engine.connect() as pooled:
                yield pooled
            return
        yield self._own()

    def _own(self) -> Connection:
        """SQLite: this thread's own connection (opened again if it was closed or lost)."""
        own: Connection | None = getattr(self._local, "own", None)
        if own is None or own.closed or own.invalidated:
            own = self._local.own = self.engine.connect()
        return own

    def _rollback(self, conn: Connection) -> None:
        """Undo the open transaction, if the database has not already ended it (SQLite ends
        it itself on some errors, such as a full disk); the original error is what counts."""
        if self.dialect == "sqlite" and not raw_sqlite(conn).in_transaction:
            return
        try:
            _driver(conn).execute("ROLLBACK")
        except Exception:  # noqa: BLE001 - the error that got us here is re-raised instead
            conn.invalidate()

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A connection for reading: this thread's open write, or one from the pool."""
        open_conn = self.current()
        if open_conn is not None:
            yield open_conn
            return
        with self._connection() as conn:
            yield conn

    def rows(self, statement: Executable, params: Params | None = None) -> list[Row]:
        """The rows of a query, as plain dicts (JSON columns decoded)."""
        with self.read() as conn:
            plan, result = self._query(conn, statement, params)
            if result is None:
                return direct.rows(conn, plan, params)
            keys = list(result.keys())
            return [dict(zip(keys, row, strict=True)) for row in result.all()]

    def value(self, statement: Executable, params: Params | None = None) -> Any:
        """The first column of a query's first row, or None."""
        with self.read() as conn:
            return self._first(conn, statement, params)

    def _first(self, conn: Connection, statement: Executable, params: Params | None) -> Any:
        """The first column of the first row `statement` returns on `conn`, or None (a
        read's value, a write's RETURNING)."""
        plan, result = self._query(conn, statement, params)
        return direct.first_value(conn, plan, params) if result is None else _first_value(result)

    def _query(self, conn: Connection, statement: Executable, params: Params | None,
               ) -> tuple[Any, CursorResult[Any] | None]:
        """A statement's plan (storage.direct: SQLite only), and None to run it by that plan;
        else SQLAlchemy's result of it, its plan learnt when it was seen before."""
        plan = direct.plan_for(statement, params) if self.wal is not None else None
        if isinstance(plan, direct.Plan):
            return plan, None
        result = conn.execute(statement, params)
        if plan is direct.PENDING:
            direct.learn(statement, params, conn, result)
        return plan, result

    def dispose(self) -> None:
        """Close this thread's connection and the idle pooled ones (other threads keep theirs;
        the Store stays usable and reconnects on demand)."""
        own: Connection | None = getattr(self._local, "own", None)
        if own is not None:
            own.close()
            self._local.own = None
        self.engine.dispose()


def _first_value(result: CursorResult[Any]) -> Any:
    """What a write returned (RETURNING), read before its connection goes back, or None."""
    return result.scalar() if result.returns_rows else None


def _driver(conn: Connection) -> Any:
    """The driver's own connection (sqlite3 or psycopg), for BEGIN / COMMIT / ROLLBACK only:
    the store opens and ends its transactions itself, on connections in autocommit mode (as
    SQLAlchemy's own dialects end theirs on the driver's connection), and these three need
    none of SQLAlchemy's result handling, which would double a heartbeat's time holding the
    write lock. Every statement inside a transaction runs through SQLAlchemy."""
    return conn.connection.dbapi_connection


def raw_sqlite(conn: Connection) -> sqlite3.Connection:
    dbapi = conn.connection.dbapi_connection
    assert isinstance(dbapi, sqlite3.Connection)
    return dbapi


def _casefold(value: object) -> str | None:
    return value.casefold() if isinstance(value, str) else None
