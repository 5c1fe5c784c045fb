"""A citation of one's own documents opens its passage, as a web citation opens its page.

A report may cite passages of the person's uploaded documents (`doc://` sources). On the Run
page their [n] links to the passage shown below the Sources list (document, page or section,
the passage as the run read it, made inert); in the exports their reference entry gives the
document's name, the page or section and the quoted passage instead of a bare `doc://`
address, and PDF, Word and Markdown citations jump to it. The run is written straight into
the store (no pipeline), and every export is read back with its own parser.
"""

from __future__ import annotations

import csv
import io
import os
import re
from typing import Any

import bibtexparser
import docx
import pypdf
import pytest
import rispy
from bibtexparser.middlewares import LatexDecodingMiddleware

from research.core.records import Query, Source, Subtopic, Verdict
from research.documents.passages import OCR_SECTION, cited_title
from research.export.doc_passages import name_and_place
from research.export.document import ReportSource
from research.export.docx import bookmark_name
from research.export.formats import export_run
from storage import Store
from storage.conversations import add_turn
from tests.browser_fixtures import SharedDashboard
from tests.browser_helpers import CHROMIUM, wait_idle
from tests.browser_pages import MARK, PHONE, VIEWPORT, assert_clean, audit, main, shot, sync_api, watched_page
from tests.dashboard_fixtures import dash_env_fixture, open_run_page, running_run  # noqa: F401

DOC_TITLE = "Heat Pump Field Report"
PASSAGE = (f"In the {MARK} field trial the heat pumps paid back within seven years "
           "<img src=x onerror=alert(1)> [click](javascript:alert(2)) against a gas boiler.")
LATER_PASSAGE = "Maintenance cost about 150 euros a year in the field trial."
DRAFT = """## Executive summary

Heat pumps are spreading fast [1]. In the field trial they paid back within seven years [2].

## Key findings

- Installers are scarce [1][2].

## Details

""" + "\n\n".join(  # a report long enough that its Sources lie screens below its citations
    f"Finding {i}: the trial's households kept their homes warm through the winter, and "
    "their bills, their installers' visits and their comfort were recorded each month."
    for i in range(1, 13)) + "\n"


def seed_run(store: Store, question: str = "Do heat pumps pay back?", *,
             finish: bool = True) -> str:
    """A completed run whose report cites a web page [1] and a passage of one's own PDF [2]
    (`finish=False`: a run still working, with that report as its draft so far)."""
    run_id = running_run(store, question)
    store.save_plan(run_id, [Subtopic("t1", "Payback", description="How fast they pay back.",
                                      questions=("How long is the payback?",))])
    web = "https://news.example/heat-pumps"
    passage_url = "doc://d0c5/17"
    sources = [
        Source(id="s0001", url=web, canonical_url=web, title="Heat pumps spread", text="",
               published="2024-06-01", relevance=0.8, subtopic_id="t1", provider="web",
               query="q", round=1, fetched_at="2024-07-01T00:00:00Z"),
        Source(id="s0002", url=passage_url, canonical_url=passage_url,
               title=cited_title(DOC_TITLE, 3, ""), text=PASSAGE, relevance=0.9,
               subtopic_id="t1", provider="documents", query="q", round=1,
               fetched_at="2024-07-01T00:00:00Z"),
        Source(id="s0003", url="doc://d0c5/18", canonical_url="doc://d0c5/18",
               title=cited_title(DOC_TITLE, 4, ""), text=LATER_PASSAGE, relevance=0.7,
               subtopic_id="t1", provider="documents", query="q", round=1,
               fetched_at="2024-07-01T00:00:00Z"),  # gathered, not cited by the report
    ]
    store.start_step(run_id, "research:t1", kind="research", label="Researching payback")
    store.complete_research_step(run_id, "research:t1", sources=sources,
                                 queries=[Query("t1", "payback", "documents", 2)])
    store.save_draft(run_id, 1, "draft", DRAFT, {1: "s0001", 2: "s0002"}, 30)
    if not finish:
        return run_id
    store.save_report(run_id, "(the Markdown export)",
                      meta={"draft_version": 1, "cited_sources": 2})
    store.set_citations(run_id, {"s0001": ["Executive summary"], "s0002": ["Executive summary"]})
    store.update_totals(run_id, sources=2, cost_usd=0.01)
    store.set_run_status(run_id, "completed")
    return run_id


# -- the passage's place, read back from its title ------------------------------------------

