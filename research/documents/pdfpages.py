"""Text of each page of an uploaded PDF, run in a child process (see `research.untrusted.sandbox`).

Like `research.untrusted.pdftext` (a fetched PDF), but keeps the page boundaries so a citation can say
"p. 12". A PDF is small on disk and can be huge inside, so this runs under the child's memory
cap and wall-clock limit; reading stops after `max_pages` pages.

This module imports only pypdf and the standard library: it is what the child loads,
imported once by the sandbox's starter before it forks the child.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import pypdf

if TYPE_CHECKING:  # the child loads this module alone: nothing of research at run time
    from research.untrusted.sandbox import ChildAnswer


def extract_pages(payload: bytes, max_pages: str) -> ChildAnswer:
    """{"title", "pages": [text of page 1, page 2, ...], "total_pages"} or {"error": words}."""
    try:
        reader = pypdf.PdfReader(io.BytesIO(payload))
        if reader.is_encrypted and not reader.decrypt(""):
            return {"error": "the PDF is password-protected; save an unprotected copy and "
                             "upload that"}
        total = len(reader.pages)
        pages = [(page.extract_text() or "").strip()
                 for page in reader.pages[:int(max_pages)]]
        info = reader.metadata
        title = str(info.title).strip() if info is not None and info.title else None
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - pypdf raises many kinds on broken files
        detail = " ".join(str(exc).split()) or type(exc).__name__
        return {"error": f"the PDF could not be read; it may be damaged ({detail[:160]})"}
    return {"title": title, "pages": pages, "total_pages": total}
