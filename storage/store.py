"""The one door to the database: the `Store` facade over SQLite (default) or PostgreSQL.

The Store's methods live in modules by table group, each a small class the facade combines:
`storage.runs` (runs), `storage.steps` (plan, steps), `storage.results` (sources, findings,
queries, skipped pages), `storage.writing` (drafts, reviews, report, hosted engines,
verifications), `storage.log` (events, usage), `storage.live` (the live panel's one
read) and `storage.accounts` (the model accounts' shared books), over `storage.base` (the database,
transactions, redaction). Queries are SQLAlchemy Core, written once for both databases and
run one way, through `storage.engine.Database` (`rows`, `value`, `write_one`, `transaction`);
the hot ones are module constants, so SQLAlchemy's compiled-statement cache knows them after
their first run, and on SQLite a statement run again goes to the driver's cursor with
SQLAlchemy's own compilation and conversions (`storage.direct`); `storage.dialects` holds what
differs. `storage.documents` and `storage.copy` run theirs through the Store's public
`transaction`, `query`, `query_one` and `query_value`, as the table groups do on themselves;
nothing outside `storage/` writes SQL. Callers only ever see Python values.

`Store(path)` opens a SQLite file (WAL mode, see `storage.engine` and `storage.wal`);
`Store("postgresql://user:password@host:5432/db")` a PostgreSQL database. Either way the
schema is brought up to date first (`storage.migrate`, Alembic).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from storage.accounts import AccountsStore
from storage.base import DatabaseUnavailableError
from storage.db_value import db_path_from_env, resolve_db
from storage.live import LiveStore
from storage.log import LogStore
from storage.results import ResultsStore
from storage.runs import CONTROL_ACTIONS, RUN_STATUSES, TERMINAL_STATUSES, RunsStore
from storage.steps import PLAN_KINDS
from storage.writing import WritingStore

__all__ = ["CONTROL_ACTIONS", "DatabaseUnavailableError", "PLAN_KINDS", "RUN_STATUSES",
           "TERMINAL_STATUSES", "Store", "default_db", "default_db_path"]

_PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DB = _PROJECT_ROOT / "data" / "research.db"


class Store(RunsStore, ResultsStore, WritingStore, LogStore, LiveStore, AccountsStore):
    """All persistence for Deep Research Studio. Safe to share between threads."""


def _env(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return env if env is not None else os.environ


def default_db(env: Mapping[str, str] | None = None) -> Path | str:
    """What to open: `DEEP_RESEARCH_DB` (from `env`, default the process environment), a file
    path or a postgresql:// URL, else `<project root>/data/research.db`. Raises
    DatabaseValueError (plain words) for a value that cannot work, before anything opens."""
    return resolve_db(_env(env).get("DEEP_RESEARCH_DB"), DEFAULT_DB)


def chosen_db(given: str | None, env: Mapping[str, str] | None = None) -> Path | str:
    """The database a command was pointed at: its `--db` when given, else `default_db(env)`.
    Raises DatabaseValueError (plain words) as they do."""
    return resolve_db(given, default_db_path({})) if given else default_db(env)


def default_db_path(env: Mapping[str, str] | None = None) -> Path:
    """The local database file: `DEEP_RESEARCH_DB` if it is a path, else
    `<project root>/data/research.db` (with a PostgreSQL store, the file whose folder keeps
    the dashboard's own files). Raises DatabaseValueError for a path that cannot work."""
    return db_path_from_env(_env(env), DEFAULT_DB)
