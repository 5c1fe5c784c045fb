"""The store's hot statements, compiled once and run on the driver's own cursor.

Why: a running research run writes an event, a usage row or a heartbeat many times a second,
and each open Run page polls four small queries every 2 s. For statements this small,
SQLAlchemy's execution path (cache key, execution context, result object) costs several
times what the database spends on them, and on SQLite every writer holds the one write lock
for that time, so the others queue behind it. The SQL stays SQLAlchemy's: each statement (a
module constant) is compiled once per dialect and set of parameter names, exactly as
`Connection.execute` would compile it, and its parameters are converted by the column
types' own bind processors (JSON, on both databases). Only the execution is the driver's.

Use it for statements built once at import time, whose parameters are plain values (no
`IN` lists, which SQLAlchemy expands per call).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Dialect
from sqlalchemy.sql import Executable

from storage.rows import Params, Row


@dataclass(frozen=True)
class Plan:
    """One statement compiled for one dialect and one set of parameter names."""

    sql: str
    positional: bool  # qmark (SQLite): a tuple in `order`; else psycopg's pyformat: a dict
    order: tuple[tuple[str, Callable[[Any], Any] | None], ...]  # each bind and its processor
    fixed: dict[str, object]  # values the statement carries itself (a literal in .values())
    json_columns: list[str]  # result columns to decode from JSON text (SQLite)

    def args(self, params: Params) -> Any:
        """The driver's parameters, each converted by its type's bind processor."""
        fixed = self.fixed
        values = []
        for name, process in self.order:
            value = params[name] if name in params else fixed[name]
            values.append(value if process is None or value is None else process(value))
        if self.positional:
            return tuple(values)
        return {name: value for (name, _), value in zip(self.order, values, strict=True)}


@dataclass
class Done:
    """What a statement run on the driver returned: its rows (if any) and the rows it changed."""

    rows: list[Any]
    rowcount: int

    def first(self) -> Any:
        return self.rows[0] if self.rows else None

    def scalar(self) -> Any:
        return self.rows[0][0] if self.rows else None


_Compiled = dict[tuple[int, tuple[str, ...]], tuple[Executable, "Plan"]]
# Compiled statements shared by the databases of one kind in this process: by dialect class,
# parameter style and server version. A dashboard or worker opens a store per run, and each
# compiled the statements it used again (about 0.4 ms each; a few ms a run). A test process
# opens a fresh store for nearly every test: three test files went from 1,045 compilations
# (0.38 CPU-s) to 82, and the whole suite spent about 4 CPU-s there. Every engine is made by
# storage.engine.Database with the same settings (JSON serializer included), so a plan holds
# for any database of its key. It stays small because only statements built once (module
# constants and `functools.cache`d builders, as the module docstring asks) are planned here:
# each is kept for the life of the process.
_SHARED: dict[tuple[object, ...], _Compiled] = {}


class Plans:
    """Compiled statements of one database, by statement and parameter names."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self._own: _Compiled = {}  # until the dialect has met its server (see _compiled)
        self._shared: _Compiled | None = None

    def plan(self, statement: Executable, keys: Sequence[str] = ()) -> Plan:
        """`statement` compiled for parameters named `keys` (an INSERT's or UPDATE's columns
        depend on them, as in `Connection.execute`)."""
        plans = self._shared if self._shared is not None else self._compiled()
        cache_key = (id(statement), tuple(keys))
        known = plans.get(cache_key)
        if known is not None and known[0] is statement:
            return known[1]
        made = self._compile(statement, list(keys))
        plans[cache_key] = (statement, made)  # the statement kept: its id stays its own
        return made

    def _compiled(self) -> _Compiled:
        """The process's plans for this kind of database, once the dialect has connected
        (its first connection sets what it compiles, such as RETURNING on SQLite); before
        that, this database's own."""
        version = self.dialect.server_version_info
        if version is None:
            return self._own
        key = (type(self.dialect), self.dialect.paramstyle, version)
        self._shared = _SHARED.setdefault(key, {})
        return self._shared

    def _compile(self, statement: Executable, keys: list[str]) -> Plan:
        from storage.schema import Json  # storage.schema is heavy to import first

        compiled = statement.compile(  # type: ignore[attr-defined]
            dialect=self.dialect, column_keys=keys or None)
        # By the name each parameter has in the SQL (an anonymous one, such as a literal in
        # .values(), is named there param_1, ...).
        processors = {compiled.bind_names[bind]:
                      bind.type.dialect_impl(self.dialect).bind_processor(self.dialect)
                      for bind in compiled.binds.values()}
        positional = self.dialect.paramstyle == "qmark"
        names = list(compiled.positiontup or []) if positional else list(processors)
        fixed = {name: value for name, value in compiled.params.items() if name not in keys}
        json_columns = [c.key for c in getattr(statement, "selected_columns", [])
                        if isinstance(c.type, Json)]
        return Plan(str(compiled), positional,
                    tuple((name, processors.get(name)) for name in names), fixed, json_columns)


