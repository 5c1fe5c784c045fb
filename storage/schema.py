"""Today's tables, written once as SQLAlchemy Core metadata: what every query is built from.

The SQLite file's tables were made by the hand-written steps in `storage.migrations` (m001 to
m006) before the store moved to Alembic; this metadata describes exactly that schema plus the
later Alembic revisions (0002: `runs.person`; 0003: `account_books`; 0004: `api_tokens`,
`api_callbacks`; 0006: `report_versions`; 0007: `watches`), so a file made by an older version needs only
those, and a PostgreSQL database is created from it
(`storage/alembic/versions/0001_baseline.py`). `tests/test_migrations.py` compares the two.

JSON columns use `Json` (text on SQLite, JSONB on PostgreSQL); timestamps are ISO-8601 text
in one format (UTC, milliseconds, Z), so they sort as text on both databases.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import (
    Column,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.types import TypeDecorator, TypeEngine


def dumps(value: Any) -> str:
    """JSON as the store writes it (non-ASCII kept, unknown objects as their text)."""
    return json.dumps(value, ensure_ascii=False, default=str)


class Json(TypeDecorator[Any]):
    """A JSON column: text holding JSON on SQLite (as the file has always stored it), JSONB on
    PostgreSQL. Callers only ever see Python values. The one place JSON differs by dialect."""

    impl = Text
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            return dialect.type_descriptor(JSONB(none_as_null=True))
        return dialect.type_descriptor(Text())

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if value is None or dialect.name == "postgresql":
            return value
        return value if isinstance(value, str) else dumps(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        if value is None or dialect.name == "postgresql" or not isinstance(value, str | bytes):
            return value
        return json.loads(value)

    def result_processor(self, dialect: Dialect, coltype: object) -> Any:
        """SQLite: `process_result_value` as one plain function (the live panel decodes a
        few hundred of these per refresh; TypeDecorator's general wrapper costs more than
        the decoding). PostgreSQL: TypeDecorator's own (psycopg decodes JSONB itself)."""
        if dialect.name == "postgresql":
            return super().result_processor(dialect, coltype)
        loads = json.loads

        def process(value: Any) -> Any:
            return loads(value) if isinstance(value, str | bytes) else value

        return process


metadata = MetaData()


def _run_fk() -> ForeignKey:
    return ForeignKey("runs.id", ondelete="CASCADE")


def _jcol(name: str, default: str) -> Column[Any]:
    return Column(name, Json(), nullable=False, server_default=text(f"'{default}'"))


def _txt(name: str, default: str | None = None, *, nullable: bool = True) -> Column[Any]:
    if default is None:
        return Column(name, Text, nullable=nullable)
    return Column(name, Text, nullable=False, server_default=text(f"'{default}'"))


def _int(name: str, default: int | None = None) -> Column[Any]:
    if default is None:
        return Column(name, Integer, nullable=False)
    return Column(name, Integer, nullable=False, server_default=text(str(default)))


def _real(name: str, default: int | None = None) -> Column[Any]:
    if default is None:
        return Column(name, Float, nullable=True)
    return Column(name, Float, nullable=False, server_default=text(str(default)))


def _id() -> Column[Any]:
    return Column("id", Integer, primary_key=True, autoincrement=True)


runs = Table(
    "runs", metadata,
    Column("id", Text, primary_key=True),
    _txt("question", nullable=False),
    _jcol("config", "{}"),
    _txt("engine", "pipeline"),
    Column("parent_run_id", Text, ForeignKey("runs.id", ondelete="SET NULL")),
    _txt("status", "queued"),
    _txt("error"),
    _txt("created_at", nullable=False),
    _txt("started_at"), _txt("finished_at"), _real("duration_s"),
    _jcol("totals", "{}"),
    _txt("owner"), _txt("heartbeat_at"), _txt("control"), _txt("updated_at"),
    _jcol("warnings", "[]"),
    _txt("person"),  # who started the run (sign-in), NULL without sign-in: 0002_run_person.py
    Index("idx_runs_created_at", "created_at"),
    Index("idx_runs_status", "status"),
    Index("idx_runs_parent", "parent_run_id"),
    Index("idx_runs_person", "person", "created_at"),
)

