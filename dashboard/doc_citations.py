"""On the Run page, a citation of the person's own documents opens its passage.

A web citation [n] links to its page. A passage of one's documents has no page to open, so
its [n] (and its title in the Sources list) links to `#source-n`, an anchor placed here,
below the Sources list: the document's name, the page or section, and the passage as the run
read it. The report is one st.markdown, so a link to an anchor is what works inside it (a
Streamlit link starting with `#` stays on the page; a dialog or popover cannot be opened from
Markdown text), on a laptop and a phone alike.

The anchor is a fixed, empty element carrying only our own id; the passage's text (untrusted:
it came from a file) goes through `views.md_text`, never into HTML.
"""

from __future__ import annotations

import dataclasses

import streamlit as st

from dashboard import views
from research.export.doc_passages import attach_passages, is_document, name_and_place, quoted
from research.export.document import ReportDocument, ReportSource
from storage import Store

HEADING = "Passages cited from your documents"
# Room for Streamlit's header above the passage a citation jumps to.
_ANCHOR = '<div id="source-{n}" style="scroll-margin-top: 4.5rem"></div>'


def document_sources(doc: ReportDocument) -> list[ReportSource]:
    return [s for s in doc.sources if is_document(s)]


def passage_markdown(source: ReportSource) -> str:
    """'**[3] Annual report** · p. 12' and the passage quoted below it, made inert."""
    name, place = name_and_place(source)
    head = f"**\\[{source.number}\\] {views.md_text(name)}**"
    if place:
        head += f" · {views.md_text(place)}"
    passage = quoted(source)
    body = (f"> \u201c{views.md_text(passage)}\u201d" if passage
            else "_The text of this passage was not kept with the run._")
    return f"{head}  \n:gray[From your documents]\n\n{body}"


def cited_passages(doc: ReportDocument) -> None:
    """Each cited passage of the person's documents at its citation's anchor."""
    cited = document_sources(doc)
    if not cited:
        return
    st.markdown(f"**{HEADING}**")
    for source in cited:
        _passage(source)


def answer_passages(store: Store, report: ReportDocument, answer: ReportDocument) -> None:
    """Under an answer: the passages of one's documents that only the answer cites (it numbers
    them after the report's list); those the report cites are shown under its Sources list,
    where the answer's [n] leads as the report's does."""
    shown = {s.number for s in report.sources}
    extra = tuple(s for s in document_sources(answer) if s.number not in shown)
    if extra:
        for source in attach_passages(store, dataclasses.replace(answer, sources=extra)).sources:
            _passage(source)


def _passage(source: ReportSource) -> None:
    st.html(_ANCHOR.format(n=int(source.number)))  # our own id only: no text from the file
    with st.container(border=True):
        st.markdown(passage_markdown(source))
