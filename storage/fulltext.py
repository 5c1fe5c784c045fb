"""Full-text search over the person's passages: FTS5 on SQLite, tsvector on PostgreSQL.

Both rank passages for a list of plain search words (`storage.documents.search_terms` makes
them from free text) and return the same rows, best first, with a `score` where lower is
better:
- SQLite: an external-content FTS5 index kept in step by triggers (`storage.migrations.
  m005_documents`), ranked by BM25 with the section weighing half as much as the text; each
  word is quoted, so no FTS5 syntax in a query can fail or widen the search;
- PostgreSQL: a generated `tsv` column (text weight A, section weight B, English stemming
  like FTS5's porter tokenizer) with a GIN index, ranked by `ts_rank`; each word is quoted
  inside `to_tsquery`, so no tsquery syntax in a query can fail or widen the search either.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, TextClause, bindparam, text

_POSTGRES_COLUMN = (
    "ALTER TABLE passages ADD COLUMN tsv tsvector GENERATED ALWAYS AS ("
    "setweight(to_tsvector('english', coalesce(text, '')), 'A') || "
    "setweight(to_tsvector('english', coalesce(section, '')), 'B')) STORED"
)
_POSTGRES_INDEX = "CREATE INDEX idx_passages_tsv ON passages USING GIN (tsv)"

# Rank inside the index first and join only the few kept: joining every matching passage
# before the sort costs more than the search itself on a large library.
_SQLITE_SEARCH = (
    "WITH top AS (SELECT rowid AS id, bm25(passages_fts, 1.0, 0.5) AS score "
    "FROM passages_fts WHERE passages_fts MATCH :expression {scope} ORDER BY score LIMIT :limit) "
    "SELECT p.id, p.document_id, p.page, p.section, p.text, d.title, top.score "
    "FROM top JOIN passages p ON p.id = top.id JOIN documents d ON d.id = p.document_id "
    "ORDER BY top.score"
)
_SQLITE_SCOPE = "AND rowid IN (SELECT id FROM passages WHERE document_id IN :document_ids)"
_POSTGRES_SEARCH = (
    "WITH q AS (SELECT to_tsquery('english', :expression) AS query), "
    "top AS (SELECT p.id, -ts_rank('{{0, 0, 0.5, 1}}', p.tsv, q.query) AS score "
    "FROM passages p, q WHERE p.tsv @@ q.query {scope} ORDER BY score, p.id LIMIT :limit) "
    "SELECT p.id, p.document_id, p.page, p.section, p.text, d.title, top.score "
    "FROM top JOIN passages p ON p.id = top.id JOIN documents d ON d.id = p.document_id "
    "ORDER BY top.score, p.id"
)
_POSTGRES_SCOPE = "AND p.document_id IN :document_ids"


def create_postgres_index(conn: Connection) -> None:
    """The tsvector column and its GIN index (PostgreSQL's baseline migration)."""
    conn.exec_driver_sql(_POSTGRES_COLUMN)
    conn.exec_driver_sql(_POSTGRES_INDEX)


def expression(dialect: str, terms: Sequence[str]) -> str:
    """The words as one OR query in the dialect's syntax, each quoted (words are `\\w+`)."""
    if dialect == "postgresql":
        return " | ".join("'" + t.replace("'", "") + "'" for t in terms)
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def search(dialect: str, terms: Sequence[str], *, limit: int,
           document_ids: Sequence[str] | None) -> tuple[TextClause, dict[str, object]]:
    """The query (and its parameters) for the best passages for any of `terms` (within
    `document_ids` if given), best first."""
    postgres = dialect == "postgresql"
    sql = _POSTGRES_SEARCH if postgres else _SQLITE_SEARCH
    scope = "" if document_ids is None else (_POSTGRES_SCOPE if postgres else _SQLITE_SCOPE)
    statement = text(sql.format(scope=scope))
    params: dict[str, object] = {"expression": expression(dialect, terms), "limit": max(1, limit)}
    if document_ids is not None:
        statement = statement.bindparams(bindparam("document_ids", expanding=True))
        params["document_ids"] = list(document_ids)
    return statement, params