@pytest.mark.parametrize(("page", "section", "place"), [
    (12, "", "p. 12"),
    (3, OCR_SECTION, f"p. 3, {OCR_SECTION}"),
    (None, "Costs, p. 4 and more", "section \u201cCosts, p. 4 and more\u201d"),
    (None, "", ""),
])
def test_a_document_citation_names_the_document_and_where_the_passage_is(
        page: int | None, section: str, place: str) -> None:
    title = "Annual report, p. 9 draft"  # a title that itself looks like a place
    source = ReportSource(number=1, source_id="s1", title=cited_title(title, page, section),
                          url="doc://d/1", domain="", published=None, subtopic=None)
    assert name_and_place(source) == (title, place)


# -- the Run page ---------------------------------------------------------------------------

def test_run_page_links_a_document_citation_to_its_passage_shown_inert(dash_env: Store) -> None:
    run_id = seed_run(dash_env)
    at = open_run_page(run_id)
    assert not at.exception
    texts = [m.value for m in at.markdown]
    report = next(t for t in texts if "Heat pumps are spreading fast" in t)
    assert "[[1]](https://news.example/heat-pumps)" in report  # a web citation opens its page
    assert "seven years [[2]](#source-2)" in report  # ... a document citation its passage
    sources = next(t for t in texts if "Heat Pump Field Report" in t and "1\\." in t)
    assert "](#source-2)" in sources  # the Sources list's entry leads there too
    anchors = [h.proto.body for h in at.get("html")]
    assert sum('id="source-2"' in a for a in anchors) == 1
    assert all(MARK not in a for a in anchors)  # no text from the file in any HTML
    shown = next(t for t in texts if MARK in t and "seven years" in t and "[[" not in t)
    assert "**\\[2\\] Heat Pump Field Report** · p. 3" in shown
    assert "<img" not in shown.replace("\\<img", "")  # escaped: shown as text, never HTML
    assert "](javascript" not in shown and "\\[click\\]" in shown


def test_an_answer_citing_a_passage_the_report_does_not_cite_shows_it_too(
        dash_env: Store) -> None:
    run_id = seed_run(dash_env)
    add_turn(dash_env, run_id, person=None, question="What does upkeep cost?",
             answer="Upkeep is about 150 euros a year [3], and payback is seven years [2].",
             status="answered", details={"check": {"line": "1 of 1 claims checked."}, "sources": [
                 {"number": 2, "source_id": "s0002", "title": cited_title(DOC_TITLE, 3, ""),
                  "url": "doc://d0c5/17"},
                 {"number": 3, "source_id": "s0003", "title": cited_title(DOC_TITLE, 4, ""),
                  "url": "doc://d0c5/18"}]})
    at = open_run_page(run_id)
    assert not at.exception
    texts = [m.value for m in at.markdown]
    answer = next(t for t in texts if "Upkeep is about" in t)
    assert "[[3]](#source-3)" in answer and "[[2]](#source-2)" in answer
    anchors = [h.proto.body for h in at.get("html")]
    for n in (2, 3):  # [2] leads to the report's passage, [3] to the one shown under the answer
        assert sum(f'id="source-{n}"' in a for a in anchors) == 1, n
    assert any("150 euros a year" in t and "p. 4" in t for t in texts)

    markdown = export_run(dash_env, run_id, "md").decode()  # the appendix's [3] quotes it too
    assert re.search(r'^3\. <a id="source-3"></a>.*p\. 4\n +> .*150 euros a year', markdown,
                     re.MULTILINE), markdown


def test_a_draft_in_progress_links_its_document_citation_to_the_passage(dash_env: Store) -> None:
    run_id = seed_run(dash_env, finish=False)
    at = open_run_page(run_id, "Report")
    assert not at.exception
    texts = [m.value for m in at.markdown]
    assert any("seven years [[2]](#source-2)" in t for t in texts)
    assert sum('id="source-2"' in h.proto.body for h in at.get("html")) == 1
    assert any(MARK in t and "**\\[2\\] Heat Pump Field Report**" in t for t in texts)


# -- the exports ----------------------------------------------------------------------------

