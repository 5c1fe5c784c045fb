"""The person's own documents: files, collections and passages with a full-text index.

Why it looks like this:
- passages live in a plain table with a full-text index over it (FTS5 ranked by BM25 on
  SQLite, a tsvector with a GIN index on PostgreSQL; see `storage.fulltext`): full-text
  search that needs no embedding service and no second database;
- a document and all its passages are written in one transaction, so a failed upload leaves
  nothing half-stored, and deleting a document takes its passages and memberships with it;
- a search query is free text from a model or a person: it is turned into quoted plain
  words, so no search syntax (NEAR, column filters, quotes, tsquery operators) in it can
  fail or widen the search.

Functions take a `storage.Store` and run their statements through its public `transaction` and
`query` methods, so they share its locking and WAL bounds; this module imports nothing from
`research`.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import delete, func, insert, select

from storage import fulltext
from storage import rows as mapped
from storage.dialects import insert_for
from storage.engine import Tx
from storage.migrations import utc_now
from storage.records import Collection, Document, Passage, RunPassage
from storage.schema import collection_documents as members
from storage.schema import collections, documents
from storage.schema import passages as passage_table
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
    with store.transaction() as tx:
        tx.execute(insert(documents).values(
            id=doc_id, title=store.clean_content(title), filename=store.clean_content(filename),
            kind=kind, size_bytes=size_bytes, pages=pages, passages=len(passages), status=status,
            message=message, sha256=sha256, added_at=utc_now()))
        if passages:
            tx.execute(insert(passage_table), [
                {"document_id": doc_id, "seq": seq, "page": page,
                 "section": store.clean_content(section), "text": store.clean_content(text)}
                for seq, (page, section, text) in enumerate(passages)])
        if collection:
            _add_to_collection(store, tx, collection, [doc_id])
    return doc_id


def find_by_hash(store: Store, sha256: str) -> Document | None:
    """The stored document with exactly these bytes, if any (an upload of the same file)."""
    row = store.query_one(select(documents).where(documents.c.sha256 == sha256).limit(1))
    return mapped.document(row) if row else None


def get_document(store: Store, doc_id: str) -> Document | None:
    row = store.query_one(select(documents).where(documents.c.id == doc_id))
    return mapped.document(row) if row else None


def list_documents(store: Store, *, collection: str | None = None) -> list[Document]:
    """Every document (or a collection's), newest first, with its collections listed."""
    query = select(documents).order_by(documents.c.added_at.desc(), documents.c.id)
    if collection:
        query = query.where(documents.c.id.in_(
            select(members.c.document_id)
            .where(members.c.collection == collection)))
    rows = store.query(query)
    member: dict[str, list[str]] = {}
    for link in store.query(select(members)):
        member.setdefault(link["document_id"], []).append(link["collection"])
    return [mapped.document(row, member.get(row["id"], ())) for row in rows]


def delete_document(store: Store, doc_id: str) -> bool:
    """Remove a document with its passages and collection memberships. False: not there."""
    with store.transaction() as tx:
        tx.execute(delete(members).where(members.c.document_id == doc_id))
        tx.execute(delete(passage_table).where(passage_table.c.document_id == doc_id))
        gone = tx.execute(delete(documents).where(documents.c.id == doc_id)
                          .returning(documents.c.id)).first()
    return gone is not None


def get_passages(store: Store, doc_id: str) -> list[Passage]:
    p = passage_table.c
    rows = store.query(select(p.id, p.seq, p.page, p.section, p.text)
                       .where(p.document_id == doc_id).order_by(p.seq))
    return [mapped.passage(row) for row in rows]


# -- collections -------------------------------------------------------------------------

def check_collection_name(name: str) -> str:
    """The name, trimmed; ValueError with plain words when it cannot be a collection name."""
    name = " ".join((name or "").split())
    if not name:
        raise ValueError("Please give the collection a name.")
    if len(name) > MAX_COLLECTION_NAME:
        raise ValueError(f"A collection name can be at most {MAX_COLLECTION_NAME} characters.")
    return name


def _ensure_collection(store: Store, tx: Tx, name: str) -> None:
    tx.execute(insert_for(store.dialect, collections).values(name=name, created_at=utc_now())
               .on_conflict_do_nothing())


def create_collection(store: Store, name: str) -> str:
    name = check_collection_name(name)
    with store.transaction() as tx:
        _ensure_collection(store, tx, name)
    return name


def _add_to_collection(store: Store, tx: Tx, name: str, doc_ids: Iterable[str]) -> None:
    name = check_collection_name(name)
    _ensure_collection(store, tx, name)
    for doc_id in doc_ids:
        known = select(documents.c.id).where(documents.c.id == doc_id)
        if tx.execute(known).first() is None:
            continue
        tx.execute(insert_for(store.dialect, members)
                   .values(collection=name, document_id=doc_id).on_conflict_do_nothing())


def add_to_collection(store: Store, name: str, doc_ids: Iterable[str]) -> None:
    """Put documents in a collection (made if new); unknown ids are ignored."""
    with store.transaction() as tx:
        _add_to_collection(store, tx, name, list(doc_ids))


def remove_from_collection(store: Store, name: str, doc_ids: Iterable[str]) -> None:
    with store.transaction() as tx:
        tx.execute(delete(members).where(
            members.c.collection == name,
            members.c.document_id.in_(list(doc_ids))))


def delete_collection(store: Store, name: str) -> None:
    """Forget the collection; its documents stay in the library."""
    with store.transaction() as tx:
        tx.execute(delete(members).where(members.c.collection == name))
        tx.execute(delete(collections).where(collections.c.name == name))


def list_collections(store: Store) -> list[Collection]:
    c, m = collections.c, members.c
    rows = store.query(
        select(c.name, c.created_at, func.count(m.document_id).label("documents"))
        .select_from(collections.outerjoin(members, m.collection == c.name))
        .group_by(c.name, c.created_at).order_by(func.lower(c.name), c.name))
    return [mapped.collection(row) for row in rows]


def collection_documents(store: Store, name: str) -> list[str]:
    m = members.c
    return [r["document_id"] for r in store.query(
        select(m.document_id).where(m.collection == name).order_by(m.document_id))]


def collection_exists(store: Store, name: str) -> bool:
    return store.query_one(select(collections.c.name).where(collections.c.name == name)) is not None


# -- search ------------------------------------------------------------------------------

def search_terms(query: str) -> list[str]:
    """The searchable words of free text: no stopwords or single letters, at most
    MAX_QUERY_TERMS, each once."""
    words = [w for w in _WORD.findall(query.lower()) if w not in _STOPWORDS and len(w) > 1]
    return list(dict.fromkeys(words))[:MAX_QUERY_TERMS]


def match_expression(query: str) -> str | None:
    """Free text as an FTS5 query: each word quoted, joined with OR (BM25 ranks passages
    with more and rarer words higher). None when the text has no searchable word."""
    terms = search_terms(query)
    return fulltext.expression("sqlite", terms) if terms else None


def search_passages(
    store: Store, query: str, *, limit: int = 10, document_ids: Sequence[str] | None = None,
) -> list[PassageHit]:
    """The best passages for `query` (BM25 on SQLite, ts_rank on PostgreSQL), within
    `document_ids` if given (empty: none)."""
    terms = search_terms(query)
    if not terms or (document_ids is not None and not document_ids):
        return []
    statement, params = fulltext.search(store.dialect, terms, limit=int(limit),
                                        document_ids=document_ids)
    rows = store.query(statement, params)
    return [PassageHit(r["id"], r["document_id"], r["title"], r["page"], r["section"] or "",
                       r["text"], float(r["score"])) for r in rows]


def run_passages(store: Store, run_id: str) -> list[RunPassage]:
    """A run's sources that are passages of the person's documents, with their text as the
    run read it (kept with the run, so deleting the document later changes nothing here)."""
    from storage.schema import sources

    s = sources.c
    rows = store.query(select(s.id, s.title, s.text, s.cited_in)
                       .where(s.run_id == run_id, s.url.like("doc://%"))
                       .order_by(s.title, s.id))
    return [mapped.run_passage(row) for row in rows]
