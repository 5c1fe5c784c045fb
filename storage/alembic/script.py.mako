"""${message}

Revision ID: ${up_revision}
Revises: ${down_revision | comma,n}
Create Date: ${create_date}
"""

from __future__ import annotations

from alembic import op
${imports if imports else ""}
revision = ${repr(up_revision)}
down_revision = ${repr(down_revision)}
branch_labels = ${repr(branch_labels)}
depends_on = ${repr(depends_on)}


def upgrade() -> None:
    """Say why the schema changes. On SQLite, alter tables inside op.batch_alter_table()."""
    ${upgrades if upgrades else "pass"}


def downgrade() -> None:
    raise NotImplementedError("the store only moves forward; restore a backup to go back")