plans = Table(
    "plans", metadata,
    Column("run_id", Text, _run_fk(), nullable=False),
    _int("version"), _txt("kind", "original"),
    Column("subtopics", Json(), nullable=False),
    _txt("created_at", nullable=False),
    PrimaryKeyConstraint("run_id", "version"),
)

steps = Table(
    "steps", metadata, _id(),
    Column("run_id", Text, _run_fk(), nullable=False),
    _txt("key", nullable=False), _txt("kind", ""), _txt("label", ""), _txt("subtopic_id"),
    _txt("status", "running"), _int("attempts", 0),
    _txt("started_at"), _txt("finished_at"), _real("duration_s"),
    Column("result", Json()), _int("source_count", 0), _txt("error"),
    UniqueConstraint("run_id", "key"),
    sqlite_autoincrement=True,
)

sources = Table(
    "sources", metadata,
    Column("run_id", Text, _run_fk(), nullable=False),
    _txt("id", nullable=False), _txt("url", nullable=False), _txt("canonical_url", nullable=False),
    _txt("title", ""), _txt("snippet", ""), _txt("text", ""), _txt("published"),
    _real("relevance", 0), _txt("relevance_reason", ""), _txt("subtopic_id"),
    _txt("provider", ""), _txt("query", ""), _int("round", 1), _txt("fetched_at"),
    _txt("step_key"), _jcol("cited_in", "[]"),
    _txt("source_kind", "unknown"), _jcol("signals", "[]"), _txt("author"),
    PrimaryKeyConstraint("run_id", "id"),
    UniqueConstraint("run_id", "canonical_url"),
    Index("idx_sources_order", "run_id", "subtopic_id", text("relevance DESC"), "id"),
)

findings = Table(
    "findings", metadata, _id(),
    Column("run_id", Text, _run_fk(), nullable=False),
    _txt("step_key"), _txt("subtopic_id"), _txt("claim", nullable=False),
    _jcol("source_ids", "[]"), _real("confidence", 0), _txt("kind", "finding"),
    _txt("created_at", nullable=False),
    Index("idx_findings_run", "run_id", "id"),
    sqlite_autoincrement=True,
)

queries = Table(
    "queries", metadata, _id(),
    Column("run_id", Text, _run_fk(), nullable=False),
    _txt("step_key"), _txt("subtopic_id"), _txt("query", nullable=False),
    _txt("provider", ""), _int("result_count", 0), _txt("error"),
    _txt("created_at", nullable=False),
    Index("idx_queries_run", "run_id", "id"),
    sqlite_autoincrement=True,
)

skipped_pages = Table(
    "skipped_pages", metadata, _id(),
    Column("run_id", Text, _run_fk(), nullable=False),
    _txt("step_key"), _txt("subtopic_id"), _txt("url", nullable=False), _txt("reason", ""),
    _txt("created_at", nullable=False),
    Index("idx_skipped_run", "run_id", "id"),
    sqlite_autoincrement=True,
)

drafts = Table(
    "drafts", metadata,
    Column("run_id", Text, _run_fk(), nullable=False),
    _int("version"), _txt("kind", nullable=False), _txt("text", nullable=False),
    _jcol("numbering", "{}"), _int("word_count", 0), _txt("created_at", nullable=False),
    PrimaryKeyConstraint("run_id", "version"),
)

reviews = Table(
    "reviews", metadata,
    Column("run_id", Text, _run_fk(), nullable=False),
    _int("cycle"), _int("draft_version"), _int("approved"), _int("model_approved"),
    _jcol("issues", "[]"), _jcol("strengths", "[]"), _jcol("checks", "{}"),
    _txt("created_at", nullable=False),
    PrimaryKeyConstraint("run_id", "cycle"),
)

reports = Table(
    "reports", metadata,
    Column("run_id", Text, _run_fk(), primary_key=True),
    _txt("markdown", nullable=False), _jcol("meta", "{}"), _txt("created_at", nullable=False),
)

