"""Persistence for Deep Research Studio: the `Store` class over SQLite or PostgreSQL."""

from storage.db_value import DatabaseValueError, redact_url, resolve_db, resolve_db_path
from storage.disk import DISK_FULL_MESSAGE, is_disk_full
from storage.migrations import MIGRATIONS
from storage.store import (
    CONTROL_ACTIONS,
    RUN_STATUSES,
    TERMINAL_STATUSES,
    DatabaseUnavailableError,
    Store,
    chosen_db,
    default_db,
    default_db_path,
)

__all__ = [
    "CONTROL_ACTIONS",
    "DISK_FULL_MESSAGE",
    "DatabaseUnavailableError",
    "DatabaseValueError",
    "MIGRATIONS",
    "RUN_STATUSES",
    "TERMINAL_STATUSES",
    "Store",
    "chosen_db",
    "default_db",
    "default_db_path",
    "is_disk_full",
    "redact_url",
    "resolve_db",
    "resolve_db_path",
]
