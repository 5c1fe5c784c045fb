"""The HTTP API's tokens (only their hashes) and its runs' callbacks (issue 34; storage.tokens).

On PostgreSQL the baseline builds today's `storage.schema` tables, so a database it has just
made has the tables already: only create what is missing.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    found = set(sa.inspect(op.get_bind()).get_table_names())
    if "api_tokens" not in found:
        op.create_table(
            "api_tokens",
            sa.Column("id", sa.Text(), primary_key=True),
            sa.Column("token_hash", sa.Text(), nullable=False, unique=True),
            sa.Column("person", sa.Text(), nullable=True),
            sa.Column("name", sa.Text(), nullable=False, server_default=sa.text("''")),
            sa.Column("created_at", sa.Text(), nullable=False),
            sa.Column("last_used_at", sa.Text(), nullable=True),
            sa.Column("revoked_at", sa.Text(), nullable=True),
        )
    if "api_callbacks" not in found:
        op.create_table(
            "api_callbacks",
            sa.Column("run_id", sa.Text(), primary_key=True),
            sa.Column("token_id", sa.Text(), nullable=False),
            sa.Column("url", sa.Text(), nullable=False),
            sa.Column("notified", sa.Text(), nullable=False, server_default=sa.text("''")),
            sa.Column("done", sa.Integer(), nullable=False, server_default=sa.text("0")),
            sa.Column("attempts", sa.Integer(), nullable=False, server_default=sa.text("0")),
            sa.Column("last_error", sa.Text(), nullable=True),
            sa.Column("updated_at", sa.Text(), nullable=False),
        )


def downgrade() -> None:
    raise NotImplementedError("the store only moves forward; restore a backup to go back")