verifications = Table(
    "verifications", metadata, _id(),
    Column("run_id", Text, _run_fk(), nullable=False),
    _txt("claim_id", nullable=False), _txt("claim", ""), _jcol("source_ids", "[]"),
    _txt("verdict", ""), _txt("passage"), _txt("reviewer"), _txt("created_at", nullable=False),
    _txt("section"), _txt("subtopic"), _txt("verifier_verdict"), _txt("auditor_verdict"),
    _txt("critic_verdict"), _txt("status"), _txt("final_text"), _txt("note"),
    _jcol("details", "{}"),
    UniqueConstraint("run_id", "claim_id"),
    sqlite_autoincrement=True,
)

usage = Table(
    "usage", metadata,
    Column("run_id", Text, _run_fk(), nullable=False),
    _txt("role", nullable=False), _txt("provider", nullable=False), _txt("model", nullable=False),
    _int("input_tokens", 0), _int("output_tokens", 0), _real("cost_usd", 0), _int("calls", 0),
    _txt("updated_at", nullable=False),
    PrimaryKeyConstraint("run_id", "role", "provider", "model"),
)

events = Table(
    "events", metadata, _id(),
    Column("run_id", Text, _run_fk(), nullable=False),
    _txt("ts", nullable=False), _txt("type", nullable=False), _txt("step"),
    _txt("message", ""), _jcol("data", "{}"),
    Index("idx_events_run", "run_id", "id"),
    sqlite_autoincrement=True,
)

engine_reports = Table(
    "engine_reports", metadata,
    Column("run_id", Text, _run_fk(), nullable=False),
    _txt("engine", nullable=False), _txt("remote_id"), _txt("status", "starting"),
    _txt("markdown", ""), _jcol("numbering", "{}"), _jcol("meta", "{}"), _txt("error"),
    _txt("created_at", nullable=False), _txt("updated_at", nullable=False),
    PrimaryKeyConstraint("run_id", "engine"),
)

documents = Table(
    "documents", metadata,
    Column("id", Text, primary_key=True),
    _txt("title", nullable=False), _txt("filename", nullable=False), _txt("kind", nullable=False),
    _int("size_bytes"), Column("pages", Integer), _int("passages", 0),
    _txt("status", nullable=False), _txt("message"), _txt("sha256", nullable=False),
    _txt("added_at", nullable=False),
    Index("idx_documents_sha", "sha256"),
)

collections = Table(
    "collections", metadata,
    Column("name", Text, primary_key=True), _txt("created_at", nullable=False),
)

collection_documents = Table(
    "collection_documents", metadata,
    Column("collection", Text, ForeignKey("collections.name", ondelete="CASCADE"),
           nullable=False),
    Column("document_id", Text, ForeignKey("documents.id", ondelete="CASCADE"), nullable=False),
    PrimaryKeyConstraint("collection", "document_id"),
    Index("idx_collection_documents_doc", "document_id"),
)

passages = Table(
    "passages", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("document_id", Text, ForeignKey("documents.id", ondelete="CASCADE"), nullable=False),
    _int("seq"), Column("page", Integer), _txt("section", ""), _txt("text", nullable=False),
    Index("idx_passages_document", "document_id", "seq"),
)

# "Ask the report" (issue 35; storage.conversations): the run's gathered source text cut into
# passages with a full-text index of their own (FTS5 on SQLite, a tsvector on PostgreSQL, as
# `passages`), and the questions asked of the finished report with their checked answers.
ask_passages = Table(
    "ask_passages", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Text, _run_fk(), nullable=False),
    _txt("source_id", nullable=False), _int("seq"), _txt("text", nullable=False),
    Index("idx_ask_passages_run", "run_id", "source_id", "seq"),
)
conversations = Table(
    "conversations", metadata, _id(),
    Column("run_id", Text, _run_fk(), nullable=False),
    _txt("person"), _txt("question", nullable=False), _txt("answer", ""),
    _txt("status", "answered"),  # answered | not_in_sources
    _jcol("details", "{}"), _real("cost_usd", 0), _txt("created_at", nullable=False),
    Index("idx_conversations_run", "run_id", "id"),
    sqlite_autoincrement=True,
)

