"""Persistence for Deep Research Studio: one SQLite file behind the `Store` class."""

from storage.db_value import DatabaseValueError, resolve_db_path
from storage.disk import DISK_FULL_MESSAGE, is_disk_full
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
    "DISK_FULL_MESSAGE",
    "DatabaseValueError",
    "MIGRATIONS",
    "RUN_STATUSES",
    "TERMINAL_STATUSES",
    "Store",
    "default_db_path",
    "is_disk_full",
    "resolve_db_path",
]