def run(driver_conn: Any, plan: Plan, params: Params) -> Done:
    """Execute on the driver connection; the rows are read at once, so the statement is
    finished before the transaction commits."""
    cursor = driver_conn.execute(plan.sql, plan.args(params))
    try:
        rows = cursor.fetchall() if cursor.description is not None else []
        return Done(rows, cursor.rowcount)
    finally:
        cursor.close()


def run_many(driver_conn: Any, plan: Plan, rows: Sequence[Params]) -> None:
    """One statement for many parameter sets (rows to insert), without results."""
    if not rows:
        return
    cursor = driver_conn.cursor()
    try:
        cursor.executemany(plan.sql, [plan.args(row) for row in rows])
    finally:
        cursor.close()


def inserted_each(driver_conn: Any, plan: Plan, rows: Sequence[Params],
                  *, batched: bool) -> list[bool]:
    """Run an `INSERT ... ON CONFLICT DO NOTHING RETURNING ...` once per row; which rows were
    inserted. `batched` (psycopg): all rows in one round trip to the server (its pipeline),
    not one each, which is what a busy team server answers slowest; SQLite is in-process,
    so one row at a time costs nothing extra there."""
    if not batched:
        return [bool(run(driver_conn, plan, row).rows) for row in rows]
    if not rows:
        return []
    cursor = driver_conn.cursor()
    try:
        cursor.executemany(plan.sql, [plan.args(row) for row in rows], returning=True)
        return [bool(result.fetchall()) for result in cursor.results()]
    finally:
        cursor.close()


def select_rows(driver_conn: Any, plan: Plan, params: Params,
                decode_json: bool) -> list[Row]:
    """A query's rows as dicts; JSON columns decoded as `storage.schema.Json` does (SQLite
    stores JSON as text; psycopg decodes JSONB itself)."""
    cursor = driver_conn.execute(plan.sql, plan.args(params))
    return _dict_rows(cursor, plan, decode_json)


def select_batch(driver_conn: Any, queries: Sequence[tuple[Plan, Params]],
                 *, pipelined: bool, decode_json: bool) -> list[list[Row]]:
    """Several queries' rows, in order. `pipelined` (psycopg): all sent in one round trip
    (its pipeline mode) and answered together, instead of one round trip each: on a busy
    server every round trip waits for the server process and then for this one to be
    scheduled again, and that wait, not the queries, is most of a poll's time."""
    if not pipelined:
        return [select_rows(driver_conn, plan, params, decode_json) for plan, params in queries]
    with driver_conn.pipeline():
        cursors = [driver_conn.execute(plan.sql, plan.args(params)) for plan, params in queries]
    return [_dict_rows(cursor, plan, decode_json)
            for cursor, (plan, _) in zip(cursors, queries, strict=True)]


def _dict_rows(cursor: Any, plan: Plan, decode_json: bool) -> list[Row]:
    try:
        keys = [d[0] for d in cursor.description]
        rows = [dict(zip(keys, values, strict=True)) for values in cursor.fetchall()]
    finally:
        cursor.close()
    if decode_json and plan.json_columns:
        for row in rows:
            for key in plan.json_columns:
                value = row.get(key)
                if isinstance(value, str):
                    row[key] = json.loads(value)
    return rows
