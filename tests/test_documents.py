"""The document library: real PDF/DOCX/Markdown/HTML files in, located passages out, searched
by the store's FTS5 index; bad files refused with plain words while the rest goes on."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from research.core.config import build_config
from research.core.errors import ConfigError
from research.documents import ingest, ingest_paths
from research.documents.choice import mix_of, with_sources
from research.documents.extract import MAX_FILE_BYTES
from research.documents.passages import split
from research.search import build_search_providers
from research.search.base import SearchResult
from research.search.documents import (
    DocumentSearch,
    bind_store,
    check_scope,
    is_document_result,
)
from storage import Store
from storage import documents as docstore
from tests.document_files import (
    docx_bytes,
    encrypted_pdf_bytes,
    markdown_bytes,
    pdf_bytes,
    scanned_pdf_bytes,
    zip_bomb_docx_bytes,
)
from tests.store_files import migrated_copy


@pytest.fixture
def store(tmp_db: Path) -> Store:
    return Store(migrated_copy(tmp_db))


def test_pdf_passages_keep_their_page_numbers(store: Store) -> None:
    result = ingest(store, "field-report.pdf", pdf_bytes())
    assert result.ok and result.pages == 3
    passages = docstore.get_passages(store, result.document_id or "")
    assert [p.page for p in passages] == [1, 2, 3]
    assert "payback time" in passages[2].text
    doc = docstore.get_document(store, result.document_id or "")
    assert doc is not None and doc.title == "Heat Pump Field Report" and doc.kind == "pdf"


def test_docx_markdown_and_html_passages_keep_their_headings(store: Store) -> None:
    for name, data in [("notes.docx", docx_bytes()), ("notes.md", markdown_bytes()),
                       ("page.html", _html_page())]:
        result = ingest(store, name, data)
        assert result.ok, (name, result.message)
        sections = {p.section for p in docstore.get_passages(store, result.document_id or "")}
        assert "Costs and payback" in sections, (name, sections)


def _html_page() -> bytes:
    paragraphs = "".join(f"<h2>{h}</h2><p>{t * 2}</p>" for h, t in [
        ("Adoption in Europe", "Sales rose by a third in one year across the continent. "),
        ("Costs and payback", "An installed heat pump costs between 9,000 and 15,000 euros. ")])
    return (f"<html><head><title>Market page</title><script>alert(1)</script></head><body>"
            f"<article><h1>Market page</h1>{paragraphs}"
            f'<a href="http://169.254.169.254/">metadata</a></article></body></html>').encode()


def test_html_script_and_links_are_not_kept_as_text(store: Store) -> None:
    result = ingest(store, "page.html", _html_page())
    text = " ".join(p.text for p in docstore.get_passages(store, result.document_id or ""))
    assert "alert(1)" not in text and "169.254.169.254" not in text and "euros" in text


# The built files are named by their builder, so collecting this file builds nothing (every
# xdist worker collects every file; the zip bomb alone takes a CPU-second to write).
@pytest.mark.parametrize(("name", "data", "words"), [
    ("locked.pdf", encrypted_pdf_bytes, "password-protected"),
    ("broken.pdf", b"%PDF-1.7\n1 0 obj << /Type /Catalog", "could not be read"),
    ("bomb.docx", zip_bomb_docx_bytes, "zip bomb"),
    ("fake.docx", b"this is not a zip file at all", "could not be read"),
    ("tool.exe", b"MZ\x90\x00", "not supported"),
    ("empty.txt", b"", "empty"),
    ("blank.md", b"   \n\n  ", "empty"),
])
def test_bad_files_are_refused_with_plain_words_and_nothing_is_stored(
    store: Store, name: str, data: bytes | Callable[[], bytes], words: str,
) -> None:
    result = ingest(store, name, data if isinstance(data, bytes) else data())
    assert not result.ok and words in result.message
    assert docstore.list_documents(store) == []


def test_scanned_pdf_is_listed_but_flagged_as_having_no_text(store: Store) -> None:
    result = ingest(store, "scan.pdf", scanned_pdf_bytes())
    assert not result.ok and "OCR" in result.message
    [doc] = docstore.list_documents(store)
    assert doc.status == "no_text" and doc.passages == 0 and doc.pages == 2


def test_a_bad_file_in_a_folder_does_not_stop_the_rest(store: Store, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.pdf").write_bytes(pdf_bytes())
    (folder / "b.docx").write_bytes(zip_bomb_docx_bytes())
    (folder / "c.md").write_bytes(markdown_bytes())
    (folder / "d.exe").write_bytes(b"MZ")  # not a supported kind: not picked from a folder
    big = tmp_path / "big.txt"
    with big.open("wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)
    results = ingest_paths(store, [folder, big], collection="Heat")
    assert [(r.filename, r.ok) for r in results] == [
        ("a.pdf", True), ("b.docx", False), ("c.md", True), ("big.txt", False)]
    assert "MB limit" in results[3].message
    assert len(docstore.collection_documents(store, "Heat")) == 2


def test_the_same_file_twice_is_stored_once(store: Store) -> None:
    first = ingest(store, "a.md", markdown_bytes())
    second = ingest(store, "copy.md", markdown_bytes(), collection="Mine")
    assert second.ok and second.document_id == first.document_id
    assert "already" in second.message and len(docstore.list_documents(store)) == 1
    assert docstore.list_documents(store)[0].collections == ("Mine",)


def test_search_ranks_the_passage_with_the_words_first_and_respects_the_scope(
        store: Store) -> None:
    pdf = ingest(store, "report.pdf", pdf_bytes()).document_id or ""
    md = ingest(store, "notes.md", b"## Other\n\nWind turbines and solar panels.")
    hits = docstore.search_passages(store, "payback time against a gas boiler", limit=3)
    assert hits[0].document_id == pdf and hits[0].page == 3
    assert docstore.search_passages(store, "payback boiler", document_ids=[md.document_id or ""]) == []
    assert docstore.search_passages(store, "payback", document_ids=[]) == []


@pytest.mark.parametrize("query", ['"unbalanced', "NEAR(a b)", "text: payback", "*", "AND OR",
                                   "the of and"])
def test_search_takes_any_free_text_without_fts_syntax_errors(store: Store, query: str) -> None:
    ingest(store, "report.pdf", pdf_bytes())
    docstore.search_passages(store, query)  # no sqlite3.OperationalError


def test_deleting_a_document_removes_its_passages_from_the_index(store: Store) -> None:
    doc_id = ingest(store, "report.pdf", pdf_bytes(), collection="Heat").document_id or ""
    assert docstore.search_passages(store, "payback")
    assert docstore.delete_document(store, doc_id)
    assert docstore.search_passages(store, "payback") == []
    assert docstore.collection_documents(store, "Heat") == []
    assert not docstore.delete_document(store, doc_id)


def test_passages_stay_within_a_page_and_near_the_target_size() -> None:
    from research.documents.extract import Section

    long = " ".join(f"word{i}" for i in range(1000))
    passages = split([Section(long, page=4), Section("short text", page=5)])
    assert {p.page for p in passages[:-1]} == {4} and passages[-1].page == 5
    assert all(len(p.text.split()) <= 350 for p in passages)
    assert sum(len(p.text.split()) for p in passages) == 1002


def test_document_results_carry_a_located_title_and_their_text(store: Store) -> None:
    ingest(store, "report.pdf", pdf_bytes(), collection="Heat")
    provider = DocumentSearch("Heat", store=store)
    [first, *_] = provider.search("payback gas boiler", max_results=2, timeout=5)
    assert first.title == "Heat Pump Field Report, p. 3"
    assert first.url.startswith("doc://") and is_document_result(first)
    assert "payback" in (first.content or "")


def test_a_doc_address_from_any_other_provider_is_not_a_document() -> None:
    fake = SearchResult(url="doc://d_1/1", title="x", snippet="", provider="web", content="x")
    assert not is_document_result(fake)


def test_documents_only_needs_no_search_key_and_adds_no_academic_search(store: Store) -> None:
    config = build_config(env={"OPENAI_API_KEY": "sk-test"}, include_academic_sources=True)
    docs_only = with_sources(config, "documents", collection="Heat")
    assert docs_only.active_search_providers() == ("documents",) and mix_of(docs_only) == "documents"
    providers = bind_store(build_search_providers(docs_only, credentials=_no_keys()), store)
    assert [p.name for p in providers] == ["documents"]
    both = with_sources(config, "both")
    assert mix_of(both) == "both" and "documents" in both.active_search_providers()
    assert mix_of(with_sources(both, "web")) == "web"


def _no_keys():  # type: ignore[no-untyped-def]
    from research.core.config import Credentials

    return Credentials.from_env({})


def test_a_run_over_missing_documents_is_refused_in_plain_words(store: Store) -> None:
    config = build_config(env={})
    with pytest.raises(ConfigError, match="no document collection named"):
        check_scope(store, with_sources(config, "documents", collection="Nope"))
    with pytest.raises(ConfigError, match="no searchable documents"):
        check_scope(store, with_sources(config, "documents"))
    ingest(store, "a.md", markdown_bytes())
    check_scope(store, with_sources(config, "documents"))


def test_hosted_engines_are_not_offered_documents_they_cannot_read(store: Store) -> None:
    ingest(store, "a.md", markdown_bytes())
    config = with_sources(build_config(env={}, engine="openai-deep-research"), "both")
    with pytest.raises(ConfigError, match="cannot read your documents"):
        check_scope(store, config)


def test_a_word_file_is_read_in_the_sandboxed_child(store: Store,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    from research.untrusted.sandbox import ChildLimits

    extract_module = importlib.import_module("research.documents.extract")

    monkeypatch.setattr(extract_module, "CHILD_LIMITS", ChildLimits(timeout_s=0.01, memory_mb=512))
    result = ingest(store, "notes.docx", docx_bytes())
    assert not result.ok and "took too long" in result.message


def test_an_upload_keeps_its_order_and_stores_a_file_given_twice_once(store: Store) -> None:
    from research.documents import ingest_many

    results = ingest_many(store, [("a.pdf", pdf_bytes()), ("bad.exe", b"MZ"),
                                  ("b.docx", docx_bytes()), ("a-again.pdf", pdf_bytes())],
                          collection="Mix")
    assert [(r.filename, r.ok) for r in results] == [
        ("a.pdf", True), ("bad.exe", False), ("b.docx", True), ("a-again.pdf", True)]
    assert results[3].document_id == results[0].document_id and "already" in results[3].message
    assert len(docstore.list_documents(store)) == 2


@pytest.mark.parametrize("address", ["doc://d_1/2", "file:///etc/passwd"])
def test_the_web_fetcher_refuses_document_and_file_addresses(address: str) -> None:
    from research.core.errors import FetchRefused
    from research.untrusted.fetch import Fetcher

    with Fetcher() as fetcher, pytest.raises(FetchRefused, match="only http and https"):
        fetcher.fetch(address)


def test_research_never_hands_a_doc_address_from_another_provider_to_the_fetcher() -> None:
    from research.phases.gather.research import UrlRegistry, _select
    from research.phases.gather.searching import Candidate, Outcome

    forged = SearchResult(url="doc://d_1/2", title="x", snippet="", provider="web", content="x")
    mine = SearchResult(url="doc://d_1/3", title="y", snippet="", provider="documents",
                        content="y")
    chosen = _select([Candidate(forged, "", "q"), Candidate(mine, "", "q")], UrlRegistry(set()),
                     Outcome(), limit=10)
    assert [c.result.url for c in chosen] == ["doc://d_1/3"]


def test_searching_an_emptied_collection_is_a_named_failure(store: Store) -> None:
    from research.core.errors import ProviderError

    doc_id = ingest(store, "a.md", markdown_bytes(), collection="Heat").document_id or ""
    docstore.delete_document(store, doc_id)
    with pytest.raises(ProviderError, match="no documents left in the collection"):
        DocumentSearch("Heat", store=store).search("payback", max_results=3, timeout=5)
