"""Ask the report (issue 35; `research.ask`): a finished run's own full-text index and the
questions asked of its report.

Why it looks like this:
- an answer is written only from the run's gathered sources, found by a full-text index of
  their stored text, cut into passages (`ask_passages`): FTS5 ranked by BM25 on SQLite, a
  tsvector ranked by `ts_rank` on PostgreSQL (the same machinery as the person's documents,
  `storage.fulltext`). The index is made on the first question (`index_run`), in one
  transaction that first looks whether another process made it already;
- a search is free text from a person: it becomes quoted plain words
  (`storage.documents.search_terms`), so no search syntax in it can fail or widen the search;
- the questions and their checked answers (`conversations`) are rows of the run: they die
  with it, `db copy` moves them with it, and each carries the person who asked (the run's
  owner: `research.ask` refuses anyone else before anything is read).

Functions take a `storage.Store` and run their statements through its public `transaction`,
`query` and `query_value` methods, like `storage.documents`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, insert, select, text

from storage import fulltext
from storage.documents import search_terms
from storage.migrations import utc_now
from storage.schema import ask_passages, conversations
from storage.store import Store

_P = ask_passages.c
_C = conversations.c

# Rank inside the index first and join only the few kept (as storage.fulltext does).
_SQLITE_SEARCH = text(
    "WITH top AS (SELECT rowid AS id, bm25(ask_passages_fts) AS score FROM ask_passages_fts "
    "WHERE ask_passages_fts MATCH :expression "
    "AND rowid IN (SELECT id FROM ask_passages WHERE run_id = :run_id) "
    "ORDER BY score LIMIT :limit) "
    "SELECT p.id, p.source_id, p.seq, p.text, top.score FROM top "
    "JOIN ask_passages p ON p.id = top.id ORDER BY top.score, p.id")
_POSTGRES_SEARCH = text(
    "WITH q AS (SELECT to_tsquery('english', :expression) AS query) "
    "SELECT p.id, p.source_id, p.seq, p.text, -ts_rank(p.tsv, q.query) AS score "
    "FROM ask_passages p, q WHERE p.run_id = :run_id AND p.tsv @@ q.query "
    "ORDER BY score, p.id LIMIT :limit")


@dataclass(frozen=True, slots=True)
class SourcePassage:
    """One passage of a run's gathered source found for a question (lower score: better)."""

    source_id: str
    seq: int
    text: str
    score: float


@dataclass(frozen=True, slots=True)
class Turn:
    """One question asked of a run's report and its checked answer, as stored."""

    id: int
    run_id: str
    person: str | None
    question: str
    answer: str
    status: str                  # answered | not_in_sources
    created_at: str
    cost_usd: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)


def is_indexed(store: Store, run_id: str) -> bool:
    found = store.query_value(select(func.count()).select_from(ask_passages)
                              .where(_P.run_id == run_id))
    return bool(found)


def index_run(store: Store, run_id: str, pieces: Sequence[tuple[str, int, str]]) -> bool:
    """Store the run's source passages ((source id, seq, text)) unless another process did
    already; returns whether this call stored them."""
    with store.transaction() as tx:
        there = tx.execute(select(_P.id).where(_P.run_id == run_id).limit(1)).first()
        if there is not None or not pieces:
            return False
        tx.execute(insert(ask_passages), [
            {"run_id": run_id, "source_id": sid, "seq": seq, "text": store.clean_content(body)}
            for sid, seq, body in pieces])
    return True


def search_run(store: Store, run_id: str, query: str, *, limit: int = 8) -> list[SourcePassage]:
    """The run's passages best matching `query`, best first (none when it has no word)."""
    terms = search_terms(query)
    if not terms:
        return []
    statement = _POSTGRES_SEARCH if store.dialect == "postgresql" else _SQLITE_SEARCH
    rows = store.query(statement, {"expression": fulltext.expression(store.dialect, terms),
                                   "run_id": run_id, "limit": max(1, int(limit))})
    return [SourcePassage(r["source_id"], int(r["seq"]), r["text"], float(r["score"]))
            for r in rows]


def add_turn(store: Store, run_id: str, *, person: str | None, question: str, answer: str,
             status: str, details: dict[str, Any], cost_usd: float = 0.0) -> int:
    """Keep one question and its answer with the run; returns its id."""
    with store.transaction() as tx:
        result = tx.execute(insert(conversations).values(
            run_id=run_id, person=person or None, question=store.clean_content(question),
            answer=store.clean_content(answer), status=status,
            details=store.clean_content(details), cost_usd=float(cost_usd),
            created_at=utc_now()).returning(_C.id))
        return int(result.scalar_one())


def turns(store: Store, run_id: str) -> list[Turn]:
    """The run's questions and answers, oldest first."""
    rows = store.query(select(conversations).where(_C.run_id == run_id).order_by(_C.id))
    return [Turn(id=int(r["id"]), run_id=r["run_id"], person=r["person"] or None,
                 question=r["question"], answer=r["answer"] or "", status=r["status"] or "",
                 created_at=r["created_at"], cost_usd=float(r["cost_usd"] or 0),
                 details=dict(r["details"] or {})) for r in rows]
