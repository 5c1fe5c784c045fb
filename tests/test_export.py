"""Export: citation clean-up and renumbering, Markdown output, and safe PDF rendering."""

from __future__ import annotations

import io
import re
import urllib.request
from typing import Any

import pytest
from markdown_it import MarkdownIt
from pypdf import PdfReader

from research.core.errors import ResearchError
from research.core.records import Source
from research.export import (
    ReportDocument,
    ReportSource,
    build_document,
    to_html,
    to_markdown,
    to_pdf,
)
from research.export.pdf import render_pdf

SOURCES = [Source(**s) for s in [
    {
        "id": "s-alpha",
        "url": "https://alpha.example.com/a",
        "title": "Alpha study",
        "published": "2024-03-01",
        "subtopic_id": "t1",
    },
    {
        "id": "s-beta",
        "url": "https://www.beta.org/b",
        "title": "Beta report",
        "published": None,
        "subtopic_id": "t1",
    },
    {
        "id": "s-gamma",
        "url": "https://gamma.net/c",
        "title": "Gamma survey",
        "published": "2023-11-20",
        "subtopic_id": "t2",
    },
    {
        "id": "s-delta",
        "url": "https://delta.io/d",
        "title": "Delta notes",
        "published": None,
        "subtopic_id": "t2",
    },
    {
        "id": "s-unused",
        "url": "https://unused.example/u",
        "title": "Never cited",
        "published": None,
        "subtopic_id": "t3",
    },
]]
NUMBERING = {
    1: "s-alpha",
    2: "s-beta",
    3: "s-gamma",
    4: "s-delta",
    5: "s-unused",
    7: "s-missing",
}


def make(draft: str, **kwargs: Any) -> ReportDocument:
    args: dict[str, Any] = {
        "run_id": "run-1",
        "question": "How fast are widgets getting cheaper?",
        "created_at": "2024-05-01T14:03:00+00:00",
        "parameters_line": "breadth 3 · depth 2 · engine built-in",
        "draft": draft,
        "numbering": NUMBERING,
        "sources": SOURCES,
    }
    args.update(kwargs)
    return build_document(**args)


def citations(body: str) -> list[int]:
    return [int(n) for n in re.findall(r"\[(\d+)\]", body)]


# --- build_document -------------------------------------------------------------------------------


def test_citations_are_renumbered_by_first_appearance() -> None:
    doc = make("First [3]. Then [1]. Again [3] and [4].")
    assert doc.body.strip() == "First [1]. Then [2]. Again [1] and [3]."
    assert [(s.number, s.source_id) for s in doc.sources] == [
        (1, "s-gamma"),
        (2, "s-alpha"),
        (3, "s-delta"),
    ]


def test_grouped_adjacent_and_range_citations_are_split_and_renumbered() -> None:
    doc = make("A [2, 4]. B [3][1]. C [1-3]. D [1; 4].")
    assert doc.body.strip() == "A [1][2]. B [3][4]. C [1][3][4]. D [2][4]."
    assert [s.source_id for s in doc.sources] == [
        "s-beta",
        "s-delta",
        "s-gamma",
        "s-alpha",
    ]


def test_invented_citations_never_survive() -> None:
    doc = make("Real [1]. Invented [99]. Unknown source id [7]. Mixed [1, 42].")
    assert doc.body.strip() == "Real [1]. Invented. Unknown source id. Mixed [1]."
    assert "99" not in doc.body and "42" not in doc.body
    assert [s.source_id for s in doc.sources] == ["s-alpha"]


def test_numbering_read_back_from_json_with_string_keys_works() -> None:
    doc = make("A [2] B [9].", numbering={"2": "s-gamma", "9": "nope"})
    assert doc.body.strip() == "A [1] B."
    assert [s.source_id for s in doc.sources] == ["s-gamma"]


def test_only_cited_sources_are_listed() -> None:
    doc = make("Only this [2].")
    assert [s.source_id for s in doc.sources] == ["s-beta"]
    source = doc.sources[0]
    assert source == ReportSource(
        1, "s-beta", "Beta report", "https://www.beta.org/b", "beta.org", None, "t1",
        kind="unknown",  # a .org address nobody recognises: not guessed (research.untrusted.credibility)
    )


def test_links_to_pages_not_gathered_are_removed_keeping_their_text() -> None:
    draft = (
        "See [the study](https://evil.example.com/fake) and [Alpha](https://alpha.example.com/a/) [1].\n"
        "Also https://made-up.example.org/page, <https://made-up.example.org/x> and https://gamma.net/c [3].\n"
        "![chart](https://evil.example.com/pixel.png) [click](javascript:alert(1))\n"
        "[1]: https://evil.example.com/hijack\n"
    )
    doc = make(draft)
    assert "evil.example.com" not in doc.body
    assert "made-up" not in doc.body
    assert "javascript" not in doc.body
    assert "See the study and [Alpha](https://alpha.example.com/a/) [1]." in doc.body
    assert "https://gamma.net/c [2]" in doc.body
    assert "chart click" in doc.body


