"""Report export: a `ReportDocument` built from the writer's draft, as Markdown or PDF."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from research.export.document import ReportDocument, ReportSource, build_document
from research.export.markdown import to_markdown
from research.export.pdf import to_html, to_pdf

if TYPE_CHECKING:
    from research.export.weasy import RefusingURLFetcher

__all__ = [
    "RefusingURLFetcher",
    "ReportDocument",
    "ReportSource",
    "build_document",
    "to_html",
    "to_markdown",
    "to_pdf",
]


def __getattr__(name: str) -> Any:
    """`RefusingURLFetcher` on first use: it loads WeasyPrint, which the engine itself never needs."""
    if name == "RefusingURLFetcher":
        from research.export.weasy import RefusingURLFetcher

        return RefusingURLFetcher
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
