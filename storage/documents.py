"""The person's own documents: files, collections and passages with a full-text index.

Why it looks like this:
- passages live in a plain table and an external-content FTS5 index over it (kept in step by
  triggers, see `storage.migrations.m005_documents`), ranked by BM25: full-text search that
  needs no embedding service and no second database;
- a document and all its passages are written in one transaction, so a failed upload leaves
  nothing half-stored, and deleting a document takes its passages and memberships with it;
- a search query is free text from a model or a person: it is turned into quoted FTS5 terms,
  so no FTS5 syntax (NEAR, column filters, quotes) in it can fail or widen the search.

Functions take a `storage.Store` and use its connections, so they share its locking and WAL
bounds; this module imports nothing from `research`.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from storage.migrations import utc_now
from storage.store import Store

STATUSES = frozenset({"ready", "no_text"})
MAX_COLLECTION_NAME = 80
_WORD = re.compile(r"\w+", re.UNICODE)
_STOPWORDS = frozenset(
    "a an and are as at be by for from has have how in is it its of on or that the this to "
    "was were what when where which who why will with do does did can".split()
)
MAX_QUERY_TERMS = 24


@dataclass(frozen=True)
class PassageHit:
    """One passage found by a search, with what a citation needs."""

    passage_id: int
    document_id: str
    title: str
    page: int | None
    section: str
    text: str
    rank: float


def add_document(
    store: Store, *, title: str, filename: str, kind: str, size_bytes: int,
    pages: int | None, sha256: str, passages: Sequence[tuple[int | None, str, str]],
    status: str = "ready", message: str | None = None, collection: str | None = None,
) -> str:
    """Store one document and its passages ((page, section, text), in order); return its id."""
    if status not in STATUSES:
        raise ValueError(f"unknown document status {status!r}")
    doc_id = "d_" + uuid.uuid4().hex[:12]
    with store._write() as db:
        db.execute(
            "INSERT INTO documents (id, title, filename, kind, size_bytes, pages, passages, "
            "status, message, sha256, added_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [doc_id, store._plain(title), store._plain(filename), kind, size_bytes, pages,
             len(passages), status, message, sha256, utc_now()],
        )
        db.conn.executemany(
            "INSERT INTO passages (document_id, seq, page, section, text) VALUES (?, ?, ?, ?, ?)",
            [(doc_id, seq, page, store._plain(section), store._plain(text))
             for seq, (page, section, text) in enumerate(passages)],
        )
        if collection:
            _add_to_collection(db, collection, [doc_id])
    return doc_id


def find_by_hash(store: Store, sha256: str) -> dict[str, Any] | None:
    """The stored document with exactly these bytes, if any (an upload of the same file)."""
    return store._row("SELECT * FROM documents WHERE sha256 = ? LIMIT 1", [sha256])


def get_document(store: Store, doc_id: str) -> dict[str, Any] | None:
    return store._row("SELECT * FROM documents WHERE id = ?", [doc_id])


def list_documents(store: Store, *, collection: str | None = None) -> list[dict[str, Any]]:
    """Every document (or a collection's), newest first, with its collections listed."""
    where, params = ("", []) if not collection else (
        "WHERE d.id IN (SELECT document_id FROM collection_documents WHERE collection = ?)",
        [collection])
    rows = store._rows(
        "SELECT d.*, (SELECT group_concat(collection, '\u001f') FROM collection_documents c "
        f"WHERE c.document_id = d.id) AS in_collections FROM documents d {where} "
        "ORDER BY d.added_at DESC, d.id", params)
    for row in rows:
        row["collections"] = sorted(filter(None, (row.pop("in_collections") or "").split(
            "\u001f")))
    return rows


def delete_document(store: Store, doc_id: str) -> bool:
    """Remove a document with its passages and collection memberships. False: not there."""
    with store._write() as db:
        cursor = db.execute("DELETE FROM documents WHERE id = ?", [doc_id])
    return bool(cursor.rowcount)


def get_passages(store: Store, doc_id: str) -> list[dict[str, Any]]:
    return store._rows("SELECT id, seq, page, section, text FROM passages "
                       "WHERE document_id = ? ORDER BY seq", [doc_id])


def get_passage(store: Store, passage_id: int) -> dict[str, Any] | None:
    return store._row("SELECT p.*, d.title FROM passages p JOIN documents d ON "
                      "d.id = p.document_id WHERE p.id = ?", [passage_id])


# -- collections -------------------------------------------------------------------------

def check_collection_name(name: str) -> str:
    """The name, trimmed; ValueError with plain words when it cannot be a collection name."""
    name = " ".join((name or "").split())
    if not name:
        raise ValueError("Please give the collection a name.")
    if len(name) > MAX_COLLECTION_NAME:
        raise ValueError(f"A collection name can be at most {MAX_COLLECTION_NAME} characters.")
    return name


def create_collection(store: Store, name: str) -> str:
    name = check_collection_name(name)
    with store._write() as db:
        db.execute("INSERT OR IGNORE INTO collections (name, created_at) VALUES (?, ?)",
                   [name, utc_now()])
    return name


def _add_to_collection(db: Any, name: str, doc_ids: Iterable[str]) -> None:
    name = check_collection_name(name)
    db.execute("INSERT OR IGNORE INTO collections (name, created_at) VALUES (?, ?)",
               [name, utc_now()])
    db.conn.executemany(
        "INSERT OR IGNORE INTO collection_documents (collection, document_id) "
        "SELECT ?, id FROM documents WHERE id = ?", [(name, d) for d in doc_ids])


def add_to_collection(store: Store, name: str, doc_ids: Iterable[str]) -> None:
    """Put documents in a collection (made if new); unknown ids are ignored."""
    with store._write() as db:
        _add_to_collection(db, name, list(doc_ids))


def remove_from_collection(store: Store, name: str, doc_ids: Iterable[str]) -> None:
    with store._write() as db:
        db.conn.executemany(
            "DELETE FROM collection_documents WHERE collection = ? AND document_id = ?",
            [(name, d) for d in doc_ids])


def delete_collection(store: Store, name: str) -> None:
    """Forget the collection; its documents stay in the library."""
    with store._write() as db:
        db.execute("DELETE FROM collections WHERE name = ?", [name])


def list_collections(store: Store) -> list[dict[str, Any]]:
    return store._rows(
        "SELECT c.name, c.created_at, COUNT(m.document_id) AS documents FROM collections c "
        "LEFT JOIN collection_documents m ON m.collection = c.name GROUP BY c.name "
        "ORDER BY c.name COLLATE NOCASE")


def collection_documents(store: Store, name: str) -> list[str]:
    return [r["document_id"] for r in store._rows(
        "SELECT document_id FROM collection_documents WHERE collection = ? "
        "ORDER BY document_id", [name])]


def collection_exists(store: Store, name: str) -> bool:
    return store._row("SELECT 1 AS x FROM collections WHERE name = ?", [name]) is not None


# -- search ------------------------------------------------------------------------------

def match_expression(query: str) -> str | None:
    """Free text as an FTS5 query: each word quoted, joined with OR (BM25 ranks passages
    with more and rarer words higher). None when the text has no searchable word."""
    words = [w for w in _WORD.findall(query.lower()) if w not in _STOPWORDS and len(w) > 1]
    unique = list(dict.fromkeys(words))[:MAX_QUERY_TERMS]
    if not unique:
        return None
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in unique)


