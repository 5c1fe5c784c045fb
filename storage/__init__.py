"""Persistence for Deep Research Studio: one SQLite file behind the `Store` class."""

from storage.db_value import DatabaseValueError, resolve_db_path
from storage.migrations import MIGRATIONS
from storage.store import (
    CONTROL_ACTIONS,
    RUN_STATUSES,
    TERMINAL_STATUSES,
    Store,
    default_db_path,
)

__all__ = [
    "CONTROL_ACTIONS",
    "DatabaseValueError",
    "MIGRATIONS",
    "RUN_STATUSES",
    "TERMINAL_STATUSES",
    "Store",
    "default_db_path",
    "resolve_db_path",
]
