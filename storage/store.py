"""The one door to SQLite: a `Store` of small functions over a WAL-mode database file.

Why it looks like this:
- a connection per thread (the engine's workers, the Streamlit script thread and the job
  manager all read and write at once), each with a 30 s busy timeout;
- every write is one short `BEGIN IMMEDIATE` transaction, so writers queue for the lock up front
  instead of failing half-way with "database is locked";
- JSON columns are decoded on the way out, so callers only ever see Python values;
- text that may carry an API key (event messages and data, errors, configs) goes through
  `research.errors.redact` first; everything else loses the exact known secrets;
- every text loses invisible formatting controls (`research.textclean`): model answers are
  untrusted, and this is the one door all of them pass on their way to a report or export;
- the WAL is kept small by the writers themselves (`_bound_wal`): readers polling back to back
  never leave SQLite's automatic checkpoint a moment to restart the log.

This package imports nothing from `research` at import time (`research` imports `storage`).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from sqlite_utils import Database

from storage import wal
from storage.db_value import resolve_db_path
from storage.migrations import apply_migrations, utc_now

if TYPE_CHECKING:
    from research.events import Event

RUN_STATUSES = frozenset(
    {"queued", "running", "paused", "waiting", "completed", "failed", "cancelled", "interrupted"}
)
TERMINAL_STATUSES = frozenset({"completed", "failed", "cancelled"})
CONTROL_ACTIONS = frozenset({"pause", "cancel"})
# original: the lead's plan; edited: changed by the person; round: subtopics added by a
# later research round (escalated follow-up questions).
PLAN_KINDS = frozenset({"original", "edited", "round"})

_PROJECT_ROOT = Path(__file__).resolve().parent.parent

_RUN_JSON = ("config", "totals", "warnings")
_STEP_JSON = ("result",)


def default_db_path(env: Mapping[str, str] | None = None) -> Path:
    """`DEEP_RESEARCH_DB` (from `env`, default the process environment) if set, else
    `<project root>/data/research.db`. Raises DatabaseValueError (plain words) for a value
    that cannot work, before anything is created or opened."""
    value = (env if env is not None else os.environ).get("DEEP_RESEARCH_DB")
    return resolve_db_path(value, _PROJECT_ROOT / "data" / "research.db")


def _parse_ts(value: str | None) -> datetime | None:
    if not value:
        return None
    return datetime.fromisoformat(value)


def _ts(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _seconds_between(start: str | None, end: str | None) -> float | None:
    a, b = _parse_ts(start), _parse_ts(end)
    if a is None or b is None:
        return None
    return round((b - a).total_seconds(), 3)


def _normal_ts(value: Any) -> str:
    """Event timestamps in the one stored format (UTC, milliseconds, Z), so they sort as text."""
    if isinstance(value, datetime):
        return _ts(value if value.tzinfo else value.replace(tzinfo=UTC))
    if isinstance(value, str) and value:
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return value
        return _ts(moment if moment.tzinfo else moment.replace(tzinfo=UTC))
    return utc_now()


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _loads(value: Any) -> Any:
    if value is None or not isinstance(value, str | bytes):
        return value
    return json.loads(value)


def _decode(row: dict[str, Any], columns: Iterable[str]) -> dict[str, Any]:
    for column in columns:
        if column in row:
            row[column] = _loads(row[column])
    return row


class Store:
    """All persistence for Deep Research Studio. Safe to share between threads."""

    def __init__(self, path: str | Path, *, secrets: Iterable[str] = (),
                 wal_limit_bytes: int = wal.WAL_LIMIT_BYTES) -> None:
        self.path = Path(path)
        self.wal = wal.WalBound(self.path, wal_limit_bytes)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Imported here, not at module level: `research` imports `storage`, and a module-level
        # import back into `research` would make `import storage` fail when it comes first.
        from research.errors import redact
        from research.textclean import strip_hidden_controls

        self._redact_text = redact
        self._clean = strip_hidden_controls
        self._secrets = tuple(s for s in secrets if s)
        self._local = threading.local()
        self._run_tables: tuple[str, ...] = ()
        with self._write() as db:
            apply_migrations(db)
        self._run_tables = tuple(
            name for name in self._db().table_names()
            if name != "runs" and "run_id" in self._db()[name].columns_dict
        )

    # -- connection plumbing -------------------------------------------------------------

    def _db(self) -> Database:
        db: Database | None = getattr(self._local, "db", None)
        if db is None:
            conn = sqlite3.connect(
                str(self.path), timeout=30, isolation_level=None, check_same_thread=True
            )
            conn.execute(f"PRAGMA busy_timeout={wal.BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA journal_mode=WAL")
            wal.configure(conn, self.wal.limit_bytes)
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.create_function("py_casefold", 1, _casefold, deterministic=True)
            db = Database(conn)
            self._local.db = db
        return db

    @contextmanager
    def _write(self) -> Iterator[Database]:
        """One short transaction holding the write lock from the start; nests as a no-op."""
        db = self._db()
        if db.conn.in_transaction:
            yield db
            return
        db.conn.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            if db.conn.in_transaction:
                db.conn.execute("ROLLBACK")
            raise
        db.conn.execute("COMMIT")
        self.wal.after_commit(db.conn)

    def _rows(self, sql: str, params: Iterable[Any] = ()) -> list[dict[str, Any]]:
        return list(self._db().query(sql, list(params)))

    def _row(self, sql: str, params: Iterable[Any] = ()) -> dict[str, Any] | None:
        rows = self._rows(sql, params)
        return rows[0] if rows else None

    def close(self) -> None:
        """Close this thread's connection (other threads keep theirs)."""
        db: Database | None = getattr(self._local, "db", None)
        if db is not None:
            db.conn.close()
            self._local.db = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- redaction -----------------------------------------------------------------------

    def _redact(self, text: str | None) -> str | None:
        """Full redaction: known secrets and anything key-shaped."""
        return None if text is None else self._redact_text(self._clean(text), self._secrets)

    def _scrub(self, value: Any) -> Any:
        """Full redaction of every string inside a JSON-like value (keys included)."""
        return _walk(value, lambda text: self._redact_text(self._clean(text), self._secrets))

    def _plain(self, value: Any) -> Any:
        """Content (pages, drafts, reports) loses only the exact known secrets, in every string
        inside it: pattern masking could damage ordinary words, and pages are not where our
        own keys come from."""
        def strip(text: str) -> str:
            text = self._clean(text)
            for secret in self._secrets:
                if len(secret) >= 6:
                    text = text.replace(secret, "[redacted]")
            return text

        return _walk(value, strip)

    def _plain_json(self, value: Any) -> str:
        return _dumps(self._plain(value))

    # -- runs ----------------------------------------------------------------------------

    def create_run(
        self, question: str, config: Mapping[str, Any], *, engine: str = "pipeline",
        parent_run_id: str | None = None,
    ) -> str:
        run_id = uuid.uuid4().hex[:12]
        now = utc_now()
        with self._write() as db:
            db.execute(
                "INSERT INTO runs (id, question, config, engine, parent_run_id, status, totals,"
                " created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'queued', '{}', ?, ?)",
                [run_id, self._plain(question), _dumps(self._scrub(dict(config))), engine,
                 parent_run_id, now, now],
            )
        return run_id

    def get_run(self, run_id: str) -> dict[str, Any] | None:
        row = self._row("SELECT * FROM runs WHERE id = ?", [run_id])
        return _decode(row, _RUN_JSON) if row else None

    @staticmethod
    def _run_filter(search: str | None, status: str | None) -> tuple[str, list[Any]]:
        clauses, params = [], []
        if search:
            clauses.append("instr(py_casefold(question), ?) > 0")
            params.append(search.casefold())
        if status:
            clauses.append("status = ?")
            params.append(status)
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), params

    def list_runs(
        self, *, search: str | None = None, status: str | None = None, limit: int = 100,
        offset: int = 0,
    ) -> list[dict[str, Any]]:
        """Newest first; `search` is a case-insensitive substring of the question."""
        where, params = self._run_filter(search, status)
        rows = self._rows(
            f"SELECT * FROM runs{where} ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?",
            [*params, int(limit), int(offset)],
        )
        return [_decode(row, _RUN_JSON) for row in rows]

    def count_runs(self, search: str | None = None, *, status: str | None = None) -> int:
        where, params = self._run_filter(search, status)
        row = self._row(f"SELECT count(*) AS n FROM runs{where}", params)
        return int(row["n"]) if row else 0

    def delete_run(self, run_id: str) -> None:
        """Remove the run and every row that belongs to it, in one transaction."""
        with self._write() as db:
            for table in self._run_tables:
                db.execute(f'DELETE FROM "{table}" WHERE run_id = ?', [run_id])
            db.execute("DELETE FROM runs WHERE id = ?", [run_id])

    def set_run_status(self, run_id: str, status: str, *, error: str | None = None) -> None:
        """Record a status change.

        First `running` sets started_at. A terminal status sets finished_at, duration_s and
        clears any pending control action. Going back to `running` (resume) clears
        finished_at, duration_s and a previous error. `error`, when given, is stored.
        """
        if status not in RUN_STATUSES:
            raise ValueError(f"unknown run status {status!r}")
        now = utc_now()
        with self._write() as db:
            row = db.execute(
                "SELECT started_at, error FROM runs WHERE id = ?", [run_id]
            ).fetchone()
            if row is None:
                raise KeyError(f"no run {run_id!r}")
            started_at, old_error = row
            finished_at: str | None = None
            duration: float | None = None
            control_sql = ""
            new_error = self._redact(error)
            if status == "running":
                started_at = started_at or now
            elif status in TERMINAL_STATUSES:
                finished_at = now
                duration = _seconds_between(started_at, now) if started_at else 0.0
                control_sql = ", control = NULL"
            if new_error is None and status != "running":
                new_error = old_error
            if status in ("paused", "interrupted", "queued"):
                # Not finished: keep whatever finished_at/duration the row had (normally none).
                db.execute(
                    "UPDATE runs SET status = ?, started_at = ?, error = ?, updated_at = ?"
                    " WHERE id = ?",
                    [status, started_at, new_error, now, run_id],
                )
                return
            db.execute(
                "UPDATE runs SET status = ?, started_at = ?, finished_at = ?, duration_s = ?,"
                f" error = ?, updated_at = ?{control_sql} WHERE id = ?",
                [status, started_at, finished_at, duration, new_error, now, run_id],
            )

    def set_run_warnings(self, run_id: str, warnings: Iterable[str]) -> None:
        """Replace the run's warnings (plain sentences shown beside its status)."""
        with self._write() as db:
            db.execute("UPDATE runs SET warnings = ?, updated_at = ? WHERE id = ?",
                       [_dumps(self._scrub([str(w) for w in warnings])), utc_now(), run_id])

    def update_totals(self, run_id: str, **values: Any) -> dict[str, Any]:
        """Merge `values` into the run's totals; returns the merged totals."""
        return self._change_totals(run_id, values, add=False)

    def increment_totals(self, run_id: str, **deltas: float) -> dict[str, Any]:
        """Add `deltas` to numeric totals (missing ones start at 0); returns the new totals."""
        return self._change_totals(run_id, deltas, add=True)

    def _change_totals(self, run_id: str, values: Mapping[str, Any], *, add: bool) -> dict[str, Any]:
        with self._write() as db:
            row = db.execute("SELECT totals FROM runs WHERE id = ?", [run_id]).fetchone()
            if row is None:
                raise KeyError(f"no run {run_id!r}")
            totals: dict[str, Any] = _loads(row[0]) or {}
            for key, value in values.items():
                totals[key] = (totals.get(key) or 0) + value if add else value
            db.execute(
                "UPDATE runs SET totals = ?, updated_at = ? WHERE id = ?",
                [_dumps(self._scrub(totals)), utc_now(), run_id],
            )
        return totals

    def heartbeat(self, run_id: str, owner: str) -> None:
        with self._write() as db:
            db.execute(
                "UPDATE runs SET owner = ?, heartbeat_at = ? WHERE id = ?",
                [owner, utc_now(), run_id],
            )

    def mark_interrupted(
        self, *, stale_after_s: float = 30.0, dead_owners: Iterable[str] = ()
    ) -> list[str]:
        """Runs left running/paused by a process that stopped heartbeating become
        `interrupted`, so the UI can offer to resume them; so do runs whose owner is known
        to be dead (`dead_owners`), without waiting for the heartbeat to go stale.
        Returns their ids."""
        cutoff = _ts(datetime.now(UTC) - timedelta(seconds=stale_after_s))
        dead = list(dead_owners)
        owner_clause = f" OR owner IN ({', '.join('?' * len(dead))})" if dead else ""
        with self._write() as db:
            ids = [row[0] for row in db.execute(
                "SELECT id FROM runs WHERE status IN ('running', 'paused')"
                f" AND (heartbeat_at IS NULL OR heartbeat_at < ?{owner_clause}) ORDER BY created_at",
                [cutoff, *dead],
            ).fetchall()]
            now = utc_now()
            for run_id in ids:
                db.execute(
                    "UPDATE runs SET status = 'interrupted', updated_at = ? WHERE id = ?",
                    [now, run_id],
                )
        return ids

    def active_owners(self) -> set[str]:
        """Owners ("pid:N@host") of runs currently marked running or paused."""
        return {row["owner"] for row in self._rows(
            "SELECT DISTINCT owner FROM runs WHERE status IN ('running', 'paused')"
            " AND owner IS NOT NULL")}

    def set_control(self, run_id: str, action: str | None) -> None:
        """Ask the engine running `run_id` to "pause" or "cancel" (None clears the request)."""
        if action is not None and action not in CONTROL_ACTIONS:
            raise ValueError(f"unknown control action {action!r}")
        with self._write() as db:
            db.execute(
                "UPDATE runs SET control = ?, updated_at = ? WHERE id = ?",
                [action, utc_now(), run_id],
            )

    def get_control(self, run_id: str) -> str | None:
        row = self._row("SELECT control FROM runs WHERE id = ?", [run_id])
        return row["control"] if row else None

    def latest_activity(self, run_id: str) -> dict[str, Any]:
        """Cheap poll for a live dashboard: one indexed query. Empty dict if no such run."""
        row = self._row(
            "SELECT r.id AS run_id, r.status, r.control, r.error, r.heartbeat_at, r.updated_at,"
            " (SELECT count(*) FROM sources WHERE run_id = r.id) AS sources,"
            " (SELECT count(*) FROM events WHERE run_id = r.id) AS events,"
            " (SELECT coalesce(max(id), 0) FROM events WHERE run_id = r.id) AS last_event_id,"
            " (SELECT count(*) FROM steps WHERE run_id = r.id AND status = 'done')"
            "   AS steps_done,"
            " (SELECT count(*) FROM steps WHERE run_id = r.id) AS steps_total"
            " FROM runs r WHERE r.id = ?",
            [run_id],
        )
        return row or {}

    # -- plan ----------------------------------------------------------------------------

    def save_plan(self, run_id: str, subtopics: list[dict[str, Any]], *,
                  kind: str = "original") -> int:
        """Store a new plan version (1, 2, ...); older versions are kept for history."""
        if kind not in PLAN_KINDS:
            raise ValueError(f"unknown plan kind {kind!r}")
        with self._write() as db:
            (latest,) = db.execute(
                "SELECT coalesce(max(version), 0) FROM plans WHERE run_id = ?", [run_id]
            ).fetchone()
            version = int(latest) + 1
            db.execute(
                "INSERT INTO plans (run_id, version, kind, subtopics, created_at)"
                " VALUES (?, ?, ?, ?, ?)",
                [run_id, version, kind, self._plain_json(subtopics), utc_now()],
            )
        return version

    def get_plan(self, run_id: str) -> list[dict[str, Any]] | None:
        """The subtopics of the latest plan version, or None before planning."""
        row = self._row(
            "SELECT subtopics FROM plans WHERE run_id = ? ORDER BY version DESC LIMIT 1",
            [run_id],
        )
        return _loads(row["subtopics"]) if row else None

    def get_plans(self, run_id: str) -> list[dict[str, Any]]:
        """Every version: dicts of version, kind, subtopics, created_at (oldest first)."""
        rows = self._rows(
            "SELECT version, kind, subtopics, created_at FROM plans WHERE run_id = ?"
            " ORDER BY version",
            [run_id],
        )
        return [_decode(row, ("subtopics",)) for row in rows]

    # -- steps ---------------------------------------------------------------------------

    def start_step(self, run_id: str, key: str, *, kind: str, label: str,
                   subtopic_id: str | None = None) -> None:
        with self._write() as db:
            self._start_step(db, run_id, key, kind=kind, label=self._clean(label),
                             subtopic_id=subtopic_id)

    @staticmethod
    def _start_step(db: Database, run_id: str, key: str, *, kind: str, label: str,
                    subtopic_id: str | None) -> None:
        db.execute(
            "INSERT INTO steps (run_id, key, kind, label, subtopic_id, status, attempts,"
            " started_at) VALUES (?, ?, ?, ?, ?, 'running', 1, ?)"
            " ON CONFLICT (run_id, key) DO UPDATE SET attempts = attempts + 1,"
            " status = 'running', kind = excluded.kind, label = excluded.label,"
            " subtopic_id = excluded.subtopic_id, started_at = excluded.started_at,"
            " finished_at = NULL, duration_s = NULL, result = NULL, error = NULL",
            [run_id, key, kind, label, subtopic_id, utc_now()],
        )

    def finish_step(self, run_id: str, key: str, *, result: Mapping[str, Any] | None = None,
                    source_count: int = 0) -> None:
        with self._write() as db:
            self._finish_step(db, run_id, key, result=result, source_count=source_count)

    def _finish_step(self, db: Database, run_id: str, key: str, *,
                     result: Mapping[str, Any] | None, source_count: int) -> None:
        now = utc_now()
        row = db.execute(
            "SELECT started_at FROM steps WHERE run_id = ? AND key = ?", [run_id, key]
        ).fetchone()
        if row is None:  # finished without a recorded start (e.g. resumed): record it anyway
            self._start_step(db, run_id, key, kind="", label=key, subtopic_id=None)
            started_at = now
        else:
            started_at = row[0]
        db.execute(
            "UPDATE steps SET status = 'done', finished_at = ?, duration_s = ?, result = ?,"
            " source_count = ?, error = NULL WHERE run_id = ? AND key = ?",
            [now, _seconds_between(started_at, now),
             None if result is None else _dumps(self._scrub(dict(result))),
             int(source_count), run_id, key],
        )

    def fail_step(self, run_id: str, key: str, error: str, *, final: bool = True) -> None:
        """`final=False` means another attempt follows: status "retrying"."""
        now = utc_now()
        with self._write() as db:
            row = db.execute(
                "SELECT started_at FROM steps WHERE run_id = ? AND key = ?", [run_id, key]
            ).fetchone()
            if row is None:
                self._start_step(db, run_id, key, kind="", label=key, subtopic_id=None)
                started_at = now
            else:
                started_at = row[0]
            db.execute(
                "UPDATE steps SET status = ?, error = ?, finished_at = ?, duration_s = ?"
                " WHERE run_id = ? AND key = ?",
                ["failed" if final else "retrying", self._redact(error),
                 now if final else None,
                 _seconds_between(started_at, now) if final else None, run_id, key],
            )

    def get_steps(self, run_id: str) -> list[dict[str, Any]]:
        """In the order steps were first started."""
        rows = self._rows("SELECT * FROM steps WHERE run_id = ? ORDER BY id", [run_id])
        return [_decode(row, _STEP_JSON) for row in rows]

    def get_step(self, run_id: str, key: str) -> dict[str, Any] | None:
        row = self._row("SELECT * FROM steps WHERE run_id = ? AND key = ?", [run_id, key])
        return _decode(row, _STEP_JSON) if row else None

    # -- research results ----------------------------------------------------------------

    def complete_research_step(
        self, run_id: str, key: str, *, sources: list[dict[str, Any]],
        findings: list[dict[str, Any]], queries: list[dict[str, Any]],
        skipped: list[dict[str, Any]], result: Mapping[str, Any] | None = None,
    ) -> list[str]:
        """Store everything one research step produced and mark it done, atomically.

        A source whose canonical URL (or id) the run already has is not inserted; findings
        that cite it are pointed at the stored source instead. Findings, queries and skipped
        pages previously stored for this same step are replaced, so re-running a step does
        not duplicate them. Returns the ids of the sources actually inserted.
        """
        now = utc_now()
        inserted: list[str] = []
        remap: dict[str, str] = {}
        with self._write() as db:
            for src in sources:
                cursor = db.execute(
                    "INSERT INTO sources (run_id, id, url, canonical_url, title, snippet, text,"
                    ' published, relevance, relevance_reason, subtopic_id, provider, query, "round",'
                    " fetched_at, step_key, source_kind, signals, author)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT DO NOTHING",
                    [run_id, src["id"], self._plain(src["url"]),
                     self._plain(src.get("canonical_url") or src["url"]),
                     self._plain(src.get("title") or ""), self._plain(src.get("snippet") or ""),
                     self._plain(src.get("text") or ""), src.get("published"),
                     float(src.get("relevance") or 0.0),
                     self._plain(src.get("relevance_reason") or ""), src.get("subtopic_id"),
                     src.get("provider") or "", self._plain(src.get("query") or ""),
                     int(src.get("round") or 1), src.get("fetched_at") or now, key,
                     src.get("source_kind") or "unknown", _dumps(list(src.get("signals") or [])),
                     self._plain(src["author"]) if src.get("author") else None],
                )
                if cursor.rowcount == 1:
                    inserted.append(src["id"])
                    continue
                existing = db.execute(
                    "SELECT id FROM sources WHERE run_id = ? AND canonical_url = ?",
                    [run_id, self._plain(src.get("canonical_url") or src["url"])],
                ).fetchone()
                if existing and existing[0] != src["id"]:
                    remap[src["id"]] = existing[0]

            for table in ("findings", "queries", "skipped_pages"):
                db.execute(f"DELETE FROM {table} WHERE run_id = ? AND step_key = ?", [run_id, key])
            for finding in findings:
                cited = [remap.get(sid, sid) for sid in finding.get("source_ids") or []]
                db.execute(
                    "INSERT INTO findings (run_id, step_key, subtopic_id, claim, source_ids,"
                    " confidence, kind, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [run_id, key, finding.get("subtopic_id"), self._plain(finding["claim"]),
                     _dumps(list(dict.fromkeys(cited))), float(finding.get("confidence") or 0.0),
                     finding.get("kind") or "finding", now],
                )
            for query in queries:
                db.execute(
                    "INSERT INTO queries (run_id, step_key, subtopic_id, query, provider,"
                    " result_count, error, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [run_id, key, query.get("subtopic_id"), self._plain(query["query"]),
                     query.get("provider") or "", int(query.get("result_count") or 0),
                     self._redact(query.get("error")), now],
                )
            for page in skipped:
                db.execute(
                    "INSERT INTO skipped_pages (run_id, step_key, subtopic_id, url, reason,"
                    " created_at) VALUES (?, ?, ?, ?, ?, ?)",
                    [run_id, key, page.get("subtopic_id"), self._plain(page["url"]),
                     self._redact(page.get("reason") or ""), now],
                )
            self._finish_step(db, run_id, key, result=result, source_count=len(inserted))
        return inserted

    def get_sources(self, run_id: str, *, subtopic_id: str | None = None,
                    with_text: bool = True) -> list[dict[str, Any]]:
        """Ordered by subtopic, then relevance (highest first), then id.
        `with_text=False` leaves out the extracted page text (lighter for listings)."""
        columns = "*" if with_text else (
            'run_id, id, url, canonical_url, title, snippet, published, relevance,'
            ' relevance_reason, subtopic_id, provider, query, "round", fetched_at, step_key,'
            ' cited_in, source_kind, signals, author'
        )
        sql = f"SELECT {columns} FROM sources WHERE run_id = ?"
        params: list[Any] = [run_id]
        if subtopic_id is not None:
            sql += " AND subtopic_id = ?"
            params.append(subtopic_id)
        sql += " ORDER BY subtopic_id, relevance DESC, id"
        return [_decode(row, ("cited_in", "signals")) for row in self._rows(sql, params)]

    def count_sources(self, run_id: str) -> int:
        row = self._row("SELECT count(*) AS n FROM sources WHERE run_id = ?", [run_id])
        return int(row["n"]) if row else 0

    def canonical_urls(self, run_id: str) -> set[str]:
        rows = self._rows("SELECT canonical_url FROM sources WHERE run_id = ?", [run_id])
        return {row["canonical_url"] for row in rows}

    def set_citations(self, run_id: str, cited_in: Mapping[str, list[str]]) -> None:
        """Replace the run's citation map: sources not in `cited_in` become uncited."""
        with self._write() as db:
            db.execute("UPDATE sources SET cited_in = '[]' WHERE run_id = ?", [run_id])
            for source_id, sections in cited_in.items():
                db.execute(
                    "UPDATE sources SET cited_in = ? WHERE run_id = ? AND id = ?",
                    [_dumps(list(sections)), run_id, source_id],
                )

    def get_findings(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._rows("SELECT * FROM findings WHERE run_id = ? ORDER BY id", [run_id])
        return [_decode(row, ("source_ids",)) for row in rows]

    def get_queries(self, run_id: str) -> list[dict[str, Any]]:
        return self._rows("SELECT * FROM queries WHERE run_id = ? ORDER BY id", [run_id])

    def get_skipped(self, run_id: str) -> list[dict[str, Any]]:
        return self._rows("SELECT * FROM skipped_pages WHERE run_id = ? ORDER BY id", [run_id])

    # -- drafts, reviews, report ---------------------------------------------------------

    def save_draft(self, run_id: str, version: int, kind: str, text: str,
                   numbering: Mapping[int, str], word_count: int) -> None:
        """`numbering` maps citation number -> source id (saving a version again replaces it)."""
        with self._write() as db:
            db.execute(
                "INSERT OR REPLACE INTO drafts (run_id, version, kind, text, numbering,"
                " word_count, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [run_id, int(version), kind, self._plain(text),
                 _dumps({str(int(n)): sid for n, sid in numbering.items()}), int(word_count),
                 utc_now()],
            )

    def get_drafts(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._rows("SELECT * FROM drafts WHERE run_id = ? ORDER BY version", [run_id])
        for row in rows:
            row["numbering"] = {int(n): sid for n, sid in (_loads(row["numbering"]) or {}).items()}
        return rows

    def save_review(self, run_id: str, cycle: int, *, draft_version: int, approved: bool,
                    model_approved: bool, issues: list[dict[str, Any]], strengths: list[str],
                    checks: Mapping[str, Any]) -> None:
        with self._write() as db:
            db.execute(
                "INSERT OR REPLACE INTO reviews (run_id, cycle, draft_version, approved,"
                " model_approved, issues, strengths, checks, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [run_id, int(cycle), int(draft_version), int(bool(approved)),
                 int(bool(model_approved)), self._plain_json(issues),
                 self._plain_json(strengths), self._plain_json(dict(checks)), utc_now()],
            )

    def get_reviews(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._rows("SELECT * FROM reviews WHERE run_id = ? ORDER BY cycle", [run_id])
        for row in rows:
            _decode(row, ("issues", "strengths", "checks"))
            row["approved"] = bool(row["approved"])
            row["model_approved"] = bool(row["model_approved"])
        return rows

    def save_report(self, run_id: str, markdown: str, *, meta: Mapping[str, Any]) -> None:
        """One report per run; saving again replaces it."""
        with self._write() as db:
            db.execute(
                "INSERT OR REPLACE INTO reports (run_id, markdown, meta, created_at)"
                " VALUES (?, ?, ?, ?)",
                [run_id, self._plain(markdown), self._plain_json(dict(meta)), utc_now()],
            )

    def get_report(self, run_id: str) -> dict[str, Any] | None:
        row = self._row("SELECT * FROM reports WHERE run_id = ?", [run_id])
        return _decode(row, ("meta",)) if row else None

    # -- hosted engines ------------------------------------------------------------------

    def save_engine_job(self, run_id: str, engine: str, *, remote_id: str | None, status: str,
                        error: str | None = None, meta: Mapping[str, Any] | None = None) -> None:
        """Record a hosted engine's remote job and its status (the report, if any, is kept).
        `meta`, when given, is merged into the stored meta."""
        now = utc_now()
        with self._write() as db:
            row = db.execute("SELECT meta FROM engine_reports WHERE run_id = ? AND engine = ?",
                             [run_id, engine]).fetchone()
            merged = {**(_loads(row[0]) if row else {}), **dict(meta or {})}
            db.execute(
                "INSERT INTO engine_reports (run_id, engine, remote_id, status, meta, error,"
                " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (run_id, engine) DO UPDATE SET remote_id = excluded.remote_id,"
                " status = excluded.status, meta = excluded.meta, error = excluded.error,"
                " updated_at = excluded.updated_at",
                [run_id, engine, remote_id, status, self._plain_json(merged),
                 self._redact(error), now, now],
            )

    def save_engine_report(self, run_id: str, engine: str, markdown: str, *,
                           numbering: Mapping[int, str], meta: Mapping[str, Any],
                           status: str = "completed") -> None:
        """Store a hosted engine's finished report; `meta` is merged into the stored meta."""
        now = utc_now()
        with self._write() as db:
            row = db.execute("SELECT meta FROM engine_reports WHERE run_id = ? AND engine = ?",
                             [run_id, engine]).fetchone()
            merged = {**(_loads(row[0]) if row else {}), **dict(meta)}
            db.execute(
                "INSERT INTO engine_reports (run_id, engine, status, markdown, numbering, meta,"
                " error, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, NULL, ?, ?)"
                " ON CONFLICT (run_id, engine) DO UPDATE SET status = excluded.status,"
                " markdown = excluded.markdown, numbering = excluded.numbering,"
                " meta = excluded.meta, error = NULL, updated_at = excluded.updated_at",
                [run_id, engine, status, self._plain(markdown),
                 _dumps({str(int(n)): sid for n, sid in numbering.items()}),
                 self._plain_json(merged), now, now],
            )

    def get_engine_reports(self, run_id: str) -> list[dict[str, Any]]:
        """Every hosted engine row of the run (oldest first), numbering keys as ints."""
        rows = self._rows(
            "SELECT * FROM engine_reports WHERE run_id = ? ORDER BY created_at, engine", [run_id]
        )
        for row in rows:
            _decode(row, ("meta",))
            row["numbering"] = {int(n): sid for n, sid in (_loads(row["numbering"]) or {}).items()}
        return rows

    def get_engine_report(self, run_id: str, engine: str) -> dict[str, Any] | None:
        return next((r for r in self.get_engine_reports(run_id) if r["engine"] == engine), None)

    # -- verification --------------------------------------------------------------------

    _VERIFICATION_TEXT = ("section", "subtopic", "verifier_verdict", "auditor_verdict",
                          "critic_verdict", "status", "final_text", "note")

    def save_verifications(self, run_id: str, rows: Iterable[Mapping[str, Any]]) -> None:
        """Upsert by (run_id, claim_id). Row keys: claim_id, claim, source_ids, verdict,
        passage, reviewer; optionally section, subtopic, verifier_verdict, auditor_verdict,
        critic_verdict, status, final_text, note and details (a JSON object)."""
        now = utc_now()
        extra = self._VERIFICATION_TEXT
        with self._write() as db:
            for row in rows:
                db.execute(
                    "INSERT INTO verifications (run_id, claim_id, claim, source_ids, verdict,"
                    f" passage, reviewer, created_at, {', '.join(extra)}, details)"
                    f" VALUES (?, ?, ?, ?, ?, ?, ?, ?, {', '.join('?' for _ in extra)}, ?)"
                    " ON CONFLICT (run_id, claim_id) DO UPDATE SET claim = excluded.claim,"
                    " source_ids = excluded.source_ids, verdict = excluded.verdict,"
                    " passage = excluded.passage, reviewer = excluded.reviewer,"
                    " created_at = excluded.created_at, "
                    + ", ".join(f"{c} = excluded.{c}" for c in (*extra, "details")),
                    [run_id, str(row["claim_id"]), self._plain(row.get("claim") or ""),
                     _dumps(list(row.get("source_ids") or [])), row.get("verdict") or "",
                     self._plain(row.get("passage")), row.get("reviewer"), now,
                     *(self._plain(row.get(c)) for c in extra),
                     self._plain_json(dict(row.get("details") or {}))],
                )

    def get_verifications(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._rows("SELECT * FROM verifications WHERE run_id = ? ORDER BY id", [run_id])
        return [_decode(row, ("source_ids", "details")) for row in rows]

    # -- usage ---------------------------------------------------------------------------

    def add_usage(self, run_id: str, role: str, provider: str, model: str,
                  input_tokens: int, output_tokens: int, cost_usd: float) -> None:
        """Add one call's usage to the (run, role, provider, model) row."""
        with self._write() as db:
            db.execute(
                "INSERT INTO usage (run_id, role, provider, model, input_tokens, output_tokens,"
                " cost_usd, calls, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?)"
                " ON CONFLICT (run_id, role, provider, model) DO UPDATE SET"
                " input_tokens = input_tokens + excluded.input_tokens,"
                " output_tokens = output_tokens + excluded.output_tokens,"
                " cost_usd = cost_usd + excluded.cost_usd, calls = calls + 1,"
                " updated_at = excluded.updated_at",
                [run_id, role, provider, model, int(input_tokens), int(output_tokens),
                 float(cost_usd), utc_now()],
            )

    def get_usage(self, run_id: str) -> list[dict[str, Any]]:
        return self._rows(
            "SELECT * FROM usage WHERE run_id = ? ORDER BY role, provider, model", [run_id]
        )

    def usage_totals(self, run_id: str) -> dict[str, Any]:
        """tokens, cost_usd, calls (plus input_tokens, output_tokens) for the run."""
        row = self._row(
            "SELECT coalesce(sum(input_tokens), 0) AS input_tokens,"
            " coalesce(sum(output_tokens), 0) AS output_tokens,"
            " coalesce(sum(cost_usd), 0.0) AS cost_usd, coalesce(sum(calls), 0) AS calls"
            " FROM usage WHERE run_id = ?",
            [run_id],
        ) or {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0, "calls": 0}
        return {"tokens": int(row["input_tokens"]) + int(row["output_tokens"]),
                "cost_usd": float(row["cost_usd"]), "calls": int(row["calls"]),
                "input_tokens": int(row["input_tokens"]),
                "output_tokens": int(row["output_tokens"])}

    # -- events --------------------------------------------------------------------------

    def append_event(self, event: Event | Mapping[str, Any]) -> int:
        """Append to the run's event log; returns the event id (ascending per database)."""
        to_dict = getattr(event, "to_dict", None)
        record = to_dict() if callable(to_dict) else dict(event)  # type: ignore[arg-type]
        with self._write() as db:
            cursor = db.execute(
                "INSERT INTO events (run_id, ts, type, step, message, data)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                [record["run_id"], _normal_ts(record.get("ts")), record["type"],
                 record.get("step"), self._redact(record.get("message") or ""),
                 _dumps(self._scrub(dict(record.get("data") or {})))],
            )
            event_id = cursor.lastrowid
        assert event_id is not None
        return int(event_id)

    def log_event(self, event: Event) -> None:
        """`append_event` shaped as a `research.events.EventSink` (returns None), for
        `fan_out(store.log_event, ...)`."""
        self.append_event(event)

    def get_events(self, run_id: str, *, after_id: int = 0,
                   limit: int | None = None) -> list[dict[str, Any]]:
        sql = "SELECT * FROM events WHERE run_id = ? AND id > ? ORDER BY id"
        params: list[Any] = [run_id, int(after_id)]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        return [_decode(row, ("data",)) for row in self._rows(sql, params)]


def _walk(value: Any, fix: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return fix(value)
    if isinstance(value, Mapping):
        return {fix(str(k)): _walk(v, fix) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_walk(v, fix) for v in value]
    return value


def _casefold(value: object) -> str | None:
    return value.casefold() if isinstance(value, str) else None
