"""Each run's person: who started it, so a team's dashboards show everyone only their own runs.

`runs.person` is the signed-in person's identity (their e-mail, else the provider's subject),
or NULL for a run started without sign-in (one person, no `[auth]`; the CLI without
`--owner`). It is also the run's fair-share person on the queue (`research.runs.engine`). Not
`owner`: that older column names the process that heartbeats a running run ("pid:N@host").

SQLite alters the table in batch mode (`storage/alembic/env.py`); adding a nullable column
keeps every row as it is. On PostgreSQL the baseline builds today's `storage.schema`
tables, so a database it has just made has the column already: only add what is missing.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

INDEX = "idx_runs_person"


def upgrade() -> None:
    found = sa.inspect(op.get_bind())
    columns = {c["name"] for c in found.get_columns("runs")}
    indexes = {i["name"] for i in found.get_indexes("runs")}
    with op.batch_alter_table("runs") as batch:
        if "person" not in columns:
            batch.add_column(sa.Column("person", sa.Text(), nullable=True))
        if INDEX not in indexes:
            batch.create_index(INDEX, ["person", "created_at"])


def downgrade() -> None:
    raise NotImplementedError("the store only moves forward; restore a backup to go back")