def test_model_written_reference_sections_are_removed() -> None:
    draft = (
        "## Findings\nWidgets fell 20% [1].\n\n## References\n1. Alpha study https://alpha.example.com/a\n"
        "2. Invented https://fake.example/x [9]\n"
    )
    doc = make(draft)
    assert "References" not in doc.body
    assert "fake.example" not in doc.body
    assert doc.body.strip() == "## Findings\nWidgets fell 20% [1]."


def test_reference_section_in_the_middle_ends_at_the_next_heading() -> None:
    doc = make("# Report\nText [2].\n### Sources:\n- whatever [1]\n## Outlook\nMore [3].\n")
    assert "whatever" not in doc.body
    assert "## Outlook\nMore [2]." in doc.body
    assert [s.source_id for s in doc.sources] == ["s-beta", "s-gamma"]


def test_bold_label_references_at_the_end_are_removed() -> None:
    doc = make("Text [1].\n\n**References:**\n[1] Alpha\n[2] Beta\n")
    assert doc.body.strip() == "Text [1]."
    assert len(doc.sources) == 1


def test_citations_inside_code_are_left_alone() -> None:
    doc = make("Claim [4].\n\n```\nlist[1]\n```\n\nUse `x[2]` here.")
    assert "list[1]" in doc.body and "`x[2]`" in doc.body
    assert [s.source_id for s in doc.sources] == ["s-delta"]


# --- Markdown -------------------------------------------------------------------------------------


def test_markdown_has_header_linked_citations_and_sources() -> None:
    doc = make(
        "Widgets got cheaper [2] and faster [1].",
        notes=("Subtopic Pricing could not be researched",),
    )
    text = to_markdown(doc)
    assert text.startswith("# How fast are widgets getting cheaper?")
    assert "2024-05-01 14:03 UTC" in text
    assert "breadth 3 · depth 2" in text
    assert "**Caveats**" in text and "- Subtopic Pricing could not be researched" in text
    assert "cheaper [[1]](#source-1) and faster [[2]](#source-2)." in text
    sources = text.split("## Sources", 1)[1]
    assert '1. <a id="source-1"></a>[Beta report](https://www.beta.org/b) — beta.org' in sources
    assert (
        '2. <a id="source-2"></a>[Alpha study](https://alpha.example.com/a) — alpha.example.com, 2024-03-01'
        in sources
    )
    rendered = MarkdownIt("commonmark").render(text)
    assert '<a href="#source-1">[1]</a>' in rendered
    assert '<a href="https://www.beta.org/b">Beta report</a>' in rendered


def test_markdown_escapes_injection_in_titles_question_and_body_html() -> None:
    evil = [
        Source(**{
            "id": "s-alpha",
            "url": "https://alpha.example.com/a) ![x](https://evil.example/p.png",
            "title": "Nice <img src=x onerror=alert(1)> [click](javascript:alert(1)) ![p](https://evil.example/t.png) **b**",
            "published": None,
        })
    ]
    doc = make(
        "Claim [1].\n\n<script>alert(1)</script>\n",
        sources=evil,
        question="Why <b>bold</b>?",
    )
    rendered = MarkdownIt("commonmark").render(to_markdown(doc))
    assert "<img" not in rendered and "<script" not in rendered and "<b>" not in rendered
    assert "javascript:" not in re.findall(r'href="([^"]*)"', rendered)[0]
    hrefs = re.findall(r'href="([^"]*)"', rendered)
    assert all(h.startswith(("#source-", "https://alpha.example.com/a")) for h in hrefs), hrefs
    assert "&lt;img src=x onerror=alert(1)&gt;" in rendered
    assert "<strong>b</strong>" not in rendered


# --- PDF ------------------------------------------------------------------------------------------

BODY = """# Widget prices

## Findings

Widgets became cheaper every year [1], while quality rose [2, 3].

| Year | Price |
|------|-------|
| 2022 | 41.50 |
| 2023 | 37.25 |

### Outlook

Analysts disagree [3].
"""


def pdf_text(pdf: bytes) -> str:
    return "\n".join(page.extract_text() or "" for page in PdfReader(io.BytesIO(pdf)).pages)