# Every table holding rows of one run (they die with it, and `db copy` moves them with it),
# in an order that satisfies the foreign keys when inserting.
# A report's versions (issue 36; storage.versions): the run that updated an earlier one.
report_versions = Table(
    "report_versions", metadata,
    Column("run_id", Text, primary_key=True),  # the update (a run of its own)
    _txt("previous_run_id", nullable=False),  # the version it updates
    _txt("first_run_id", nullable=False),  # the first version: what the Library groups by
    _txt("since", nullable=False),  # the day the previous version was finished (YYYY-MM-DD)
    _txt("created_at", nullable=False),
    Index("idx_report_versions_first", "first_run_id"),
)
RUN_TABLES: tuple[Table, ...] = (
    plans, steps, sources, findings, queries, skipped_pages, drafts, reviews, reports,
    verifications, usage, events, engine_reports, report_versions, ask_passages,
    conversations,
)
# What each model account allows and how much of its minute is spoken for, shared by every
# process on the key (issue 31; storage.accounts). Its own, not a run's: never copied.
account_books = Table(
    "account_books", metadata,
    Column("account_id", Text, primary_key=True),  # research.llm.limits.Account.id (a key hash)
    Column("requests_per_minute", Integer), Column("tokens_per_minute", Integer),
    Column("requests_per_day", Integer), Column("parallel", Integer),
    Column("context_tokens", Integer), _txt("source", ""),
    _real("requests_level", 0), _real("tokens_level", 0),
    _real("stamp", 0), _real("paused_until", 0),  # Unix time: processes share no other clock
    _txt("updated_at", nullable=False),
)

# The HTTP API's bearer tokens, by hash only, and the runs whose person asked for a callback
# (issue 34; storage.tokens). Their own, not a run's: never copied (tokens are made anew).
api_tokens = Table(
    "api_tokens", metadata,
    Column("id", Text, primary_key=True),
    Column("token_hash", Text, nullable=False, unique=True),  # SHA-256 of the token, hex
    _txt("person"),  # whose runs it acts on; NULL: no sign-in (one person, every run)
    _txt("name", ""), _txt("created_at", nullable=False), _txt("last_used_at"),
    _txt("revoked_at"),
)
api_callbacks = Table(
    "api_callbacks", metadata,
    Column("run_id", Text, primary_key=True),  # no foreign key: a deleted run ends its watch
    _txt("token_id", nullable=False), _txt("url", nullable=False),
    _txt("notified", ""),  # the last state a POST went out for ("completed", "waiting:<n>")
    _int("done", 0), _int("attempts", 0), _txt("last_error"),
    _txt("updated_at", nullable=False),
)

# Watched topics: a finished run updated on a schedule for its owner (issue 36;
# storage.watches). The owner's, not a run's: never copied; its notification targets are
# secrets and live in the secrets file, never here.
watches = Table(
    "watches", metadata,
    Column("id", Text, primary_key=True),
    _txt("run_id", nullable=False),  # the newest version watched; no foreign key (see below)
    _txt("first_run_id", nullable=False),  # the run the person chose to watch
    _txt("person"),  # whose watch (its updates are theirs); NULL: no sign-in
    _txt("every", nullable=False),  # "daily", "weekly" or "monthly"
    _real("cost_cap"),  # the watcher's own budget for each update (USD); NULL: the run's own
    _real("threshold", 0),  # how much must change (research.living.changes) to tell and keep
    _txt("state", "active"),  # "active" or "paused" (a stopped watch is deleted)
    _txt("next_at", nullable=False),  # when the next update is due (UTC ISO text)
    _txt("pending_run_id"),  # an update started and not settled yet
    _txt("last_checked_at"), _txt("last_result", ""), _int("updates_kept", 0),
    _txt("created_at", nullable=False), _txt("updated_at", nullable=False),
    Index("idx_watches_due", "state", "next_at"),
)

# The person's library, copied after the runs.
LIBRARY_TABLES: tuple[Table, ...] = (documents, collections, collection_documents, passages)
