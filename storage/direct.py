"""SQLite: a statement the store runs again and again, run on the driver's own cursor.

Why: on SQLite most of what `Connection.execute` costs is SQLAlchemy's own work around a
statement that SQLite answers in microseconds: finding the statement's compilation in the
cache (its cache key), setting up the execution context and the parameters, and building
the result's rows (about 0.5 ms a call, some 10% of a test process's CPU). The statements
the store runs are module constants (`storage/*.py`), so each is compiled here once per
process (not per `Store`: a new Store finds them compiled) and then run with `sqlite3`
directly, converting what goes in and what comes out exactly as SQLAlchemy does:
- its SQL is SQLAlchemy's compilation of that statement for that dialect and those
  parameter names (`storage.compiled`), checked once against the SQL SQLAlchemy itself ran
  for it, and each parameter goes through its column type's bind processor;
- each result column goes through the processor SQLAlchemy's own result used for it on that
  first run (JSON decoded, dates parsed), with the same column names;
- a driver error reaches the caller as the SQLAlchemy exception `execute` raises
  (`sqlalchemy.exc.DBAPIError.instance`), and a lost connection is invalidated as there.
A statement's first two runs go through `Connection.execute` (the second one also gives
what the plan needs), so a statement built anew for each call never pays for a plan; one
that needs SQLAlchemy at every run (an `IN` list expanded per call, a bind computed per
call) keeps `execute`. PostgreSQL keeps SQLAlchemy's path (its pool invalidation and
reconnects on a lost server are SQLAlchemy's to handle).
See https://docs.sqlalchemy.org/en/20/core/connections.html#sql-compilation-caching and
https://docs.python.org/3/library/sqlite3.html#sqlite3.Connection.execute
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, cast

from sqlalchemy import Connection, CursorResult
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql import Executable

from storage.compiled import Compiled, compile_plain
from storage.rows import Params, Row

MAX_PLANS = 2048  # statements remembered per process (the store has a few hundred)
PENDING = "pending"  # seen before: run it by `execute` and `learn` its plan


@dataclass(frozen=True)
class Plan:
    """A statement as SQLite SQL, its parameters' order and processors, and its result's
    column names and processors (`keys` empty: it returns no rows)."""

    sql: Compiled
    keys: tuple[str, ...]
    processors: tuple[Callable[[Any], Any] | None, ...]
    processed: tuple[int, ...]  # the columns that have a processor

    def row(self, values: Sequence[Any]) -> Row:
        if self.processed:
            out = list(values)
            for index in self.processed:  # None too, as SQLAlchemy does
                out[index] = self.processors[index](out[index])  # type: ignore[misc]
            values = out
        return dict(zip(self.keys, values, strict=True))

    def value(self, values: Sequence[Any]) -> Any:
        value = values[0]
        process = self.processors[0] if self.processors else None
        return value if process is None else process(value)


_Entry = tuple[Executable, Plan | str | None]
_plans: dict[tuple[int, tuple[str, ...]], _Entry] = {}


def plan_for(statement: Executable, params: Params | None) -> Plan | str | None:
    """The plan known for `statement` with these parameter names: a Plan, `PENDING` (run it
    by `execute`, then `learn`), or None (run it by `execute`: seen for the first time, or
    it always needs SQLAlchemy)."""
    key = (id(statement), tuple(params) if params else ())
    known = _plans.get(key)
    if known is not None and known[0] is statement:
        return known[1]
    # First seen: remembered, as pending from its next run on.
    if len(_plans) >= MAX_PLANS:
        _plans.clear()
    _plans[key] = (statement, PENDING)  # kept, so that its id stays its own
    return None


def learn(statement: Executable, params: Params | None, conn: Connection,
          result: CursorResult[Any]) -> None:
    """After `execute` ran a statement seen before: its plan, from what SQLAlchemy did."""
    key = (id(statement), tuple(params) if params else ())
    _plans[key] = (statement, _plan(statement, params, conn, result))


def _plan(statement: Executable, params: Params | None, conn: Connection,
          result: CursorResult[Any]) -> Plan | None:
    context = result.context
    ran = context.compiled
    if ran is None or context.executemany:
        return None
    compiled = compile_plain(statement, conn.dialect, list(params or ()), any_result=True)
    if compiled is None or compiled.sql != ran.string:
        return None
    if not result.returns_rows:
        return Plan(compiled, (), (), ())
    metadata = result._metadata  # noqa: SLF001 - SQLAlchemy's own result description
    if getattr(metadata, "_tuplefilter", None) is not None:
        return None
    keys = tuple(metadata.keys)
    processors = tuple(getattr(metadata, "_processors", ()))
    if len(processors) != len(keys) or len(set(keys)) != len(keys):
        return None
    processed = tuple(i for i, process in enumerate(processors) if process is not None)
    return Plan(compiled, keys, processors, processed)


def _cursor(conn: Connection, plan: Plan, params: Params | None) -> sqlite3.Cursor:
    raw = conn.connection.dbapi_connection
    assert isinstance(raw, sqlite3.Connection)
    args = plan.sql.args(params or {})
    try:
        return raw.execute(plan.sql.sql, args)
    except sqlite3.Error as exc:
        _raise(conn, exc, plan.sql.sql, args)
    except BaseException as exc:
        if not isinstance(exc, Exception):  # Ctrl-C mid-statement: as SQLAlchemy does
            conn.invalidate(exc)
        raise


def rows(conn: Connection, plan: Plan, params: Params | None) -> list[Row]:
    cursor = _cursor(conn, plan, params)
    try:
        return [plan.row(values) for values in _fetch(conn, plan, cursor)]
    finally:
        cursor.close()


def first_value(conn: Connection, plan: Plan, params: Params | None) -> Any:
    """The first column of the first row (None: no rows, or no result)."""
    cursor = _cursor(conn, plan, params)
    try:
        if not plan.keys:
            return None
        found = _fetch(conn, plan, cursor, one=True)
        return plan.value(found[0]) if found else None
    finally:
        cursor.close()


def _fetch(conn: Connection, plan: Plan, cursor: sqlite3.Cursor, *, one: bool = False,
           ) -> list[Any]:
    try:
        if one:
            found = cursor.fetchone()
            return [found] if found is not None else []
        return cursor.fetchall()
    except sqlite3.Error as exc:
        _raise(conn, exc, plan.sql.sql, None)


def _raise(conn: Connection, exc: sqlite3.Error, sql: str, args: Any) -> NoReturn:
    """`exc` as `Connection.execute` raises it: wrapped in SQLAlchemy's exception for it,
    the connection invalidated when the database is gone."""
    dialect = conn.dialect
    lost = not conn.closed and dialect.is_disconnect(
        cast(Any, exc), conn.connection.dbapi_connection, None)
    wrapped = DBAPIError.instance(
        sql, args, exc, sqlite3.Error, hide_parameters=conn.engine.hide_parameters,
        connection_invalidated=lost, dialect=dialect)
    if lost:
        conn.invalidate(exc)
    raise wrapped.with_traceback(exc.__traceback__) from exc
