"""Bringing a database to the current schema with Alembic, one process at a time.

`upgrade` is called by every `Store` as it opens (cheap when nothing is pending: one read of
`alembic_version`) and by `python -m research db upgrade`. The work runs in one transaction
that first takes the migration lock (`storage.dialects.migration_lock`); a second process
arriving at the same moment waits, then finds the database current and does nothing.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection

from storage.dialects import migration_lock
from storage.engine import Database

SCRIPT_LOCATION = Path(__file__).resolve().parent / "alembic"


def alembic_config(conn: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(SCRIPT_LOCATION))
    if conn is not None:
        config.attributes["connection"] = conn
    return config


@cache
def head_revision() -> str:
    """The newest revision shipped with this code."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def current_revision(conn: Connection) -> str | None:
    """The revision `conn`'s database is at (None: never migrated by Alembic)."""
    return MigrationContext.configure(conn).get_current_revision()


def is_current(db: Database) -> bool:
    with db.read() as conn:
        return current_revision(conn) == head_revision()


def upgrade(db: Database) -> tuple[str | None, str]:
    """Apply every pending revision; returns (revision before, revision after)."""
    if is_current(db):
        return head_revision(), head_revision()
    with db.write() as tx:
        migration_lock(tx.conn)
        before = current_revision(tx.conn)
        if before != head_revision():
            command.upgrade(alembic_config(tx.conn), "head")
        return before, current_revision(tx.conn) or ""
