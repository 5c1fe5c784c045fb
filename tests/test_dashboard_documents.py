"""Documents page and the New research source choice: listing, search, collections, delete
with confirmation, bad uploads in plain words, and a documents-only start with no search key."""

from __future__ import annotations

import copy
import importlib
import re
from dataclasses import replace
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from dashboard import documents_view as dv
from research.documents import ingest
from storage import Store
from storage import documents as docstore
from tests.dashboard_fixtures import (  # noqa: F401 - fixtures
    APP,
    EVIL_TITLE,
    FakeExecutor,
    dash_env_fixture,
    fake_jobs_fixture,
    on_postgresql,
    open_page,
)
from tests.document_files import docx_bytes, markdown_bytes, pdf_bytes, zip_bomb_docx_bytes

pytestmark = pytest.mark.usefixtures("dash_env", "files_read_once")
_READ: dict[tuple[Any, ...], Any] = {}


@pytest.fixture(name="files_read_once")
def files_read_once_fixture(monkeypatch: pytest.MonkeyPatch) -> None:
    """A file's text is read in the sandboxed child once per test process, then reused:
    these tests are about the pages; the reading itself (limits, bad files, the child) is
    tests/test_documents.py's. A file the child refuses is refused every time (not kept)."""
    extract = importlib.import_module("research.documents.extract")  # the module, not the
    child = extract._child  # function of the same name the package exports

    def read_once(target: str, data: bytes, what: str, *args: str) -> Any:
        key = (target, data, what, args)
        if key not in _READ:
            _READ[key] = child(target, data, what, *args)
        return copy.deepcopy(_READ[key])

    monkeypatch.setattr(extract, "_child", read_once)


def _documents() -> AppTest:
    return open_page("app_pages/documents.py").run()


def _button(at: AppTest, label: str):  # type: ignore[no-untyped-def]
    return next(b for b in at.button if b.label == label)


def _table(at: AppTest):  # type: ignore[no-untyped-def]
    return next(df.value for df in at.dataframe if "Title" in df.value.columns)


def test_documents_page_is_in_the_navigation_and_says_how_to_start(dash_env: Store) -> None:
    at = _documents()
    assert not at.exception
    assert any("No documents yet" in i.value for i in at.info)


def test_documents_are_listed_with_type_size_pages_and_status(dash_env: Store) -> None:
    ingest(dash_env, "field-report.pdf", pdf_bytes(), collection="Heat")
    ingest(dash_env, "notes.docx", docx_bytes())
    at = _documents()
    table = _table(at)
    assert list(table["Title"]) == ["Heat pump market notes", "Heat Pump Field Report"]
    pdf_row = table[table["Type"] == "PDF"].iloc[0]
    assert pdf_row["Pages"] == 3 and pdf_row["Status"].endswith("Searchable")
    assert pdf_row["Collections"] == "Heat" and pdf_row["Size"].endswith("KB")
    at.selectbox(key="doc_show").select("Heat").run()
    assert list(_table(at)["Title"]) == ["Heat Pump Field Report"]


def test_search_shows_the_passage_with_its_page(dash_env: Store) -> None:
    ingest(dash_env, "field-report.pdf", pdf_bytes())
    at = _documents()
    at.text_input(key="doc_query").input("payback gas boiler").run()
    headings = [m.value for m in at.markdown if m.value.startswith("**Heat Pump Field Report")]
    assert headings and "p. 3" in headings[0]


def test_untrusted_titles_and_text_are_shown_inert(dash_env: Store) -> None:
    evil = f"# {EVIL_TITLE}\n\n<script>alert(2)</script> payback [click](javascript:alert(3))"
    ingest(dash_env, "evil.md", evil.encode())
    at = _documents()
    at.text_input(key="doc_query").input("payback").run()
    shown = " ".join(m.value for m in at.markdown)
    assert "payback" in shown
    for raw in ("<img", "<script>", "](javascript"):  # only ever shown escaped
        assert not re.search(r"(?<!\\)" + re.escape(raw), shown), raw


def test_delete_asks_first_and_then_removes_the_document(dash_env: Store) -> None:
    ingest(dash_env, "notes.md", markdown_bytes())
    at = _documents()
    _button(at, "Delete").click().run()
    assert docstore.list_documents(dash_env)  # not yet: it asks
    assert any("and its passages from the library" in w.value for w in at.warning)
    _button(at, "Cancel").click().run()
    assert docstore.list_documents(dash_env)
    _button(at, "Delete").click().run()
    _button(at, "Delete for good").click().run()
    assert docstore.list_documents(dash_env) == []


def test_a_document_is_put_in_a_new_collection(dash_env: Store) -> None:
    doc_id = ingest(dash_env, "notes.md", markdown_bytes()).document_id
    at = _documents()
    at.text_input(key="doc_group_new").input("Market").run()
    _button(at, "Add to collection").click().run()
    assert docstore.collection_documents(dash_env, "Market") == [doc_id]
    _button(at, "Delete collection").click().run()
    assert docstore.list_collections(dash_env) == [] and docstore.list_documents(dash_env)


