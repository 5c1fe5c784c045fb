"""What every part of the `Store` shares: the database, its transactions, and redaction.

Why it looks like this:
- one `storage.engine.Database` per Store (SQLite file or PostgreSQL URL), safe to share
  between threads (the engine's workers, the Streamlit script thread and the job manager all
  read and write at once); every write is one short transaction (`transaction`);
- text that may carry an API key (event messages and data, errors, configs) goes through
  `research.core.errors.redact` first; everything else loses the exact known secrets;
- every text loses invisible formatting controls (`research.untrusted.textclean`) and NUL characters:
  model answers are untrusted, and this is the one door all of them pass on their way to a
  report or export (PostgreSQL also refuses NUL in text).

This package imports nothing from `research` at import time (`research` imports `storage`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from functools import cache
from pathlib import Path
from typing import Any, Self

from sqlalchemy import Select, Table, bindparam, select, text
from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.sql import Executable

from storage import migrate, wal
from storage.db_value import postgres_url, redact_url
from storage.disk import is_disk_full
from storage.engine import Database, Tx, sqlite_url
from storage.engine import postgres_url as sa_postgres_url
from storage.rows import Params, Row


@cache
def of_run(table: Table, order: str | None = None) -> Select[Any]:
    """Every row of one run in `table`, ordered by the column `order`: built once per table
    (constructing a statement and its cache key costs SQLAlchemy more than running it)."""
    query = select(table).where(table.c.run_id == bindparam("run_id"))
    return query.order_by(table.c[order]) if order else query


class DatabaseUnavailableError(RuntimeError):
    """The database cannot be opened: the PostgreSQL server cannot be reached or refused us,
    or the SQLite file is refused by SQLite itself (damaged, locked); the message says so
    plainly (a URL shown without its password), without the library's wrapping."""


def open_database(path: str | Path, wal_limit_bytes: int = wal.WAL_LIMIT_BYTES,
                  ) -> tuple[Database, Path | None, str]:
    """The database `path` names (a SQLite file, whose folder is made, or a PostgreSQL URL),
    its file (None for PostgreSQL) and how to name it to a person (no password)."""
    url_text = postgres_url(path)  # also the form a Path folds a URL into (db_value)
    if url_text:
        url: URL = sa_postgres_url(url_text)
        return Database(url), None, redact_url(url_text)
    file = Path(path)
    file.parent.mkdir(parents=True, exist_ok=True)
    return Database(sqlite_url(file), wal_limit_bytes=wal_limit_bytes), file, str(file)


class StoreBase:
    """The connection plumbing and redaction helpers the table groups build on."""

    def __init__(self, path: str | Path, *, secrets: Iterable[str] = (),
                 wal_limit_bytes: int = wal.WAL_LIMIT_BYTES) -> None:
        # Imported here, not at module level: `research` imports `storage`, and a module-level
        # import back into `research` would make `import storage` fail when it comes first.
        from research.core.errors import redact
        from research.untrusted.textclean import strip_hidden_controls

        self._redact_text = redact
        self._strip_hidden = strip_hidden_controls
        self._secrets = tuple(s for s in secrets if s)
        self._database, self.path, self.location = open_database(path, wal_limit_bytes)
        self.dialect = self._database.dialect
        self.wal = self._database.wal
        try:
            migrate.upgrade(self._database)
        except DBAPIError as exc:
            if is_disk_full(exc):  # said as a full disk where it surfaces (storage/disk.py)
                raise
            raise DatabaseUnavailableError(self._refused(exc)) from None

    def _refused(self, exc: DBAPIError) -> str:
        """Why the database could not be opened, in the driver's own words (its first line:
        no exception class, no help link)."""
        lines = str(exc.orig or exc).strip().splitlines()
        reason = redact_url(lines[0]) if lines else "no answer"
        if self.dialect != "postgresql":
            return (f"Could not open the database at {self.location} ({reason}). Check that it "
                    "is a research database and no other program holds it, or choose another "
                    "file with DEEP_RESEARCH_DB (or --db).")
        if isinstance(exc, OperationalError):
            return (f"Could not reach the PostgreSQL database at {self.location} ({reason}). "
                    "Check that the server runs and the URL in DEEP_RESEARCH_DB (or --db) is "
                    "right.")
        return (f"The PostgreSQL database at {self.location} refused to be set up ({reason}). "
                "Check that its user may create tables there.")

    # -- transactions and queries -------------------------------------------------------
    # The store's own modules (its table groups here, `storage.documents`, `storage.copy`)
    # run their SQLAlchemy statements through these; SQL is written only inside `storage/`.

    def transaction(self) -> AbstractContextManager[Tx]:
        """One short transaction (SQLite: holding the write lock from the start). Nests: the
        Store's writes inside it join it, and reads on this thread see it."""
        return self._database.write()

    def query(self, statement: Executable | str, params: Params | None = None) -> list[Row]:
        """Rows as plain dicts. A string is SQL with named `:parameters` (tests, one-offs)."""
        if isinstance(statement, str):
            statement = text(statement)
        return self._database.rows(statement, params)

    def query_one(self, statement: Executable | str, params: Params | None = None) -> Row | None:
        """The first row of `query`, or None."""
        rows = self.query(statement, params)
        return rows[0] if rows else None

    def query_value(self, statement: Executable, params: Params | None = None) -> Any:
        """The first column of the first row, or None."""
        return self._database.value(statement, params)

    def _run_rows(self, table: Table, run_id: str, order: str | None = None) -> list[Row]:
        """Every row of one run in `table`, ordered by the column `order`."""
        return self.query(of_run(table, order), {"run_id": run_id})

    def close(self) -> None:
        """Close the idle connections; the Store stays usable and reconnects when asked."""
        self._database.dispose()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- redaction -----------------------------------------------------------------------

    def _clean(self, text_: str) -> str:
        return self._strip_hidden(text_).replace("\x00", "")

    def _redact(self, text_: str | None) -> str | None:
        """Full redaction: known secrets and anything key-shaped."""
        return None if text_ is None else self._redact_text(self._clean(text_), self._secrets)

    def redacted(self, text_: str | None) -> str | None:
        """Text as the store keeps an error: known secrets and anything key-shaped masked."""
        return self._redact(text_)

    def _scrub(self, value: Any) -> Any:
        """Full redaction of every string inside a JSON-like value (keys included)."""
        return walk(value, lambda t: self._redact_text(self._clean(t), self._secrets))

    def clean_content(self, value: Any) -> Any:
        """Content (pages, drafts, reports, documents) loses only the exact known secrets, in
        every string inside it (and invisible controls, NUL): pattern masking could damage
        ordinary words, and pages are not where our own keys come from."""
        def strip(t: str) -> str:
            t = self._clean(t)
            for secret in self._secrets:
                if len(secret) >= 6:
                    t = t.replace(secret, "[redacted]")
            return t

        return walk(value, strip)


def walk(value: Any, fix: Callable[[str], str]) -> Any:
    """`fix` applied to every string inside a JSON-like value (mapping keys included)."""
    if isinstance(value, str):
        return fix(value)
    if isinstance(value, Mapping):
        return {fix(str(k)): walk(v, fix) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [walk(v, fix) for v in value]
    return value
