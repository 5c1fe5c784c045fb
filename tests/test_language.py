"""The report's language: headings from the writer and the exports' own words."""

from __future__ import annotations

import io
import re

from pypdf import PdfReader

from research.core.records import Source
from research.export import build_document, to_markdown, to_pdf
from research.export.run_document import build_document_for_run
from tests.runs import Runner
from tests.standin import StandinServer


def test_a_german_report_has_german_headings_and_labels_in_both_exports(
    standin: StandinServer, runs: Runner
) -> None:
    store, run_id, _ = runs.completed(preset="quick", report_language="German")
    writer = [str(r["json"]) for r in standin.requests_for("openai")
              if not (r["json"] or {}).get("response_format") and "FINDINGS" in str(r["json"])]
    assert writer and all("Write the entire report in German" in w for w in writer)  # every section
    markdown = to_markdown(build_document_for_run(store, run_id))
    for heading in ("## Zusammenfassung", "## Wichtigste Ergebnisse", "## Empfehlungen", "## Quellen"):
        assert heading in markdown
    assert "**Datum:**" in markdown and "## Sources" not in markdown
    # What the engine wrote itself (verification marks, caveats, run record) is translated too.
    assert "(einzige Quelle)" in markdown and "(single source)" not in markdown
    assert re.search(r"\\?\[Deutsch\\?\] Run record:", markdown)  # (escaped in Markdown)
    text = "\n".join(p.extract_text() for p in PdfReader(io.BytesIO(to_pdf(build_document_for_run(store, run_id)))).pages)
    assert "Quellen" in text and "Seite 1 von" in text


def test_translated_labels_cannot_break_out_of_markdown_html_or_css() -> None:
    hostile = {"sources": '"Quellen"; } body { display: none } <script>x</script>',
               "page": 'Seite" counter(page) "\\', "date": "**[x](javascript:alert(1))**"}
    doc = build_document(run_id="r", question="q", created_at="2026-11-22T00:00:00Z",
                         parameters_line="p", draft="Text [1].", numbering={1: "s1"},
                         sources=[Source("s1", "https://a.example/x", title="A")],
                         labels=hostile)
    for _, value in doc.labels:
        assert not set(value) & set('"\\<>{};*[]')
    markdown = to_markdown(doc)
    assert "<script>" not in markdown and "](javascript" not in markdown
