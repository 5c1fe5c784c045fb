"""Is a `DEEP_RESEARCH_DB` / `--db` value a database we can use? Checked before anything opens it.

The value is a SQLite file path (the default) or a `postgresql://user:password@host:port/db`
URL (a team server). A URL's password is never printed: `redact_url` is how it is shown.

Why a separate check: `sqlite3.connect` turns every unusable value into "unable to open
database file" at best, and at worst happily creates a file somewhere surprising (a
`postgresql://user:password@host/db` URL becomes a folder named after the password). The
edges (CLI, dashboard) call `resolve_db_path` once, so the person gets a reason and a next
step, no run starts, and the file named is never written to (it stays byte-identical).
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat
from collections.abc import Mapping
from pathlib import Path

BUSY_WAIT_S = 5.0  # a writer checkpointing holds the file briefly; wait, then take "locked" as a yes
_URL = re.compile(r"^\s*([A-Za-z][A-Za-z0-9+.\-]*)://")
_POSTGRES_SCHEMES = ("postgres", "postgresql")
# `pathlib.Path` folds "//" into "/": code that wraps the setting in a Path (the dashboard's
# job manager does) hands over "postgresql:/user:pw@host/db". Nobody names a SQLite file so.
_FOLDED_POSTGRES = re.compile(r"^\s*(postgres(?:ql)?(?:\+[a-z0-9]+)?):/(?!/)", re.IGNORECASE)
_PASSWORD = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*://[^/@:]*:)([^/@]*)(@)")


class DatabaseValueError(ValueError):
    """The database setting cannot be used; the message says why and what to do (no secrets)."""


def postgres_url(value: str | os.PathLike[str] | None) -> str | None:
    """The PostgreSQL URL `value` names (also in its Path-folded form), else None."""
    text = os.fspath(value).strip() if value is not None else ""
    folded = _FOLDED_POSTGRES.match(text)
    if folded:
        text = f"{folded.group(1)}://{text[folded.end():]}"
    match = _URL.match(text)
    if match and match.group(1).lower().split("+")[0] in _POSTGRES_SCHEMES:
        return text
    return None


def redact_url(text: str) -> str:
    """A database URL fit to print: the password becomes ***."""
    return _PASSWORD.sub(r"\1***\3", text)


def resolve_db(value: str | os.PathLike[str] | None, default: Path) -> Path | str:
    """The SQLite file (a Path) or PostgreSQL URL (a str) to open for `value`, or
    DatabaseValueError saying why it cannot work."""
    url = postgres_url(value)
    return url if url is not None else resolve_db_path(value, default)


def resolve_db_path(value: str | os.PathLike[str] | None, default: Path) -> Path:
    """The SQLite file to open for `value`, or DatabaseValueError saying why it cannot work.

    An empty value means `default`, whose folder we may create (it is ours: `data/`). A value
    the person gave must name a usable file in an existing folder; we create nothing for it.
    """
    text = os.fspath(value).strip() if value is not None else ""
    if not text:
        return default
    _refuse_urls(text)
    path = Path(text).expanduser()
    _check_folder(path)
    if path.exists():
        _check_file(path)
    return path


def _refuse_urls(text: str) -> None:
    match = _URL.match(text)
    if not match:
        return
    scheme = match.group(1).lower()
    if scheme.split("+")[0] in _POSTGRES_SCHEMES:
        raise DatabaseValueError(
            "This setting needs a SQLite file path, not a PostgreSQL URL; give a file path "
            "such as data/research.db."
        )
    # Only the scheme is named: the rest of a URL may carry a password.
    raise DatabaseValueError(
        f"The database setting is a {scheme}:// address, but only a SQLite file path or a "
        "postgresql:// URL is supported; set DEEP_RESEARCH_DB (or --db) to a file path such as "
        "data/research.db, or to postgresql://user:password@host:5432/database."
    )


def _check_folder(path: Path) -> None:
    folder = path.parent
    if not folder.exists():
        raise DatabaseValueError(
            f"The folder {folder} for the database does not exist; create it first "
            f"(mkdir -p {folder}) or choose a database file in an existing folder."
        )
    if not folder.is_dir():
        raise DatabaseValueError(
            f"{folder} is not a folder, so the database {path.name} cannot be stored in it; "
            "choose a database file in an existing folder."
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        raise DatabaseValueError(
            f"The folder {folder} is read-only, and SQLite needs to write its journal beside the "
            "database; make the folder writable or choose a database file in another folder."
        )


def _check_file(path: Path) -> None:
    if path.is_dir():
        raise DatabaseValueError(
            f"{path} is a folder, not a database file; point DEEP_RESEARCH_DB (or --db) at a file "
            f"inside it, such as {path / 'research.db'}."
        )
    if not path.is_file():
        raise DatabaseValueError(
            f"{path} is not a regular file; point DEEP_RESEARCH_DB (or --db) at a database file."
        )
    mode = path.stat().st_mode
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(path, os.W_OK):
        raise DatabaseValueError(
            f"The database {path} is read-only; make it writable (chmod u+w {path}) or point "
            "DEEP_RESEARCH_DB (or --db) at another file."
        )
    if not os.access(path, os.R_OK):
        raise DatabaseValueError(
            f"The database {path} cannot be read (permission denied); check its permissions "
            "or choose another file."
        )
    if not _is_sqlite(path):
        raise DatabaseValueError(
            f"{path} is not a SQLite database (it holds something else), so it was left "
            "untouched; point DEEP_RESEARCH_DB (or --db) at another file name."
        )


def _is_sqlite(path: Path) -> bool:
    """Whether SQLite reads `path` as a database (an empty file is one: SQLite fills it).

    Asked of SQLite itself, read-only, and never by opening the file with Python: closing any
    descriptor of a file drops every POSIX lock this process holds on it, so a dashboard that
    checked its own database that way lost the shared locks of its open connections; the next
    process to close a connection then took itself for the last one, checkpointed and removed
    the WAL, and the dashboard's connections never saw another process's runs again. SQLite
    keeps its own descriptors open while other connections of the process hold locks."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True,
                               timeout=BUSY_WAIT_S)
    except sqlite3.Error:
        return False
    try:
        conn.execute("PRAGMA schema_version").fetchone()
    except sqlite3.Error as exc:  # "file is not a database"; or locked: only a database is
        return exc.sqlite_errorcode in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    finally:
        conn.close()
    return True

def db_path_from_env(env: Mapping[str, str], default: Path) -> Path:
    """`resolve_db_path` for the `DEEP_RESEARCH_DB` value in `env`; for a PostgreSQL URL,
    `default` (the local file whose folder keeps the dashboard's own files)."""
    value = env.get("DEEP_RESEARCH_DB")
    return default if postgres_url(value) else resolve_db_path(value, default)