def test_an_upload_with_a_bad_file_adds_the_good_ones_and_names_the_bad(
        dash_env: Store) -> None:
    results = dv.add_uploads(dash_env, [("good.pdf", pdf_bytes()), ("bomb.docx",
                             zip_bomb_docx_bytes()), ("notes.md", markdown_bytes())], "Heat")
    assert [r.ok for r in results] == [True, False, True]
    assert "zip bomb" in dv.result_line(results[1])
    assert len(docstore.collection_documents(dash_env, "Heat")) == 2


def _new_research() -> AppTest:
    return AppTest.from_file(APP, default_timeout=30).run()


def test_documents_only_without_documents_is_refused_in_plain_words(
    dash_env: Store, fake_jobs: FakeExecutor, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-documents-0000")
    at = _new_research()
    at.text_area(key="question").input("What do my heat pump reports say?").run()
    at.selectbox(key="source_mix").select("documents").run()
    _button(at, "Start research").click().run()
    assert any("no searchable documents" in e.value for e in at.error)
    assert dash_env.count_runs() == 0


def test_documents_only_run_starts_with_the_chosen_collection_and_no_search_key(
    dash_env: Store, fake_jobs: FakeExecutor, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-documents-0000")
    monkeypatch.setenv("DEEP_RESEARCH_SEARCH", "tavily")  # no TAVILY_API_KEY set
    ingest(dash_env, "field-report.pdf", pdf_bytes(), collection="Heat")
    at = _new_research()
    at.text_area(key="question").input("What do my heat pump reports say?").run()
    at.selectbox(key="source_mix").select("documents").run()
    at.selectbox(key="doc_collection").select("Heat").run()
    # The form does not contradict itself: no web search service listed, no "web searches".
    assert not [m for m in at.multiselect if m.key == "search"]
    assert any("nothing is searched on the web" in c.value for c in at.caption)
    labels = {m.label for m in at.metric}
    assert "Searches of your documents" in labels and "Web searches" not in labels
    _button(at, "Start research").click().run()
    assert not at.error, [e.value for e in at.error]
    [run] = dash_env.list_runs()
    assert run.config["search_providers"] == ["documents"]
    assert run.config["document_collection"] == "Heat"


def test_run_page_sources_tab_shows_the_text_of_document_passages(dash_env: Store) -> None:
    from tests.dashboard_fixtures import finished_run, open_run_page, source

    run_id = finished_run(dash_env)
    passage = replace(source(99), id="s_doc", url="doc://d_1/7", canonical_url="doc://d_1/7",
                      title="Heat Pump Field Report, p. 3", provider="documents",
                      text="The payback time against a gas boiler is eight to twelve years.")
    dash_env.start_step(run_id, "research:t9", kind="research", label="Researching t9")
    dash_env.complete_research_step(run_id, "research:t9", sources=[passage], findings=[],
                                    queries=[], skipped=[])
    at = open_run_page(run_id, tab="Sources")
    assert not at.exception
    shown = [m.value for m in at.markdown]
    assert any("Heat Pump Field Report, p" in m for m in shown)
    assert any("eight to twelve years" in m for m in shown)
    frame = next(df.value for df in at.dataframe if "Domain" in df.value.columns)
    row = frame[frame["Title"] == "Heat Pump Field Report, p. 3"].iloc[0]
    assert row["Domain"] == "your documents" and not isinstance(row["Link"], str)


def test_run_again_keeps_the_documents_an_earlier_run_was_given(
    dash_env: Store, fake_jobs: FakeExecutor, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from research.core.config import build_config
    from research.documents.choice import with_sources

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-documents-0000")
    chosen = ingest(dash_env, "field-report.pdf", pdf_bytes()).document_id or ""
    ingest(dash_env, "notes.md", markdown_bytes())
    config = with_sources(build_config(env={}), "documents", document_ids=[chosen])
    earlier = dash_env.create_run("What do my reports say?", config.model_dump(mode="json"))
    at = _new_research()
    at.query_params["from"] = earlier
    at.run()
    assert at.selectbox(key="source_mix").value == "documents"
    assert any("Reads the 1 document(s)" in c.value for c in at.caption)
    _button(at, "Start research").click().run()
    assert not at.error, [e.value for e in at.error]
    newest = next(r for r in dash_env.list_runs() if r.id != earlier)
    assert newest.config["document_ids"] == [chosen]
    assert newest.config["search_providers"] == ["documents"]


@on_postgresql
def test_on_postgresql_the_documents_pages_work_the_same(
    dash_env: Store, fake_jobs: FakeExecutor, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each check above that lists, searches, deletes or starts from documents, again on one
    PostgreSQL database (its full-text search is the other dialect's); documents, collections
    and runs are removed between them, as each expects a new library."""
    for check in (test_documents_are_listed_with_type_size_pages_and_status,
                  test_search_shows_the_passage_with_its_page,
                  test_delete_asks_first_and_then_removes_the_document,
                  test_run_page_sources_tab_shows_the_text_of_document_passages):
        check(dash_env)
        _empty(dash_env)
    test_documents_only_run_starts_with_the_chosen_collection_and_no_search_key(
        dash_env, fake_jobs, monkeypatch)


def _empty(store: Store) -> None:
    for document in docstore.list_documents(store):
        docstore.delete_document(store, document.id)
    for collection in docstore.list_collections(store):
        docstore.delete_collection(store, collection.name)
    for run in store.list_runs():
        store.delete_run(run.id)
