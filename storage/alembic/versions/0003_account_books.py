"""The model accounts' books: what each account allows and how much of its minute is spoken
for, so the workers and dashboards on one key share its limits (issue 31; storage.accounts).

On PostgreSQL the baseline builds today's `storage.schema` tables, so a database it has just
made has the table already: only create what is missing.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if "account_books" in sa.inspect(op.get_bind()).get_table_names():
        return
    op.create_table(
        "account_books",
        sa.Column("account_id", sa.Text(), primary_key=True),
        sa.Column("requests_per_minute", sa.Integer()),
        sa.Column("tokens_per_minute", sa.Integer()),
        sa.Column("requests_per_day", sa.Integer()),
        sa.Column("parallel", sa.Integer()),
        sa.Column("context_tokens", sa.Integer()),
        sa.Column("source", sa.Text(), nullable=False, server_default=sa.text("''")),
        sa.Column("requests_level", sa.Float(), nullable=False, server_default=sa.text("0")),
        sa.Column("tokens_level", sa.Float(), nullable=False, server_default=sa.text("0")),
        sa.Column("stamp", sa.Float(), nullable=False, server_default=sa.text("0")),
        sa.Column("paused_until", sa.Float(), nullable=False, server_default=sa.text("0")),
        sa.Column("updated_at", sa.Text(), nullable=False),
    )


def downgrade() -> None:
    raise NotImplementedError("the store only moves forward; restore a backup to go back")
