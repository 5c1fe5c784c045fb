"""The report first: a finished run's summary line, one-click downloads, then the report.

When a run completes, what the person came for leads the Run page: how many sources and
verified claims it rests on and whether it has warnings, a button per export format (each a
single click: PDF, Word, Markdown, the bibliography, the evidence table), then the report.
Export bytes are built once per run and format and kept in a small in-memory cache; the PDF,
which takes a moment, is built when its button is clicked (Streamlit calls our function then).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import streamlit as st

from dashboard import ask_view, doc_citations, views
from research import voice
from research.ask import appendix
from research.core.errors import ResearchError
from research.core.records import Report, Run
from research.export import build_document
from research.export.doc_passages import attach_passages
from research.export.document import ReportDocument
from research.export.formats import FORMATS, export_document, file_stem
from research.export.run_document import build_document_for_run
from research.phases import verify
from research.runs import ACTIVE
from storage import Store

REPORT_FORMATS = ("pdf", "docx", "md")
EXTRA_FORMATS = ("bib", "ris", "csv", "xlsx")
ICONS = {"pdf": ":material/picture_as_pdf:", "docx": ":material/description:",
         "md": ":material/article:", "bib": ":material/menu_book:", "ris": ":material/menu_book:",
         "csv": ":material/table_view:", "xlsx": ":material/table_view:"}
_CACHE_SIZE = 48
_cache: OrderedDict[tuple[str, ...], bytes] = OrderedDict()
_failures: dict[tuple[str, ...], str] = {}
_lock = threading.Lock()


def cached_export(key: tuple[str, ...], build: Callable[[], bytes]) -> bytes:
    """`build()` once per key (run, version, format); the newest entries are kept."""
    with _lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    try:
        data = build()
    except Exception as exc:  # noqa: BLE001 - remembered and shown in plain words on the page
        with _lock:
            _failures[key] = (str(exc) if isinstance(exc, ResearchError)
                              else "a problem in the program itself")
        raise
    with _lock:
        _failures.pop(key, None)
        _cache[key] = data
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return data


def export_failure(key: tuple[str, ...]) -> str | None:
    with _lock:
        return _failures.get(key)


def download_buttons(store: Store, run_id: str, doc: ReportDocument, *, stamp: str, name: str,
                     formats: Iterable[str], key: str = "", primary: str | None = "pdf") -> None:
    """One download button per format, each a single click (the PDF is built on the click)."""
    row = st.container(horizontal=True)
    for fmt in formats:
        spec = FORMATS[fmt]
        cache_key = (run_id, key, stamp, fmt)

        def build(fmt: str = fmt) -> bytes:
            return export_document(store, run_id, doc, fmt)

        data: Any
        if fmt == "pdf":
            data = lambda cache_key=cache_key, build=build: cached_export(cache_key, build)  # noqa: E731
        else:
            try:
                data = cached_export(cache_key, build)
            except Exception:  # noqa: BLE001 - the failure is shown below, other buttons stay
                continue
        row.download_button(
            spec.label, data, file_name=f"{name}.{fmt}", mime=spec.mime, help=spec.help,
            icon=ICONS.get(fmt), on_click="ignore", type="primary" if fmt == primary else "secondary",
            key=f"dl_{key}_{fmt}_{run_id}")
        failure = export_failure(cache_key)
        if failure:
            st.error(f"The {spec.label} file could not be created: {failure} "
                     "The other downloads still work.")


def summary_line(store: Store, run: Run, doc: ReportDocument) -> str:
    """'Completed · 12 sources cited (40 kept) · 19 of 23 claims verified · no warnings',
    plain words, led by the run's label as every surface says it (research/voice.py)."""
    kept = store.count_sources(run.id)
    cited = len(doc.sources)
    warned = bool(all_warnings(run, doc))  # a report's own note counts, as in the box below
    parts = [voice.WITH_WARNINGS if warned else voice.run_label(run),
             f"{cited} source{'s' if cited != 1 else ''} cited ({kept} kept)"]
    checked = verify.summary(store, run.id)
    if checked.claims:
        parts.append(f"{checked.supported} of {checked.claims} claims verified")
    else:
        parts.append("claims not checked")
    warnings = all_warnings(run, doc)
    parts.append(f"{len(warnings)} warning{'s' if len(warnings) != 1 else ''}" if warnings
                 else "no warnings")
    return " · ".join(parts)


def all_warnings(run: Run, doc: ReportDocument) -> list[str]:
    """The run's warnings and the report's own notes, once each: what the summary line counts
    is exactly what the yellow box below it lists, so the page never says "no warnings" above
    a caveat."""
    warnings = views.run_warnings(run)
    return warnings + [n for n in doc.notes if n not in warnings]


