"""The claim evidence table (claim, verdict, quoted passage, source, section) as CSV and XLSX.

Reviewers check a report claim by claim; this table is what they sort and filter in a
spreadsheet. Rows are the verification step's stored verdicts, in report order; a claim's
sources are named by the report's own citation numbers when the report cites them. A passage
of the person's documents is named by its title ("Report, p. 3") and has no address to list.

Every cell is untrusted text (claims come from a model, passages from web pages). A
spreadsheet treats a cell starting with = + - @ as a formula, so the CSV prefixes such cells
with an apostrophe (the usual defence) and the XLSX stores every cell explicitly as text.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import astuple, dataclass

from research.core.records import Source, Verdict
from research.export.doc_passages import SCHEME
from research.export.document import ReportDocument
from research.export.method import OUTCOME_WORDS

HEADERS = ("Claim", "Verdict", "Quoted passage", "Source", "Source URL", "Section")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_XLSX_CELL_MAX = 32_767  # Excel's limit on characters in one cell
_WIDTHS = (60, 16, 60, 40, 40, 30)


@dataclass(frozen=True)
class EvidenceRow:
    claim: str
    verdict: str
    passage: str
    source: str
    source_url: str
    section: str


def verdict_words(row: Verdict) -> str:
    """The claim's outcome in plain words ('supported', 'not verified'...)."""
    return OUTCOME_WORDS.get(row.outcome, row.outcome or "not verified")


def evidence_rows(verifications: Sequence[Verdict], doc: ReportDocument,
                  sources: Sequence[Source]) -> list[EvidenceRow]:
    """One row per checked claim, its sources named '[n] title' as in the report."""
    numbers = {s.source_id: s.number for s in doc.sources}
    by_id = {s.id: s for s in sources}
    rows = []
    for v in verifications:
        ids = list(v.source_ids)
        names = []
        for sid in ids:
            record = by_id.get(sid)
            title = " ".join((record.title or record.url).split()) if record else ""
            names.append(f"[{numbers[sid]}] {title}" if sid in numbers else title)
        rows.append(EvidenceRow(
            claim=v.claim, verdict=verdict_words(v),
            passage=v.passage or "", source="; ".join(n for n in names if n),
            source_url="; ".join(by_id[sid].url for sid in ids if sid in by_id
                                 and by_id[sid].url and not by_id[sid].url.startswith(SCHEME)),
            section=v.section or "",
        ))
    return rows


def _csv_cell(text: str) -> str:
    return "'" + text if text.startswith(_FORMULA_START) else text


def to_csv(rows: Sequence[EvidenceRow]) -> bytes:
    """UTF-8 with a byte-order mark, so Excel opens accents correctly; RFC 4180 quoting."""
    out = io.StringIO(newline="")
    writer = csv.writer(out)
    writer.writerow(HEADERS)
    for row in rows:
        writer.writerow([_csv_cell(value) for value in astuple(row)])
    return out.getvalue().encode("utf-8-sig")


def _xlsx_text(text: str) -> str:
    from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

    return str(ILLEGAL_CHARACTERS_RE.sub("", text))[:_XLSX_CELL_MAX]


def to_xlsx(rows: Sequence[EvidenceRow]) -> bytes:
    """One sheet, a bold frozen header row, wrapped text; every cell stored as text.
    (openpyxl is imported here: the engine and the CLI start faster without it.)"""
    from openpyxl import Workbook
    from openpyxl.styles import Alignment, Font

    book = Workbook()
    sheet = book.active
    sheet.title = "Claims"
    sheet.append(HEADERS)
    for cell in sheet[1]:
        cell.font = Font(bold=True)
    for r, row in enumerate(rows, start=2):
        for c, value in enumerate(astuple(row), start=1):
            cell = sheet.cell(row=r, column=c)
            cell.value = _xlsx_text(value)
            cell.data_type = "s"  # never a formula, whatever the text starts with
            cell.alignment = Alignment(wrap_text=True, vertical="top")
    for column, width in zip("ABCDEF", _WIDTHS, strict=True):
        sheet.column_dimensions[column].width = width
    sheet.freeze_panes = "A2"
    if rows:
        sheet.auto_filter.ref = f"A1:F{len(rows) + 1}"
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()

