"""Word export (DOCX) with python-docx: headings, lists, tables, clickable links and citations.

The body is parsed with markdown-it (the same parser the PDF uses), so Word shows what the
Markdown and PDF show. Each citation [n] is an internal link to a bookmark on its Sources
entry; links to gathered pages stay clickable, and a passage of the person's own documents
is quoted under its entry (doc_passages.py). Nothing is ever fetched: images become their alt
text. Text from the web and from models is only ever placed as text (python-docx escapes it
for XML); characters XML cannot hold are dropped rather than failing the export.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from docx import Document
from docx.document import Document as WordDocument
from docx.enum.text import WD_COLOR_INDEX
from docx.opc.constants import RELATIONSHIP_TYPE
from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from docx.oxml.xmlchemy import BaseOxmlElement
from docx.shared import Pt, RGBColor
from docx.text.paragraph import Paragraph
from markdown_it import MarkdownIt
from markdown_it.token import Token

from research.export.doc_passages import is_document, quoted
from research.export.document import APP_NAME, ReportDocument, ReportSource, link_citations
from research.export.markdown import format_date, safe_link_url

_MD = MarkdownIt("commonmark", {"html": False}).enable("table").enable("strikethrough")
_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_CITE_HREF = re.compile(r"^#source-(\d+)$")
LINK_BLUE = RGBColor(0x05, 0x63, 0xC1)


def clean(text: str) -> str:
    """Text XML can hold (control characters dropped)."""
    return _XML_BAD.sub("", text)


def bookmark_name(number: int) -> str:
    return f"source_{number}"


@dataclass
class _Style:
    bold: bool = False
    italic: bool = False
    code: bool = False
    strike: bool = False
    link: str | None = None   # external URL
    anchor: str | None = None  # internal bookmark
    stack: list[str] = field(default_factory=list)


def _hyperlink(paragraph: Paragraph, *, url: str | None, anchor: str | None) -> BaseOxmlElement:
    element = OxmlElement("w:hyperlink")
    if url:
        element.set(qn("r:id"), paragraph.part.relate_to(url, RELATIONSHIP_TYPE.HYPERLINK,
                                                          is_external=True))
    else:
        element.set(qn("w:anchor"), anchor or "")
    paragraph._p.append(element)
    return element


def _link_run(paragraph: Paragraph, text: str, *, url: str | None, anchor: str | None,
              style: _Style) -> None:
    """A run inside a w:hyperlink: python-docx has no public API to create one."""
    element = _hyperlink(paragraph, url=url, anchor=anchor)
    run = OxmlElement("w:r")
    props = OxmlElement("w:rPr")
    for tag, value in (("w:color", "0563C1"), ("w:u", "single")):
        node = OxmlElement(tag)
        node.set(qn("w:val"), value)
        props.append(node)
    for flag, tag in ((style.bold, "w:b"), (style.italic, "w:i")):
        if flag:
            props.append(OxmlElement(tag))
    run.append(props)
    text_node = OxmlElement("w:t")
    text_node.set(qn("xml:space"), "preserve")
    text_node.text = clean(text)
    run.append(text_node)
    element.append(run)


def _add_text(paragraph: Paragraph, text: str, style: _Style) -> None:
    if not text:
        return
    if style.link or style.anchor:
        _link_run(paragraph, text, url=style.link, anchor=style.anchor, style=style)
        return
    run = paragraph.add_run(clean(text))
    run.bold = style.bold or None
    run.italic = style.italic or None
    run.font.strike = style.strike or None
    if style.code:
        run.font.name = "Courier New"
        run.font.highlight_color = WD_COLOR_INDEX.GRAY_25


def _inline(paragraph: Paragraph, children: Sequence[Token]) -> None:
    """Markdown inline tokens -> runs (bold, italic, code, links, citations)."""
    style = _Style()
    for token in children:
        kind = token.type
        if kind == "text":
            _add_text(paragraph, token.content, style)
        elif kind == "code_inline":
            style.code = True
            _add_text(paragraph, token.content, style)
            style.code = False
        elif kind in ("softbreak",):
            _add_text(paragraph, " ", style)
        elif kind == "hardbreak":
            paragraph.add_run().add_break()
        elif kind in ("strong_open", "strong_close"):
            style.bold = kind == "strong_open"
        elif kind in ("em_open", "em_close"):
            style.italic = kind == "em_open"
        elif kind in ("s_open", "s_close"):
            style.strike = kind == "s_open"
        elif kind == "link_open":
            href = str(token.attrGet("href") or "")
            cite = _CITE_HREF.match(href)
            style.anchor = bookmark_name(int(cite.group(1))) if cite else None
            style.link = None if cite else safe_link_url(href)
        elif kind == "link_close":
            style.link = style.anchor = None
        elif kind == "image":
            _add_text(paragraph, token.content or "", style)  # never fetched: alt text only


class _Writer:
    """Walks markdown-it block tokens and adds Word paragraphs and tables."""

    def __init__(self, document: WordDocument) -> None:
        self.doc = document
        self.lists: list[str] = []  # "bullet" / "number" for each open list level
        self.quote = 0

    def paragraph(self, style: str | None = None) -> Paragraph:
        if self.lists:
            kind = "List Bullet" if self.lists[-1] == "bullet" else "List Number"
            level = min(len(self.lists), 3)
            style = kind if level == 1 else f"{kind} {level}"
        elif self.quote:
            style = "Quote"
        return self.doc.add_paragraph(style=style)

    def walk(self, tokens: Sequence[Token]) -> None:
        i = 0
        while i < len(tokens):
            token = tokens[i]
            kind = token.type
            if kind == "heading_open":
                level = min(int(token.tag[1]), 4)
                heading = self.doc.add_heading(level=level)
                _inline(heading, tokens[i + 1].children or [])
                i += 3
                continue
            if kind == "paragraph_open":
                _inline(self.paragraph(), tokens[i + 1].children or [])
                i += 3
                continue
            if kind in ("bullet_list_open", "ordered_list_open"):
                self.lists.append("bullet" if kind.startswith("bullet") else "number")
            elif kind in ("bullet_list_close", "ordered_list_close"):
                self.lists.pop()
            elif kind == "blockquote_open":
                self.quote += 1
            elif kind == "blockquote_close":
                self.quote -= 1
            elif kind in ("fence", "code_block"):
                run = self.paragraph().add_run(clean(token.content.rstrip("\n")))
                run.font.name = "Courier New"
                run.font.size = Pt(9)
            elif kind == "table_open":
                i = self.table(tokens, i)
                continue
            i += 1

    def table(self, tokens: Sequence[Token], start: int) -> int:
        """Add the table starting at tokens[start]; return the index after its end."""
        rows: list[list[Token | None]] = []
        i = start + 1
        while tokens[i].type != "table_close":
            if tokens[i].type == "tr_open":
                rows.append([])
            elif tokens[i].type in ("th_open", "td_open"):
                rows[-1].append(tokens[i + 1] if tokens[i + 1].type == "inline" else None)
            i += 1
        columns = max((len(r) for r in rows), default=0)
        if rows and columns:
            table = self.doc.add_table(rows=len(rows), cols=columns)
            table.style = "Table Grid"
            for r, cells in enumerate(rows):
                for c, inline in enumerate(cells):
                    paragraph = table.cell(r, c).paragraphs[0]
                    _inline(paragraph, inline.children or [] if inline else [])
                    if r == 0:
                        for run in paragraph.runs:
                            run.bold = True
        return i + 1


def _bookmark(paragraph: Paragraph, number: int) -> None:
    start = OxmlElement("w:bookmarkStart")
    start.set(qn("w:id"), str(number))
    start.set(qn("w:name"), bookmark_name(number))
    end = OxmlElement("w:bookmarkEnd")
    end.set(qn("w:id"), str(number))
    paragraph._p.insert(0, start)
    paragraph._p.append(end)


def _document_source(document: WordDocument, source: ReportSource) -> None:
    """A passage of the person's documents: name, page or section, then the passage quoted
    (in Word's Quote style), where a web source has its link."""
    paragraph = document.add_paragraph()
    paragraph.add_run(f"[{source.number}] ")
    paragraph.add_run(clean(source.title))  # "Annual report, p. 12" (cited_title)
    _bookmark(paragraph, source.number)
    passage = quoted(source)
    if passage:
        document.add_paragraph(clean(f"\u201c{passage}\u201d"), style="Quote")


def _source(document: WordDocument, source: ReportSource) -> None:
    if is_document(source):
        _document_source(document, source)
        return
    paragraph = document.add_paragraph()
    paragraph.add_run(f"[{source.number}] ")
    url = safe_link_url(source.url)
    title = source.title or source.url
    if url:
        _link_run(paragraph, title, url=url, anchor=None, style=_Style())
    else:
        paragraph.add_run(clean(title))
    details = ", ".join(part for part in (source.domain, source.published) if part)
    if details:
        paragraph.add_run(clean(f" \u2014 {details}"))
    _bookmark(paragraph, source.number)


def _header(document: WordDocument, doc: ReportDocument) -> None:
    document.add_heading(clean(doc.question), level=0)
    meta = [(doc.label("date"), format_date(doc.created_at))]
    if doc.parameters_line and not doc.method:  # the method section says it in plain words
        meta.append((doc.label("parameters"), doc.parameters_line))
    if doc.verification:
        meta.append((doc.label("verification"), doc.verification))
    for label, value in meta:
        paragraph = document.add_paragraph()
        paragraph.add_run(clean(f"{label}: ")).bold = True
        paragraph.add_run(clean(value))
    if doc.reading_time:
        document.add_paragraph(clean(doc.reading_time))
    if doc.notes:
        document.add_heading(clean(doc.label("caveats")), level=2)
        for note in doc.notes:
            document.add_paragraph(clean(note), style="List Bullet")


def to_docx(doc: ReportDocument) -> bytes:
    """The report as a .docx file's bytes."""
    document = Document()
    properties = document.core_properties
    properties.title = clean(doc.question)[:250]
    properties.author = properties.last_modified_by = APP_NAME  # not python-docx's default
    properties.comments = ""
    _header(document, doc)
    numbers = [s.number for s in doc.sources]
    body = link_citations(doc.body, numbers, lambda n: f"[\\[{n}\\]](#source-{n})")
    _Writer(document).walk(_MD.parse(body))
    document.add_heading(clean(doc.label("sources")), level=1)
    if not doc.sources:
        document.add_paragraph(clean(doc.label("no_sources")))
    for source in doc.sources:
        _source(document, source)
    if doc.method:
        document.add_heading(clean(doc.method_title or "How this report was made"), level=1)
        for line in doc.method_items:
            document.add_paragraph(clean(line), style="List Bullet")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()
