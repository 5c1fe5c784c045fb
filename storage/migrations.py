"""The SQLite schema as it was built before Alembic: hand-written steps m001 to m006.

These are frozen history. A SQLite file made by any earlier version holds some prefix of them
in `schema_migrations`; Alembic's baseline revision (`storage/alembic/versions/
0001_baseline.py`) applies the rest, so every older file reaches today's schema with its rows
untouched, and a new file is built by the very same steps. Every later schema change is an
Alembic revision (batch mode on SQLite), never a new function here.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from storage.engine import Tx

Migration = Callable[[Tx], None]
Database = Tx  # what each step writes through: the baseline revision's open transaction


def utc_now() -> str:
    """UTC ISO-8601 with milliseconds and Z: the same format as research.core.events.utc_now, so
    stored timestamps compare correctly as text (kept here so `storage` need not import
    `research` at import time)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _run(db: Database, script: str) -> None:
    # One statement at a time, so the DDL joins the caller's open transaction
    # (sqlite3.executescript would commit it first).
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)


def m001_initial(db: Database) -> None:
    """Every table the app needs; every row but a run's own belongs to a run and dies with it."""
    _run(db, """
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        question TEXT NOT NULL,
        config TEXT NOT NULL DEFAULT '{}',
        engine TEXT NOT NULL DEFAULT 'pipeline',
        parent_run_id TEXT REFERENCES runs(id) ON DELETE SET NULL,
        status TEXT NOT NULL DEFAULT 'queued',
        error TEXT,
        created_at TEXT NOT NULL,
        started_at TEXT,
        finished_at TEXT,
        duration_s REAL,
        totals TEXT NOT NULL DEFAULT '{}',
        owner TEXT,
        heartbeat_at TEXT,
        control TEXT,
        updated_at TEXT
    );
    CREATE INDEX idx_runs_created_at ON runs(created_at);
    CREATE INDEX idx_runs_status ON runs(status);
    CREATE INDEX idx_runs_parent ON runs(parent_run_id);

    CREATE TABLE plans (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        version INTEGER NOT NULL,
        kind TEXT NOT NULL DEFAULT 'original',
        subtopics TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (run_id, version)
    );

    CREATE TABLE steps (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        kind TEXT NOT NULL DEFAULT '',
        label TEXT NOT NULL DEFAULT '',
        subtopic_id TEXT,
        status TEXT NOT NULL DEFAULT 'running',
        attempts INTEGER NOT NULL DEFAULT 0,
        started_at TEXT,
        finished_at TEXT,
        duration_s REAL,
        result TEXT,
        source_count INTEGER NOT NULL DEFAULT 0,
        error TEXT,
        UNIQUE (run_id, key)
    );

    CREATE TABLE sources (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        id TEXT NOT NULL,
        url TEXT NOT NULL,
        canonical_url TEXT NOT NULL,
        title TEXT NOT NULL DEFAULT '',
        snippet TEXT NOT NULL DEFAULT '',
        text TEXT NOT NULL DEFAULT '',
        published TEXT,
        relevance REAL NOT NULL DEFAULT 0,
        relevance_reason TEXT NOT NULL DEFAULT '',
        subtopic_id TEXT,
        provider TEXT NOT NULL DEFAULT '',
        query TEXT NOT NULL DEFAULT '',
        "round" INTEGER NOT NULL DEFAULT 1,
        fetched_at TEXT,
        step_key TEXT,
        cited_in TEXT NOT NULL DEFAULT '[]',
        PRIMARY KEY (run_id, id),
        UNIQUE (run_id, canonical_url)
    );
    CREATE INDEX idx_sources_order ON sources(run_id, subtopic_id, relevance DESC, id);

    CREATE TABLE findings (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        step_key TEXT,
        subtopic_id TEXT,
        claim TEXT NOT NULL,
        source_ids TEXT NOT NULL DEFAULT '[]',
        confidence REAL NOT NULL DEFAULT 0,
        kind TEXT NOT NULL DEFAULT 'finding',
        created_at TEXT NOT NULL
    );
    CREATE INDEX idx_findings_run ON findings(run_id, id);

    CREATE TABLE queries (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        step_key TEXT,
        subtopic_id TEXT,
        query TEXT NOT NULL,
        provider TEXT NOT NULL DEFAULT '',
        result_count INTEGER NOT NULL DEFAULT 0,
        error TEXT,
        created_at TEXT NOT NULL
    );
    CREATE INDEX idx_queries_run ON queries(run_id, id);

    CREATE TABLE skipped_pages (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        step_key TEXT,
        subtopic_id TEXT,
        url TEXT NOT NULL,
        reason TEXT NOT NULL DEFAULT '',
        created_at TEXT NOT NULL
    );
    CREATE INDEX idx_skipped_run ON skipped_pages(run_id, id);

    CREATE TABLE drafts (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        version INTEGER NOT NULL,
        kind TEXT NOT NULL,
        text TEXT NOT NULL,
        numbering TEXT NOT NULL DEFAULT '{}',
        word_count INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        PRIMARY KEY (run_id, version)
    );

    CREATE TABLE reviews (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        cycle INTEGER NOT NULL,
        draft_version INTEGER NOT NULL,
        approved INTEGER NOT NULL,
        model_approved INTEGER NOT NULL,
        issues TEXT NOT NULL DEFAULT '[]',
        strengths TEXT NOT NULL DEFAULT '[]',
        checks TEXT NOT NULL DEFAULT '{}',
        created_at TEXT NOT NULL,
        PRIMARY KEY (run_id, cycle)
    );

    CREATE TABLE reports (
        run_id TEXT PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
        markdown TEXT NOT NULL,
        meta TEXT NOT NULL DEFAULT '{}',
        created_at TEXT NOT NULL
    );

    CREATE TABLE verifications (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        claim_id TEXT NOT NULL,
        claim TEXT NOT NULL DEFAULT '',
        source_ids TEXT NOT NULL DEFAULT '[]',
        verdict TEXT NOT NULL DEFAULT '',
        passage TEXT,
        reviewer TEXT,
        created_at TEXT NOT NULL,
        UNIQUE (run_id, claim_id)
    );

    CREATE TABLE usage (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        role TEXT NOT NULL,
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        input_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0,
        cost_usd REAL NOT NULL DEFAULT 0,
        calls INTEGER NOT NULL DEFAULT 0,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (run_id, role, provider, model)
    );

    CREATE TABLE events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        ts TEXT NOT NULL,
        type TEXT NOT NULL,
        step TEXT,
        message TEXT NOT NULL DEFAULT '',
        data TEXT NOT NULL DEFAULT '{}'
    );
    CREATE INDEX idx_events_run ON events(run_id, id)
    """)