def report_body(doc: ReportDocument, shown: Sequence[str] = ()) -> None:
    """Verification line, caveats not already `shown` above, the report and its sources."""
    if doc.verification:
        st.info(f"**Verification:** {views.md_text(doc.verification)}")
    for note in doc.notes:
        if note not in shown:
            st.warning(views.md_text(note))
    st.markdown(views.report_markdown(doc))
    st.subheader("Sources", anchor=SOURCES_ANCHOR)
    st.markdown(views.sources_markdown(doc))
    doc_citations.cited_passages(doc)  # where a citation of one's own document leads


def finished_report(store: Store, run: Run) -> tuple[Report | None, Any]:
    """The finished report and its document, or (None, None) while there is none."""
    run_id = run.id
    report = store.get_report(run_id)
    if report is None or run.status != "completed":
        return None, None
    try:
        return report, build_document_for_run(store, run_id)
    except ResearchError as exc:
        st.error(f"The report could not be shown: {exc}")
        return None, None


def report_first(store: Store, run: Run, report: Report,
                 doc: ReportDocument) -> None:
    """The top of a finished run's page: summary, downloads, then the report."""
    run_id = run.id
    warnings = all_warnings(run, doc)
    line = views.md_text(summary_line(store, run, doc))
    if warnings:  # never a green "success" for a run that completed with warnings
        st.warning(line + "".join(f"  \n{views.md_text(voice.plain_error(w))}" for w in warnings),
                   icon=":material/warning:")
    else:
        st.success(line, icon=":material/task_alt:")
    if doc.reading_time:
        st.caption(views.md_text(doc.reading_time))
    stamp = report.created_at
    name = file_stem(run.question, stamp)
    cached = f"{stamp}#{appendix.stamp(store, run_id)}"  # new answers join the exports
    download_buttons(store, run_id, doc, stamp=cached, name=name,
                     formats=REPORT_FORMATS)
    with st.expander("Bibliography and claim evidence table", icon=":material/download:"):
        st.caption("The cited sources for reference managers (BibTeX, RIS) and every checked "
                   "claim with its verdict, quoted passage, source and section (CSV, Excel).")
        download_buttons(store, run_id, doc, stamp=cached, name=name,
                         formats=EXTRA_FORMATS, key="extra", primary=None)
    jump_links()  # what lies below the report, reached without scrolling through it
    report_body(doc, shown=warnings)


SOURCES_ANCHOR = "report-sources"
DETAILS_ANCHOR = "how-the-run-went"


def jump_links() -> None:
    """Near the top: links to the sources, the question box and how the run went (review,
    verification, cost), which come after the whole report."""
    st.markdown(f"[:material/format_list_numbered: Sources](#{SOURCES_ANCHOR}) · "
                f"[:material/forum: Ask this report a question](#{ask_view.ANCHOR}) · "
                f"[:material/fact_check: How it was checked: review, verification, cost]"
                f"(#{DETAILS_ANCHOR})")


def draft_in_progress(store: Store, run: Run) -> None:
    """The newest stored draft (any kind), clearly labelled as not the final report."""
    run_id = run.id
    drafts = store.get_drafts(run_id)
    if not drafts:
        st.info("The report appears here as soon as the first part of it is written.")
        return
    newest = max(drafts, key=lambda d: d.version)
    doc = attach_passages(store, build_document(
        run_id=run_id, question=run.question, created_at=newest.created_at, parameters_line="",
        draft=newest.text, numbering=newest.numbering,
        sources=store.get_sources(run_id, with_text=False)))
    words = newest.words
    if run.status in ACTIVE and newest.kind == "partial":
        st.info(f"**Draft in progress**: {writing_note(newest.text, words)}",
                icon=":material/edit_note:")
    elif run.status in ACTIVE:
        st.info(f"**Draft in progress** (version {newest.version}, {words:,} words). It is "
                "still being written, reviewed or checked; the final report replaces it when the "
                "run completes.", icon=":material/edit_note:")
    else:
        st.warning(f"**The latest draft** (version {newest.version}, {words:,} words). The run "
                   "did not finish, so this draft was not completed or fully checked.",
                   icon=":material/edit_note:")
    st.markdown(views.report_markdown(doc))
    if doc.sources:
        st.subheader("Sources cited so far")
        st.markdown(views.sources_markdown(doc))
        doc_citations.cited_passages(doc)



def writing_note(text: str, words: int) -> str:
    """What a partial draft is: the sections written so far, while the others are written at
    the same time (the tab refreshes, so the report grows in front of the reader)."""
    done = sum(1 for line in text.splitlines() if line.startswith(("## ", "### ")))
    return (f"the sections are being written at the same time; {done} "
            f"section{'s' if done != 1 else ''} ({words:,} words) written so far appear below "
            "as each one is finished. The title and summary come last.")
