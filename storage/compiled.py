"""A hot write's SQL, compiled once per database, for `Connection.exec_driver_sql`.

Why: a heartbeat, a usage upsert or an event is one small statement, written many times a
second per run, and on SQLite every writer holds the one write lock while it runs. Even with
its compiled-statement cache, `Connection.execute` spends about 35 µs per statement finding
the cached compilation (the statement's cache key) and setting up its parameters, several
times what SQLite spends on the statement. So these statements are compiled here once, and
run with `Connection.exec_driver_sql`: still SQLAlchemy's connection, with its events, error
wrapping and result object, and still SQLAlchemy's SQL, compiled exactly as `execute` would
compile it (for the same dialect and the same parameter names, which decide an INSERT's
columns); each parameter goes through its column type's own bind processor, as in
`execute`. What `exec_driver_sql` skips is result processing, so only statements that
return nothing, or integers and text (an event's id), are run this way (`compile_plain`
says None to the others, which keep `execute`).
See https://docs.sqlalchemy.org/en/20/core/connections.html#sqlalchemy.engine.Connection.exec_driver_sql
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Dialect, Integer, String
from sqlalchemy.sql import Executable

from storage.rows import Params


@dataclass(frozen=True)
class Compiled:
    """One statement as one dialect's SQL, for one set of parameter names."""

    sql: str
    positional: bool  # qmark (SQLite): a tuple in `order`; else psycopg's pyformat: a dict
    order: tuple[tuple[str, Callable[[Any], Any] | None], ...]  # each bind, its processor
    fixed: dict[str, object]  # values the statement carries itself (a literal such as `+ 1`)

    def args(self, params: Params) -> Any:
        """The driver's parameters, each converted by its type's bind processor."""
        values = []
        for name, process in self.order:
            value = params[name] if name in params else self.fixed[name]
            values.append(value if process is None else process(value))  # None too, as execute
        if self.positional:
            return tuple(values)
        return dict(zip((name for name, _ in self.order), values, strict=True))


def compile_plain(statement: Executable, dialect: Dialect, keys: Sequence[str], *,
                  any_result: bool = False) -> Compiled | None:
    """`statement` compiled for `dialect` and the parameters `keys`, or None when it needs
    SQLAlchemy at each run (an `IN` list, a value computed per run) or, unless `any_result`
    (the caller converts the results itself: `storage.direct`), when what it returns needs
    SQLAlchemy's result processing (anything but integers and text)."""
    returned = getattr(statement, "exported_columns", None) or ()
    if not any_result and any(not isinstance(column.type, Integer | String)
                              for column in returned):
        return None
    compiled = statement.compile(  # type: ignore[attr-defined]
        dialect=dialect, column_keys=list(keys) or None)
    if (compiled.literal_execute_params or compiled.post_compile_params
            or compiled.escaped_bind_names):
        return None  # expanded per call (`IN` lists), or renamed in the SQL: left to `execute`
    if any(bind.callable is not None for bind in compiled.binds.values()):
        return None  # a value computed at each run
    # By the name each parameter has in the SQL (an anonymous one, such as the literal in
    # `calls + 1`, is named there param_1, ...).
    named = {compiled.bind_names[bind]: bind for bind in compiled.binds.values()}
    processors = {name: bind.type.dialect_impl(dialect).bind_processor(dialect)
                  for name, bind in named.items()}
    positional = dialect.paramstyle == "qmark"
    names = list(compiled.positiontup or []) if positional else list(processors)
    fixed = {name: bind.value for name, bind in named.items()
             if not bind.required and name not in keys}
    return Compiled(str(compiled), positional,
                    tuple((name, processors.get(name)) for name in names), fixed)