def test_pdf_contains_cover_body_table_citations_sources_and_page_numbers() -> None:
    doc = make(BODY, notes=("Subtopic Pricing could not be researched",))
    pdf = to_pdf(doc)
    assert pdf.startswith(b"%PDF")
    text = pdf_text(pdf)
    for expected in (
        "How fast are widgets getting cheaper?",
        "2024-05-01 14:03 UTC",
        "breadth 3 · depth 2",
        "Subtopic Pricing could not be researched",
        "Widget prices",
        "Findings",
        "Outlook",
        "37.25",
        "[1]",
        "[2][3]",
        "Sources",
        "Alpha study",
        "Gamma survey",
        "gamma.net",
        "Page 1 of",
    ):
        assert expected in text, expected


def test_pdf_citations_are_internal_links_to_the_sources_list() -> None:
    pdf = to_pdf(make(BODY))
    internal, external = [], []
    for page in PdfReader(io.BytesIO(pdf)).pages:
        for annot in page.get("/Annots") or []:
            obj = annot.get_object()
            if "/Dest" in obj:
                internal.append(str(obj["/Dest"]))
            elif "/A" in obj and "/D" in obj["/A"]:
                internal.append(str(obj["/A"]["/D"]))
            elif "/A" in obj:
                external.append(str(obj["/A"].get("/URI")))
    assert internal.count("source-3") == 2
    assert {"source-1", "source-2", "source-3"} <= set(internal)
    assert set(external) == {s.url for s in SOURCES[:3]}


HOSTILE = """Claim [1].

<script>document.write('pwned')</script>

<img src="http://127.0.0.1:9/track.png">

<img src="file:///etc/passwd">

<link rel=stylesheet href="http://127.0.0.1:9/x.css">

<style>@import url(file:///etc/passwd); body { background: url(http://127.0.0.1:9/bg.png) }</style>

<div style="background-image: url(file:///etc/passwd)">styled</div>

![local](file:///etc/passwd) ![remote](http://127.0.0.1:9/i.png) ![data](data:image/png;base64,iVBORw0KGgo=)

<iframe src="file:///etc/passwd"></iframe>
"""


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    opened: list[str] = []

    def refuse(self: Any, url: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(getattr(url, "full_url", url)))
        raise AssertionError("network or file access during export")

    monkeypatch.setattr(urllib.request.OpenerDirector, "open", refuse)
    return opened


def test_hostile_body_renders_with_no_successful_fetch(no_network: list[str]) -> None:
    doc = ReportDocument(
        run_id="r",
        question="Hostile?",
        created_at="2024-01-01",
        parameters_line="p",
        body=HOSTILE,
        sources=(
            ReportSource(
                1,
                "s",
                "Alpha",
                "https://alpha.example.com/a",
                "alpha.example.com",
                None,
                None,
            ),
        ),
    )
    html = to_html(doc)
    body = html.split("</style>", 1)[1]  # our own stylesheet ends here
    tags = re.findall(r"<([a-z0-9]+)([^>]*)>", body)
    assert {name for name, _ in tags} <= {
        "body",
        "div",
        "h1",
        "h2",
        "p",
        "a",
        "section",
        "ol",
        "li",
        "span",
        "html",
    }
    assert not any("style" in attrs or "src" in attrs for _, attrs in tags)
    from research.export import RefusingURLFetcher  # loads WeasyPrint: here, not at collection

    fetcher = RefusingURLFetcher()
    pdf = to_pdf(doc, fetcher=fetcher)
    assert fetcher.served == 0
    assert no_network == []
    text = pdf_text(pdf)
    assert "root:" not in text and "/bin/" not in text  # no /etc/passwd content
    assert "Claim [1]" in text


def test_fetcher_refuses_everything_even_if_markup_reached_weasyprint(
    no_network: list[str],
) -> None:
    raw = (
        "<html><head><link rel=stylesheet href='file:///etc/passwd'>"
        "<style>@import url('http://127.0.0.1:9/a.css'); p { background: url(file:///etc/hostname) }</style>"
        "</head><body><p>Hello</p><img src='file:///etc/passwd'><img src='http://127.0.0.1:9/t.png'>"
        "<img src='data:image/png;base64,iVBORw0KGgo='></body></html>"
    )
    from research.export import RefusingURLFetcher  # loads WeasyPrint: here, not at collection

    fetcher = RefusingURLFetcher()
    pdf = render_pdf(raw, fetcher)
    assert fetcher.attempts, "the hostile markup should have tried to load something"
    assert any(url.startswith("file:") for url in fetcher.attempts)
    assert fetcher.served == 0
    assert no_network == []
    assert "root:" not in pdf_text(pdf)


def test_pdf_failure_is_a_research_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import research.export.pdf as pdf_module

    # WeasyPrint runs in a child process: make that child die the way a crashing library would.
    monkeypatch.setattr(pdf_module, "RENDER_TARGET", "tests.sandbox_targets:crash")
    with pytest.raises(ResearchError, match=r"^Could not create the PDF: the layout engine "
                                            r"stopped unexpectedly \(exit code 3\)"):
        to_pdf(make("Text [1]."))
