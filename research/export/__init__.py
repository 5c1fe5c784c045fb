"""Report export: a `ReportDocument` built from the writer's draft, as Markdown or PDF."""

from research.export.document import ReportDocument, ReportSource, build_document
from research.export.markdown import to_markdown
from research.export.pdf import RefusingURLFetcher, to_html, to_pdf

__all__ = [
    "RefusingURLFetcher",
    "ReportDocument",
    "ReportSource",
    "build_document",
    "to_html",
    "to_markdown",
    "to_pdf",
]