def test_exports_give_a_document_citation_its_name_page_and_passage(dash_env: Store) -> None:
    run_id = seed_run(dash_env)
    readable = "paid back within seven years"

    markdown = export_run(dash_env, run_id, "md").decode()
    assert "doc://" not in markdown
    assert "seven years [[2]](#source-2)" in markdown
    entry = re.search(r'^2\. <a id="source-2"></a>(.*)\n +> (.*)$', markdown, re.MULTILINE)
    assert entry, markdown
    assert entry.group(1) == f"{DOC_TITLE}, p. 3" and readable in entry.group(2)
    assert "\\<img" in entry.group(2)  # the passage is text, not HTML

    pdf = pypdf.PdfReader(io.BytesIO(export_run(dash_env, run_id, "pdf")))
    text = " ".join(" ".join((page.extract_text() or "").split()) for page in pdf.pages)
    assert "doc://" not in text
    assert f"[2]{DOC_TITLE}, p. 3" in text.replace("[2] ", "[2]")
    assert readable in text and "<img src=x onerror=alert(1)>" in text
    targets = []
    for page in pdf.pages:
        for annot in page.get("/Annots") or []:
            obj = annot.get_object()
            action = obj.get("/A") or {}
            targets.append(str(obj.get("/Dest") or action.get("/D") or action.get("/URI")))
    assert "source-2" in targets  # the citation jumps to the entry with the passage

    word = docx.Document(io.BytesIO(export_run(dash_env, run_id, "docx")))
    paragraphs = word.paragraphs
    cited = next(p for p in paragraphs if p.text.startswith("Heat pumps are spreading"))
    assert ("[2]", bookmark_name(2)) in [(h.text, h.fragment) for h in cited.hyperlinks]
    at = next(i for i, p in enumerate(paragraphs) if p.text.startswith("[2] "))
    assert paragraphs[at].text == f"[2] {DOC_TITLE}, p. 3"
    assert f'w:name="{bookmark_name(2)}"' in paragraphs[at]._p.xml
    quote = paragraphs[at + 1]
    assert quote.style.name == "Quote" and readable in quote.text
    assert "doc://" not in word.element.xml

    library = bibtexparser.parse_string(export_run(dash_env, run_id, "bib").decode(),
                                        append_middleware=[LatexDecodingMiddleware()])
    assert not library.failed_blocks
    fields = library.entries[1].fields_dict
    assert fields["title"].value == DOC_TITLE and fields["pages"].value == "3"
    assert readable in fields["annote"].value and "url" not in fields
    assert fields["note"].value == "Cited as [2], p. 3"

    records = rispy.loads(export_run(dash_env, run_id, "ris").decode())
    document = records[1]
    assert document["title"] == DOC_TITLE and document["start_page"] == "3"
    assert document["notes"][0] == "Cited as [2], p. 3" and readable in document["notes"][1]
    assert "urls" not in document

    dash_env.save_verifications(run_id, [Verdict(
        "c1", "They paid back within seven years.", ("s0002",), "SUPPORTED", status="supported",
        passage="paid back within seven years", section="Executive summary")])
    [row] = list(csv.DictReader(io.StringIO(export_run(dash_env, run_id, "csv").decode("utf-8-sig"))))
    assert row["Source"] == f"[2] {DOC_TITLE}, p. 3" and row["Source URL"] == ""


# -- in the browser: click [2], see the passage, on a laptop and a phone -------------------

@pytest.mark.browser
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is missing")
def test_clicking_a_document_citation_shows_its_passage_in_the_browser(
        browser: Any, shared_dashboard: SharedDashboard) -> None:
    store = Store(shared_dashboard.db)
    try:
        run_id = seed_run(store, question=f"Do heat pumps pay back? {MARK}")
    finally:
        store.close()
    server = shared_dashboard.server
    with watched_page(browser, server, "document-citation") as (page, watch):
        page.goto(f"{server.url}/run?run={run_id}")  # once: the phone is the same page resized
        content = main(page)
        passage = content.get_by_text(re.compile(f"the {MARK} field trial"))
        sync_api.expect(passage).to_have_count(1)
        for size in (VIEWPORT, PHONE):
            page.set_viewport_size(size)
            citation = content.get_by_role("link", name="[2]", exact=True).first
            citation.scroll_into_view_if_needed()
            wait_idle(page)
            sync_api.expect(passage).not_to_be_in_viewport()  # far below the report's [2]
            citation.click()
            sync_api.expect(passage).to_be_in_viewport()
            sync_api.expect(content.get_by_text(f"[2] {DOC_TITLE}")).to_be_in_viewport()
            assert page.evaluate("() => location.hash") == "#source-2"
            shot(page, f"document-citation-{size['width']}")
            audit(page, watch, f"run page at {size['width']} px")
        assert_clean(watch)
