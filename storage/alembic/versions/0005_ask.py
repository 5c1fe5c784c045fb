"""Ask the report (issue 35; storage.conversations): a finished run's gathered sources cut into
passages with a full-text index of their own, and the questions asked of the report.

SQLite: `ask_passages` with an external-content FTS5 index (`ask_passages_fts`, BM25, porter
stemming, as the person's document passages) kept in step by triggers. PostgreSQL: a
generated `tsv` column with a GIN index (as `passages`). The baseline builds today's
`storage.schema` tables on PostgreSQL, so only what is missing is created.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from storage.schema import Json

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_FTS = ("CREATE VIRTUAL TABLE ask_passages_fts USING fts5(text, content='ask_passages', "
        "content_rowid='id', tokenize='porter unicode61')")
_INSERTED = ("CREATE TRIGGER ask_passages_ai AFTER INSERT ON ask_passages BEGIN "
             "INSERT INTO ask_passages_fts(rowid, text) VALUES (new.id, new.text); END")
_DELETED = ("CREATE TRIGGER ask_passages_ad AFTER DELETE ON ask_passages BEGIN "
            "INSERT INTO ask_passages_fts(ask_passages_fts, rowid, text) "
            "VALUES ('delete', old.id, old.text); END")
_TSV = ("ALTER TABLE ask_passages ADD COLUMN tsv tsvector GENERATED ALWAYS AS "
        "(to_tsvector('english', coalesce(text, ''))) STORED")
_GIN = "CREATE INDEX idx_ask_passages_tsv ON ask_passages USING GIN (tsv)"


def upgrade() -> None:
    bind = op.get_bind()
    found = set(sa.inspect(bind).get_table_names())
    run_fk = sa.ForeignKey("runs.id", ondelete="CASCADE")
    if "ask_passages" not in found:
        op.create_table(
            "ask_passages",
            sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
            sa.Column("run_id", sa.Text(), run_fk, nullable=False),
            sa.Column("source_id", sa.Text(), nullable=False),
            sa.Column("seq", sa.Integer(), nullable=False),
            sa.Column("text", sa.Text(), nullable=False),
        )
        op.create_index("idx_ask_passages_run", "ask_passages", ["run_id", "source_id", "seq"])
    if "conversations" not in found:
        op.create_table(
            "conversations",
            sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
            sa.Column("run_id", sa.Text(), sa.ForeignKey("runs.id", ondelete="CASCADE"),
                      nullable=False),
            sa.Column("person", sa.Text(), nullable=True),
            sa.Column("question", sa.Text(), nullable=False),
            sa.Column("answer", sa.Text(), nullable=False, server_default=sa.text("''")),
            sa.Column("status", sa.Text(), nullable=False, server_default=sa.text("'answered'")),
            sa.Column("details", Json(), nullable=False, server_default=sa.text("'{}'")),
            sa.Column("cost_usd", sa.Float(), nullable=False, server_default=sa.text("0")),
            sa.Column("created_at", sa.Text(), nullable=False),
            sqlite_autoincrement=True,
        )
        op.create_index("idx_conversations_run", "conversations", ["run_id", "id"])
    if bind.dialect.name == "sqlite":
        if "ask_passages_fts" not in found:
            op.execute(_FTS)
            op.execute(_INSERTED)
            op.execute(_DELETED)
        return
    columns = {c["name"] for c in sa.inspect(bind).get_columns("ask_passages")}
    if "tsv" not in columns:
        op.execute(_TSV)
        op.execute(_GIN)


def downgrade() -> None:
    raise NotImplementedError("the store only moves forward; restore a backup to go back")
