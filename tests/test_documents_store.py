"""The document library's store on both databases: the same search function ranks passages
with FTS5 (BM25) on SQLite and a tsvector with a GIN index on PostgreSQL; collections,
deletes and free-text queries behave the same. (Ingesting files: tests/test_documents.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from research.documents import ingest
from storage import Store
from storage import documents as docstore
from tests.document_files import markdown_bytes, pdf_bytes
from tests.store_files import migrated_copy


@pytest.fixture
def store(db_target: str) -> Iterator[Store]:
    s = Store(db_target if "://" in db_target else migrated_copy(Path(db_target)))
    yield s
    s.close()


def test_search_ranks_the_passage_with_the_words_first_and_respects_the_scope(
        store: Store) -> None:
    pdf = ingest(store, "report.pdf", pdf_bytes()).document_id or ""
    md = ingest(store, "notes.md", b"## Other\n\nWind turbines and solar panels.").document_id or ""
    hits = docstore.search_passages(store, "payback time against a gas boiler", limit=3)
    assert hits[0].document_id == pdf and hits[0].page == 3
    assert hits == sorted(hits, key=lambda h: h.rank)  # best (lowest) first on both
    assert docstore.search_passages(store, "payback boiler", document_ids=[md]) == []
    assert docstore.search_passages(store, "payback", document_ids=[]) == []
    assert docstore.search_passages(store, "turbines", document_ids=[md, pdf])[0].document_id == md
    # stemming on both: "panel" finds "panels"
    assert docstore.search_passages(store, "panel")[0].document_id == md


@pytest.mark.parametrize("query", ['"unbalanced', "NEAR(a b)", "text: payback", "*", "AND OR",
                                   "the of and", "payback & !boiler | 'x':*", "a\x00b"])
def test_search_takes_any_free_text_without_syntax_errors(store: Store, query: str) -> None:
    ingest(store, "report.pdf", pdf_bytes())
    docstore.search_passages(store, query)  # neither FTS5 nor tsquery syntax can fail it


def test_collections_and_deleting_a_document_work_the_same(store: Store) -> None:
    doc_id = ingest(store, "report.pdf", pdf_bytes(), collection="Heat").document_id or ""
    other = ingest(store, "a.md", markdown_bytes(), collection="heat pumps").document_id or ""
    docstore.add_to_collection(store, "Heat", [other, "no-such-document"])
    assert docstore.collection_documents(store, "Heat") == sorted([doc_id, other])
    assert [c.name for c in docstore.list_collections(store)] == ["Heat", "heat pumps"]
    assert [c.documents for c in docstore.list_collections(store)] == [2, 1]
    listed = {d.id: d.collections for d in docstore.list_documents(store)}
    assert listed[other] == ("Heat", "heat pumps")
    assert [d.id for d in docstore.list_documents(store, collection="heat pumps")] == [other]
    assert docstore.search_passages(store, "payback", document_ids=[doc_id])
    assert docstore.delete_document(store, doc_id)
    assert docstore.search_passages(store, "payback", document_ids=[doc_id]) == []
    assert {h.document_id for h in docstore.search_passages(store, "payback")} <= {other}
    assert docstore.collection_documents(store, "Heat") == [other]
    assert not docstore.delete_document(store, doc_id)
    docstore.delete_collection(store, "Heat")
    assert not docstore.collection_exists(store, "Heat")
    assert docstore.get_document(store, other) is not None
