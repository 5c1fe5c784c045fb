"""Baseline: the schema as it was when the store moved to Alembic.

SQLite: the frozen hand-written steps m001 to m006 (`storage.migrations`), each applied only
if the file does not record it yet, so a file made by any earlier version keeps every row and
reaches this schema in place, and a new file is built by exactly the same steps.

PostgreSQL: the tables of `storage.schema` as they are at this revision, plus what only
PostgreSQL has: `runs.seq` (insertion order, SQLite's rowid) and the passages' `tsv` column
(a generated tsvector with a GIN index: full-text search, see `storage.fulltext`).
A later revision that changes a table must therefore accept a PostgreSQL database that
already has the change (0002 adds `runs.person` only where it is missing).

Revision ID: 0001
Revises:
"""

from __future__ import annotations

from alembic import op

from storage import fulltext
from storage.engine import Tx
from storage.migrations import apply_migrations
from storage.schema import metadata

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        apply_migrations(Tx(bind))
        return
    metadata.create_all(bind)
    op.execute("ALTER TABLE runs ADD COLUMN seq BIGSERIAL")
    op.execute("CREATE INDEX idx_runs_created_seq ON runs (created_at DESC, seq DESC)")
    fulltext.create_postgres_index(bind)


def downgrade() -> None:
    raise NotImplementedError("the store only moves forward; restore a backup to go back")
