"""Where SQLite and PostgreSQL differ, each difference in one small named function.

The store's queries are written once with SQLAlchemy Core; only these few things are said
differently by the two databases:
- `insert_for`: upserts (`ON CONFLICT ... DO UPDATE / DO NOTHING`) come from each dialect's
  own `insert` construct (the SQL is the same, the Python constructs are not shared);
- `contains_casefold`: a case-insensitive substring match with no wildcard characters
  (SQLite: a Python `casefold` function registered on each connection; PostgreSQL: `lower`);
- `insertion_order`: the tie-break for rows created in the same millisecond (SQLite's
  `rowid`; PostgreSQL's `runs.seq`, a column only the PostgreSQL baseline adds);
- `migration_lock`: only one process migrates at a time (SQLite: the write lock taken by
  `BEGIN IMMEDIATE`; PostgreSQL: a transaction-scoped advisory lock);
- `insert_event`: a run's events commit in id order, so a dashboard reading "events after
  id N" never skips one (SQLite: writers are serialised anyway; PostgreSQL: ids are drawn
  before commit, so the INSERT first takes a per-run advisory lock, held to its commit).
- `rows_as_json`: several queries as one statement, each query's rows one JSON column of it
  (`storage.live`): one round trip to PostgreSQL, one snapshot, and on SQLite the rows
  built into one text by SQLite itself (`json_group_array`, `json_object`), decoded at once.
JSON columns differ in `storage.schema.Json`, full-text search in `storage.fulltext`.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Insert,
    Select,
    Table,
    bindparam,
    func,
    insert,
    literal_column,
    select,
    type_coerce,
)
from sqlalchemy.dialects import postgresql, sqlite

from storage.schema import Json, events

# Any fixed number, the same in every process: pg_advisory_xact_lock(MIGRATION_LOCK_KEY).
MIGRATION_LOCK_KEY = 0x5EA5C4_17


def insert_for(dialect: str, table: Table) -> Any:
    """The dialect's INSERT construct for `table` (it has `on_conflict_do_update/nothing`)."""
    if dialect == "postgresql":
        return postgresql.insert(table)
    return sqlite.insert(table)


def contains_casefold(dialect: str, column: Any, needle: str) -> ColumnElement[bool]:
    """`needle` occurs in `column`, ignoring case; `%` and `_` are ordinary characters."""
    if dialect == "postgresql":
        return func.strpos(func.lower(column), needle.lower()) > 0
    return func.instr(func.py_casefold(column), needle.casefold()) > 0


def insertion_order(dialect: str) -> ColumnElement[Any]:
    """The runs table's insertion order (newest last), for ties in `created_at`."""
    return literal_column("runs.seq" if dialect == "postgresql" else "runs.rowid")


def migration_lock(conn: Connection) -> None:
    """Inside the open transaction on `conn`: wait until no other process is migrating.

    SQLite: the caller's `BEGIN IMMEDIATE` already holds the database's one write lock.
    PostgreSQL: an advisory lock, released when the transaction ends."""
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK_KEY})")


@cache
def insert_event(dialect: str) -> Insert:
    """The INSERT of one event (returning its id); see the module docstring.

    PostgreSQL: one statement that takes the run's lock before the id is drawn (a
    materialized CTE runs first, and the row, with its id, is made from its one row), so
    outside a transaction the event is one round trip to the server, not four (BEGIN, lock,
    INSERT, COMMIT): a busy team server answers each round trip slowly."""
    if dialect != "postgresql":
        return insert(events).returning(events.c.id)
    columns = ["run_id", "ts", "type", "step", "message", "data"]
    run = bindparam("run_id", type_=events.c.run_id.type)
    ordered = (select(func.pg_advisory_xact_lock(func.hashtext(run)).label("locked"))
               .cte("ordered").prefix_with("MATERIALIZED"))
    row = select(*[bindparam(c, type_=events.c[c].type) for c in columns]).select_from(ordered)
    return insert(events).from_select(columns, row).returning(events.c.id)


def rows_as_json(dialect: str, query: Select[Any]) -> ColumnElement[Any]:
    """Every row of `query` as one JSON array of objects (column name: value), in no set
    order: a column of an outer SELECT, so that several queries are one statement (one round
    trip to a team server, one snapshot of the database). It comes back decoded.

    PostgreSQL: `json_agg` of the rows, NULL for none; a float with no fraction comes back as
    an integer. SQLite: `json_group_array` of one `json_object` per row, `[]` for none (its
    JSON columns embedded with `json()`, which keeps their text); a REAL comes back with 15
    significant digits, as SQLite writes it in JSON (the durations it carries here are
    rounded to the millisecond, so they read back exactly). SQLite's JSON functions are built
    in since 3.38 (and were in Debian's and Python's own builds before)."""
    rows = query.subquery()
    if dialect == "postgresql":
        return select(func.json_agg(rows.table_valued())).scalar_subquery()
    pairs: list[Any] = []
    for column in rows.c:
        assert column.key.isidentifier()  # a column name of ours, written as a SQL string
        value = func.json(column) if isinstance(column.type, Json) else column
        pairs += [literal_column(f"'{column.key}'"), value]
    aggregated = select(func.json_group_array(func.json_object(*pairs))).scalar_subquery()
    return type_coerce(aggregated, Json())  # decoded as a JSON column is
