"""A report's versions: which run updated which earlier one (issue 36; storage.versions).

On PostgreSQL the baseline builds today's `storage.schema` tables, so a database it has just
made has the table already: only create what is missing.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if "report_versions" in set(sa.inspect(op.get_bind()).get_table_names()):
        return
    op.create_table(
        "report_versions",
        sa.Column("run_id", sa.Text(), primary_key=True),
        sa.Column("previous_run_id", sa.Text(), nullable=False),
        sa.Column("first_run_id", sa.Text(), nullable=False),
        sa.Column("since", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Text(), nullable=False),
    )
    op.create_index("idx_report_versions_first", "report_versions", ["first_run_id"])


def downgrade() -> None:
    raise NotImplementedError("the store only moves forward; restore a backup to go back")
