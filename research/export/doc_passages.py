"""Citations of the person's own documents: the passage a report cites, in every output.

A web source is opened by its address. A passage of one's own documents (a `doc://` source,
see `research.search.documents`) has no page anywhere to open, so every output carries the
passage itself where its citation leads: the Run page shows it below the Sources list at the
citation's anchor (`#source-n`), and each export's reference entry gives the document's name,
the page or section and the quoted passage (PDF, Word and Markdown citations link to that
entry; BibTeX and RIS keep the passage as a note). A bare `doc://` address, which means
nothing to a reader, is never written out.

The passage is the text as the run read it (kept with the run's sources, so a document
deleted from the library later changes nothing here). The source's title was written by
`research.documents.passages.cited_title` ("Title, p. 12"); `name_and_place` splits it back.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

from research.export.document import ReportDocument, ReportSource
from storage import Store
from storage import documents as docstore

SCHEME = "doc://"  # research.search.documents.SCHEME (not imported: the export stays light)
QUOTE_CHARS = 3000  # a passage is at most ~350 words; this only bounds a freak one
# The end of a title written by cited_title: ", p. 12", ", p. 3, read by OCR", ", section “x”".
_PLACE = re.compile(r",\s(?P<place>p\.\s\d+(?:,\sread by OCR)?|section\s\u201c[^\u201d]*\u201d)$")


def is_document(source: ReportSource) -> bool:
    """A passage of the person's own documents (not a web page)."""
    return source.url.startswith(SCHEME)


def anchor(source: ReportSource) -> str | None:
    """Where a citation of a document passage leads on the same page or in the same file:
    its entry in the Sources list, which shows the passage. None for a web source."""
    return f"#source-{source.number}" if is_document(source) else None


def name_and_place(source: ReportSource) -> tuple[str, str]:
    """("Annual report", "p. 12"): the document's name and where in it the passage is."""
    title = " ".join((source.title or "").split())
    found = _PLACE.search(title)
    if found is None:
        return title or "Your document", ""
    return title[: found.start()] or "Your document", found.group("place")


def quoted(source: ReportSource, limit: int = QUOTE_CHARS) -> str:
    """The passage on one line, bounded, for a reference entry ("" when there is none)."""
    text = " ".join(source.passage.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "\u2026"


def with_passages(doc: ReportDocument, passages: Mapping[str, str]) -> ReportDocument:
    """`doc` whose document sources carry their passage (`passages`: source id -> text)."""
    sources = tuple(
        dataclasses.replace(s, passage=passages.get(s.source_id, s.passage))
        if is_document(s) else s for s in doc.sources)
    return dataclasses.replace(doc, sources=sources)


def attach_passages(store: Store, doc: ReportDocument) -> ReportDocument:
    """`doc` with the passages its document citations cite, read from the run's sources
    (one query, and only when the report cites a document)."""
    if not any(is_document(s) for s in doc.sources):
        return doc
    return with_passages(doc, {p.id: p.text for p in docstore.run_passages(store, doc.run_id)})