def m002_engine_reports(db: Database) -> None:
    """Hosted deep-research engines: one row per (run, engine) with the remote job id (kept
    from the moment the job starts, so a resumed run re-attaches instead of paying twice) and,
    once done, the engine's report with its citation numbering {n: source_id}."""
    _run(db, """
    CREATE TABLE engine_reports (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        engine TEXT NOT NULL,
        remote_id TEXT,
        status TEXT NOT NULL DEFAULT 'starting',
        markdown TEXT NOT NULL DEFAULT '',
        numbering TEXT NOT NULL DEFAULT '{}',
        meta TEXT NOT NULL DEFAULT '{}',
        error TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (run_id, engine)
    )
    """)


def m003_verification_details(db: Database) -> None:
    """Claim verification (SPEC step 7): where each claim sits in the report, what each of the
    two passes and the critic said, what became of it, and the evidence shown (JSON)."""
    for column in ("section", "subtopic", "verifier_verdict", "auditor_verdict", "critic_verdict",
                   "status", "final_text", "note"):
        db.execute(f"ALTER TABLE verifications ADD COLUMN {column} TEXT")
    db.execute("ALTER TABLE verifications ADD COLUMN details TEXT NOT NULL DEFAULT '{}'")


def m004_run_warnings(db: Database) -> None:
    """What a completed run must say next to "Completed" (stopped by the budget, no verified
    citation, verification incomplete): a JSON list of plain sentences, so the Run page, the
    Library and the CLI show the same warning and status never contradicts the report."""
    db.execute("ALTER TABLE runs ADD COLUMN warnings TEXT NOT NULL DEFAULT '[]'")


