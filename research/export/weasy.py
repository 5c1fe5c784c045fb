"""WeasyPrint's side of the PDF export: the sandboxed child's entry point (`render`) and the
URL fetcher that refuses everything.

Kept apart from `research.export.pdf` so that importing the engine (the CLI, the dashboard, a
worker) does not load WeasyPrint and its font libraries, which only the rendering child needs;
and so that the sandbox's starter, which the child is forked from, imports only this module,
`research.core.errors` and `research.untrusted.sandbox` (all light) besides WeasyPrint.
"""

from __future__ import annotations

import base64
from typing import Any

from weasyprint import HTML
from weasyprint.urls import URLFetcher

from research.core.errors import redact
from research.untrusted.sandbox import MEMORY, ChildAnswer, near_memory_cap


class RefusingURLFetcher(URLFetcher):  # type: ignore[misc]
    """A WeasyPrint 70 URL fetcher that refuses every URL and records each attempt.

    WeasyPrint 70 takes a `URLFetcher` instance (its `fetch` is what gets called, and its
    `_fail_on_errors` is read), not a plain function. Refusing with an ordinary exception makes
    WeasyPrint log a warning and render without the resource.
    """

    def __init__(self) -> None:
        super().__init__(allowed_protocols=(), allow_redirects=False, fail_on_errors=False)
        self.attempts: list[str] = []
        self.served = 0  # stays 0: nothing is ever served

    def fetch(self, url: str, headers: Any = None) -> Any:
        self.attempts.append(url)
        raise ValueError(f"external resources are not loaded in reports: {url[:80]}")


def render(payload: bytes, max_pdf_mb: str) -> ChildAnswer:
    """In the child: report HTML in, {"pdf": base64} or {"error": ...} out, with the URLs
    the markup tried to load."""
    html = payload.decode("utf-8", "replace")
    fetcher = RefusingURLFetcher()
    result: ChildAnswer = {}
    try:
        pdf = HTML(string=html, base_url=None, url_fetcher=fetcher).write_pdf()
        if not isinstance(pdf, bytes) or not pdf.startswith(b"%PDF"):
            result["error"] = "the layout engine returned no document."
        elif len(pdf) > int(max_pdf_mb) * 1024 * 1024:
            result["error"] = f"the PDF would be larger than {max_pdf_mb} MB."
        else:
            result["pdf"] = base64.b64encode(pdf).decode("ascii")
    except MemoryError:
        result = {"error": MEMORY}
    except RecursionError:
        result = {"error": "the document is nested too deeply to lay out."}
    except Exception as exc:  # noqa: BLE001 - WeasyPrint and its libraries raise many kinds
        if near_memory_cap():  # a C library hit the cap and failed its own way
            result = {"error": MEMORY}
        else:
            detail = redact(str(exc))[:200] or type(exc).__name__
            result["error"] = f"the page layout failed ({detail})."
    result["attempts"] = fetcher.attempts[:200]
    return result
