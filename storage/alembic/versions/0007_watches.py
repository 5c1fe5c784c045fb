"""Watched topics (issue 36; storage.watches): a finished run updated on a schedule.

On PostgreSQL the baseline builds today's `storage.schema` tables, so a database it has just
made has the table already: only create what is missing.

Revision ID: 0007
Revises: 0006 (on this branch, after merging `update`; rechained at merge)
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if "watches" in sa.inspect(op.get_bind()).get_table_names():
        return
    op.create_table(
        "watches",
        sa.Column("id", sa.Text(), primary_key=True),
        sa.Column("run_id", sa.Text(), nullable=False),
        sa.Column("first_run_id", sa.Text(), nullable=False),
        sa.Column("person", sa.Text(), nullable=True),
        sa.Column("every", sa.Text(), nullable=False),
        sa.Column("cost_cap", sa.Float(), nullable=True),
        sa.Column("threshold", sa.Float(), nullable=False, server_default=sa.text("0")),
        sa.Column("state", sa.Text(), nullable=False, server_default=sa.text("'active'")),
        sa.Column("next_at", sa.Text(), nullable=False),
        sa.Column("pending_run_id", sa.Text(), nullable=True),
        sa.Column("last_checked_at", sa.Text(), nullable=True),
        sa.Column("last_result", sa.Text(), nullable=False, server_default=sa.text("''")),
        sa.Column("updates_kept", sa.Integer(), nullable=False, server_default=sa.text("0")),
        sa.Column("created_at", sa.Text(), nullable=False),
        sa.Column("updated_at", sa.Text(), nullable=False),
    )
    op.create_index("idx_watches_due", "watches", ["state", "next_at"])


def downgrade() -> None:
    raise NotImplementedError("the store only moves forward; restore a backup to go back")