def search_passages(
    store: Store, query: str, *, limit: int = 10, document_ids: Sequence[str] | None = None,
) -> list[PassageHit]:
    """The best passages for `query` by BM25, within `document_ids` if given (empty: none)."""
    expression = match_expression(query)
    if expression is None or (document_ids is not None and not document_ids):
        return []
    scope, params = "", [expression]
    if document_ids is not None:
        scope = ("AND rowid IN (SELECT id FROM passages WHERE document_id IN "
                 f"({', '.join('?' for _ in document_ids)}))")
        params += list(document_ids)
    # Rank inside the index first and join only the few kept: joining every matching
    # passage before the sort costs more than the search itself on a large library.
    rows = store._rows(
        "WITH top AS (SELECT rowid AS id, bm25(passages_fts, 1.0, 0.5) AS score "
        f"FROM passages_fts WHERE passages_fts MATCH ? {scope} ORDER BY score LIMIT ?) "
        "SELECT p.id, p.document_id, p.page, p.section, p.text, d.title, top.score "
        "FROM top JOIN passages p ON p.id = top.id JOIN documents d ON d.id = p.document_id "
        "ORDER BY top.score", [*params, max(1, int(limit))])
    return [PassageHit(r["id"], r["document_id"], r["title"], r["page"], r["section"] or "",
                       r["text"], float(r["score"])) for r in rows]


def run_passages(store: Store, run_id: str) -> list[dict[str, Any]]:
    """A run's sources that are passages of the person's documents, with their text as the
    run read it (kept with the run, so deleting the document later changes nothing here)."""
    return store._rows(
        "SELECT id, title, text, cited_in FROM sources WHERE run_id = ? AND url LIKE 'doc://%' "
        "ORDER BY title, id", [run_id])
