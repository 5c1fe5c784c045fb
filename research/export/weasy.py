"""WeasyPrint's side of the PDF export: the URL fetcher that refuses everything.

Kept apart from `research.export.pdf` so that importing the engine (the CLI, the dashboard, a
worker) does not load WeasyPrint and its font libraries, which only the rendering child needs.
"""

from __future__ import annotations

from typing import Any

from weasyprint.urls import URLFetcher


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
