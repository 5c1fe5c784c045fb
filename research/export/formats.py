"""Every export format of a finished run, by name: one place for the CLI and the dashboard.

`export_run(store, run_id, "docx")` -> the file's bytes. The formats' labels and MIME types
live here too, so the dashboard's download buttons and the CLI's --format choices agree.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from research.ask.appendix import FORMATS as APPENDIX_FORMATS
from research.ask.appendix import with_answers
from research.core.errors import ResearchError, contained, is_unexpected
from research.export.bibliography import to_bibtex, to_ris
from research.export.doc_passages import attach_passages
from research.export.document import ReportDocument
from research.export.evidence import EvidenceRow, evidence_rows, to_csv, to_xlsx
from research.export.markdown import to_markdown
from research.export.pdf import to_pdf
from research.export.run_document import build_document_for_run
from research.export.safe_links import clean_document
from storage import Store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ExportFormat:
    key: str        # the CLI's --format value and the file extension
    label: str      # the dashboard button's words
    mime: str
    help: str       # one line: what the file is for


def file_stem(question: str, created_at: str = "") -> str:
    """A download's name a person recognises in their Downloads folder: the question's first
    words and the report's date ("heat-pump-adoption-in-europe-2026-11-27"), in plain ASCII
    (safe in every file system and HTTP header); "report" when no Latin letter is left."""
    ascii_text = unicodedata.normalize("NFKD", question).encode("ascii", "ignore").decode()
    words = re.findall(r"[a-z0-9]+", ascii_text.lower())
    stem = ""
    for word in words:
        if len(stem) + len(word) + 1 > 60:
            break
        stem = f"{stem}-{word}" if stem else word
    date = created_at[:10] if re.fullmatch(r"\d{4}-\d\d-\d\d", created_at[:10]) else ""
    return "-".join(part for part in (stem or "report", date) if part)


FORMATS: dict[str, ExportFormat] = {f.key: f for f in (
    ExportFormat("md", "Markdown", "text/markdown", "The report as plain text with links."),
    ExportFormat("pdf", "PDF", "application/pdf", "The report, ready to print or share."),
    ExportFormat("docx", "Word", "application/vnd.openxmlformats-officedocument."
                 "wordprocessingml.document", "The report as a Word document you can edit."),
    ExportFormat("bib", "BibTeX", "application/x-bibtex",
                 "The cited sources for LaTeX and reference managers."),
    ExportFormat("ris", "RIS", "application/x-research-info-systems",
                 "The cited sources for Zotero, Mendeley or EndNote."),
    ExportFormat("csv", "Evidence CSV", "text/csv",
                 "Every checked claim with its verdict, quoted passage, source and section."),
    ExportFormat("xlsx", "Evidence Excel", "application/vnd.openxmlformats-officedocument."
                 "spreadsheetml.sheet", "The claim evidence table as an Excel workbook."),
)}


def _evidence(store: Store, run_id: str, doc: ReportDocument) -> list[EvidenceRow]:
    rows = evidence_rows(store.get_verifications(run_id), doc,
                         store.get_sources(run_id, with_text=False))
    return [clean_document(row) for row in rows]


def _docx(doc: ReportDocument) -> bytes:
    """The Word file; python-docx is imported here, on first use (it slows every start-up)."""
    from research.export.docx import to_docx

    return to_docx(doc)


_BUILDERS: dict[str, Callable[[Store, str, ReportDocument], bytes]] = {
    "md": lambda store, run_id, doc: to_markdown(doc).encode("utf-8"),
    "pdf": lambda store, run_id, doc: to_pdf(doc),
    "docx": lambda store, run_id, doc: _docx(doc),
    "bib": lambda store, run_id, doc: to_bibtex(doc).encode("utf-8"),
    "ris": lambda store, run_id, doc: to_ris(doc).encode("utf-8"),
    "csv": lambda store, run_id, doc: to_csv(_evidence(store, run_id, doc)),
    "xlsx": lambda store, run_id, doc: to_xlsx(_evidence(store, run_id, doc)),
}


class ExportFailed(ResearchError):
    """One format could not be made because of a programming error; the others still can."""


def export_document(store: Store, run_id: str, doc: ReportDocument, fmt: str) -> bytes:
    """The bytes of `fmt` for a document already built (the dashboard builds it once).
    Every format is written from the document with terminal control characters stripped.
    A programming error in one format costs that format only, said in plain words
    (ExportFailed; the traceback goes to the debug log); the test suite gets it raised."""
    if fmt in APPENDIX_FORMATS:  # the run's questions and answers follow the report
        doc = attach_passages(store, with_answers(store, run_id, doc))  # answers' passages too
    try:
        return _BUILDERS[fmt](store, run_id, clean_document(doc))
    except Exception as exc:
        if not is_unexpected(exc) or not contained(exc):
            raise
        log.debug("the %s export of run %s failed", fmt, run_id, exc_info=exc)
        label = FORMATS[fmt].label if fmt in FORMATS else fmt
        raise ExportFailed(f"The {label} file could not be made because of a problem in the "
                           "program itself; the report and the other formats are not "
                           "affected.") from None


def export_run(store: Store, run_id: str, fmt: str) -> bytes:
    """The bytes of a finished run's export in `fmt` (a key of FORMATS)."""
    return export_document(store, run_id, build_document_for_run(store, run_id), fmt)