def m005_documents(db: Database) -> None:
    """The person's own documents (see `storage.documents`): files, named collections, and
    passages with an FTS5 index (BM25 ranking) kept in step by triggers. Not tied to a run:
    a run names the documents or collection it reads in its config."""
    _run(db, """
    CREATE TABLE documents (
        id TEXT PRIMARY KEY,
        title TEXT NOT NULL,
        filename TEXT NOT NULL,
        kind TEXT NOT NULL,
        size_bytes INTEGER NOT NULL,
        pages INTEGER,
        passages INTEGER NOT NULL DEFAULT 0,
        status TEXT NOT NULL,
        message TEXT,
        sha256 TEXT NOT NULL,
        added_at TEXT NOT NULL
    );
    CREATE INDEX idx_documents_sha ON documents(sha256);
    CREATE TABLE collections (
        name TEXT PRIMARY KEY,
        created_at TEXT NOT NULL
    );
    CREATE TABLE collection_documents (
        collection TEXT NOT NULL REFERENCES collections(name) ON DELETE CASCADE,
        document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        PRIMARY KEY (collection, document_id)
    );
    CREATE INDEX idx_collection_documents_doc ON collection_documents(document_id);
    CREATE TABLE passages (
        id INTEGER PRIMARY KEY,
        document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        page INTEGER,
        section TEXT NOT NULL DEFAULT '',
        text TEXT NOT NULL
    );
    CREATE INDEX idx_passages_document ON passages(document_id, seq);
    CREATE VIRTUAL TABLE passages_fts USING fts5(
        text, section, content='passages', content_rowid='id', tokenize='porter unicode61'
    );
    """)
    # Triggers hold ";" inside BEGIN ... END, so each is one statement of its own.
    db.execute("CREATE TRIGGER passages_ai AFTER INSERT ON passages BEGIN "
               "INSERT INTO passages_fts(rowid, text, section) "
               "VALUES (new.id, new.text, new.section); END")
    db.execute("CREATE TRIGGER passages_ad AFTER DELETE ON passages BEGIN "
               "INSERT INTO passages_fts(passages_fts, rowid, text, section) "
               "VALUES ('delete', old.id, old.text, old.section); END")


def m006_source_credibility(db: Database) -> None:
    """Each source's kind (peer-reviewed paper, preprint, government, ...; research.untrusted.credibility),
    its credibility signals (a JSON list of plain words) and the author its page names, so the
    Sources tab can filter on them and the writer can prefer stronger sources. Sources stored
    before this step read as "unknown" with no signals."""
    db.execute("ALTER TABLE sources ADD COLUMN source_kind TEXT NOT NULL DEFAULT 'unknown'")
    db.execute("ALTER TABLE sources ADD COLUMN signals TEXT NOT NULL DEFAULT '[]'")
    db.execute("ALTER TABLE sources ADD COLUMN author TEXT")


MIGRATIONS: list[Migration] = [m001_initial, m002_engine_reports, m003_verification_details,
                               m004_run_warnings, m005_documents, m006_source_credibility]


def apply_migrations(db: Database) -> list[int]:
    """Apply the pending steps in order; return the versions applied now.

    Called only by the Alembic baseline, inside the migration's `BEGIN IMMEDIATE`.
    """
    db.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    done = {row[0] for row in db.execute("SELECT version FROM schema_migrations").fetchall()}
    applied: list[int] = []
    for version, migration in enumerate(MIGRATIONS, start=1):
        if version in done:
            continue
        migration(db)
        db.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
            [version, migration.__name__, utc_now()],
        )
        applied.append(version)
    return applied
