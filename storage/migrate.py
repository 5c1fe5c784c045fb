"""Bringing a database to the current schema with Alembic, one process at a time.

`upgrade` is called by every `Store` as it opens and by `python -m research db upgrade`.
When nothing is pending it costs one read of `alembic_version`, compared with
`HEAD_REVISION`, and Alembic is never imported (importing it, with Mako and Pygments behind
it, is most of the start-up time of a CLI or worker process). Otherwise the work runs in one
transaction that first takes the migration lock (`storage.dialects.migration_lock`); a second
process arriving at the same moment waits, then finds the database current and does nothing.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, inspect, text

from storage.dialects import migration_lock
from storage.engine import Database

if TYPE_CHECKING:
    from alembic.config import Config

SCRIPT_LOCATION = Path(__file__).resolve().parent / "alembic"
VERSION_TABLE = "alembic_version"
# The newest revision in storage/alembic/versions: bump it with every new revision
# (tests/test_migrations.py checks it against what Alembic finds there).
HEAD_REVISION = "0005"


def alembic_config(conn: Connection | None = None) -> Config:
    from alembic.config import Config  # Alembic only when a migration really runs (see above)

    config = Config()
    config.set_main_option("script_location", str(SCRIPT_LOCATION))
    if conn is not None:
        config.attributes["connection"] = conn
    return config


@cache
def head_revision() -> str:
    """The newest revision shipped with this code, as Alembic reads it from the scripts."""
    from alembic.script import ScriptDirectory  # Alembic only when a migration really runs

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def current_revision(conn: Connection) -> str | None:
    """The revision `conn`'s database is at (None: never migrated by Alembic)."""
    from alembic.runtime.migration import MigrationContext  # only when a migration runs

    return MigrationContext.configure(conn).get_current_revision()


def stored_revision(conn: Connection) -> str | None:
    """The one revision in `alembic_version`, read with plain SQL so that opening a current
    database needs no Alembic; None when the table is missing or holds no single row (then
    `upgrade` hands the question to Alembic itself)."""
    if not inspect(conn).has_table(VERSION_TABLE):
        return None
    rows = conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars().all()
    return str(rows[0]) if len(rows) == 1 else None


def is_current(db: Database) -> bool:
    with db.read() as conn:
        return stored_revision(conn) == HEAD_REVISION


def upgrade(db: Database) -> tuple[str | None, str]:
    """Apply every pending revision; returns (revision before, revision after)."""
    if is_current(db):
        return HEAD_REVISION, HEAD_REVISION
    from alembic import command  # only when something is pending (see the module docstring)

    with db.write() as tx:
        migration_lock(tx.conn)
        before = current_revision(tx.conn)
        if before != head_revision():
            command.upgrade(alembic_config(tx.conn), "head")
        return before, current_revision(tx.conn) or ""
