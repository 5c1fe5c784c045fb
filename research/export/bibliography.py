"""The cited sources as a bibliography: BibTeX (bibtexparser v2) and RIS (rispy).

People move a report's sources into Zotero, Mendeley, EndNote or a LaTeX paper; both files
list exactly the sources the report cites, in citation order, with title, date, URL, the site,
and for papers the DOI (from a doi.org link, a DOI in the URL, or arXiv's own DOI for an arXiv
paper). Authors are not gathered by the search step yet, so no author field is invented.
A passage of the person's own documents is listed by the document's name with its page or
section and the cited passage in a note (BibTeX `annote`, an RIS `N1`), never a `doc://` address.

Titles come from the web: BibTeX text is LaTeX-encoded by pylatexenc (so braces, %, & and
backslashes cannot end a field or run LaTeX), URLs are percent-encoded with no braces or
spaces, and RIS values are flattened to one line (a newline could start a new tag).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

import rispy
from bibtexparser.entrypoint import write_string
from bibtexparser.library import Library
from bibtexparser.model import Entry, Field
from pylatexenc.latexencode import unicode_to_latex

from research.export.doc_passages import is_document, name_and_place, quoted
from research.export.document import ReportDocument, ReportSource
from research.export.markdown import safe_link_url

PAPER_PROVIDERS = ("arxiv", "semanticscholar")
_DOI = re.compile(r"\b(10\.\d{4,9}/[-._;()/:A-Za-z0-9]+)")
_ARXIV = re.compile(r"arxiv\.org/(?:abs|pdf)/([a-z\-]+/\d{7}|\d{4}\.\d{4,5})", re.IGNORECASE)
_DATE = re.compile(r"^(\d{4})(?:-(\d{2}))?(?:-(\d{2}))?")
_KEY_WORD = re.compile(r"[A-Za-z0-9]+")


@dataclass(frozen=True)
class Reference:
    """One cited source as a bibliography needs it (plain text; each format encodes it)."""
    number: int
    key: str
    title: str
    url: str
    site: str
    year: str | None
    month: str | None
    date: str | None
    doi: str | None
    paper: bool
    document: bool = False  # a passage of the person's documents (no address, no site)
    place: str = ""    # where in the document: "p. 12" or "section “Costs”"
    page: str | None = None
    passage: str = ""  # ... and the passage the report cites, quoted in a note


def find_doi(url: str) -> str | None:
    """A DOI named by the URL: doi.org/10.x/y, a DOI in the path, or an arXiv paper's DOI."""
    decoded = unquote(url)
    arxiv = _ARXIV.search(decoded)
    if arxiv:
        return f"10.48550/arXiv.{arxiv.group(1)}"
    found = _DOI.search(urlsplit(decoded).path + " " + urlsplit(decoded).query)
    return found.group(1).rstrip(".;:)") if found else None


def _key(source: ReportSource, year: str | None) -> str:
    word = next((w.lower() for w in _KEY_WORD.findall(source.title) if len(w) > 3), "source")
    return f"ref{source.number}_{word[:20]}{year or ''}"


def document_reference(source: ReportSource) -> Reference:
    """A passage of the person's documents: the document's name as the title, the page or
    section, and the cited passage (there is no address: `doc://` means nothing outside)."""
    name, place = name_and_place(source)
    page = re.match(r"p\. (\d+)", place)
    return Reference(number=source.number, key=_key(source, None), title=name, url="",
                     site="", year=None, month=None, date=None, doi=None, paper=False,
                     document=True, place=place, page=page.group(1) if page else None, passage=quoted(source))


def reference(source: ReportSource) -> Reference:
    if is_document(source):
        return document_reference(source)
    date = _DATE.match(source.published or "")
    doi = find_doi(source.url)
    return Reference(
        number=source.number, key=_key(source, date.group(1) if date else None),
        title=" ".join((source.title or source.url).split()),
        url=safe_link_url(source.url) or "", site=source.domain,
        year=date.group(1) if date else None, month=date.group(2) if date else None,
        date=date.group(0) if date else None, doi=doi,
        paper=bool(doi) or source.provider in PAPER_PROVIDERS,
    )


def references(doc: ReportDocument) -> list[Reference]:
    """The report's cited sources, in citation order."""
    return [reference(source) for source in doc.sources]


def _latex(text: str) -> str:
    return str(unicode_to_latex(" ".join(text.split()), non_ascii_only=False))


def _bibtex_entry(ref: Reference) -> Entry:
    fields = [Field("title", _latex(ref.title))]
    if ref.paper and ref.site:
        fields.append(Field("journal" if ref.doi and "arxiv" not in ref.site else "publisher",
                            _latex(ref.site)))
    elif ref.site:
        fields.append(Field("howpublished", _latex(ref.site)))
    if ref.year:
        fields.append(Field("year", ref.year))
    if ref.month:
        fields.append(Field("month", str(int(ref.month))))
    if ref.date:
        fields.append(Field("date", ref.date))
    if ref.doi:
        fields.append(Field("doi", ref.doi))
    if ref.url:
        fields.append(Field("url", ref.url))
    if ref.page:
        fields.append(Field("pages", ref.page))
    fields.append(Field("note", _latex(_cited_as(ref))))
    if ref.passage:
        fields.append(Field("annote", _latex(f"\u201c{ref.passage}\u201d")))
    return Entry("article" if ref.paper else "misc", ref.key, fields)


def _cited_as(ref: Reference) -> str:
    """"Cited as [3]", and for a document passage where it is ("Cited as [3], p. 12")."""
    return f"Cited as [{ref.number}]" + (f", {ref.place}" if ref.place else "")


def to_bibtex(doc: ReportDocument) -> str:
    """The cited sources as a BibTeX file."""
    library = Library()
    for ref in references(doc):
        library.add(_bibtex_entry(ref))
    return str(write_string(library))


class _RisWriter(rispy.RisWriter):  # type: ignore[misc]  # rispy has no type hints
    """rispy's writer without its "1." counter line before each record."""

    def set_header(self, count: int) -> str:
        return ""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _ris_record(ref: Reference) -> dict[str, object]:
    record: dict[str, object] = {
        "type_of_reference": "JOUR" if ref.paper else "GEN" if ref.document else "ELEC",
        "title": _one_line(ref.title),
        "notes": [_one_line(_cited_as(ref))]
        + ([_one_line(f"\u201c{ref.passage}\u201d")] if ref.passage else []),
    }
    if ref.page:
        record["start_page"] = ref.page
    if ref.url:
        record["urls"] = [ref.url]
    if ref.site:
        record["publisher"] = _one_line(ref.site)
    if ref.year:
        record["year"] = ref.year
    if ref.date:
        record["date"] = ref.date.replace("-", "/")
    if ref.doi:
        record["doi"] = ref.doi
    return record


def to_ris(doc: ReportDocument) -> str:
    """The cited sources as an RIS file (Zotero, Mendeley, EndNote)."""
    return str(rispy.dumps([_ris_record(ref) for ref in references(doc)],
                           implementation=_RisWriter))
