"""Text out of a fetched PDF, run in a child process by research.untrusted.fetch (see research.untrusted.sandbox).

A PDF is small on the wire and can be huge inside: a 16 KB file whose content stream inflates
to 5 MB of text-drawing commands kept pypdf busy for 16 s and 409 MB in the research process.
Here it runs in a child with a memory cap, killed when the page's deadline passes; reading
also stops at `max_pages` pages or once `max_chars` characters of text are in hand.

This module imports only pypdf and the standard library: it is what the child loads,
imported once by the sandbox's starter before it forks the child.
"""

from __future__ import annotations

import datetime as dt
import io
from typing import TYPE_CHECKING

import pypdf

if TYPE_CHECKING:  # the child loads this module alone: nothing of research at run time
    from research.untrusted.sandbox import ChildAnswer


def extract(payload: bytes, max_pages: str, max_chars: str) -> ChildAnswer:
    """{"title", "text", "published"} or {"error": plain words}."""
    pages, chars = int(max_pages), int(max_chars)
    try:
        reader = pypdf.PdfReader(io.BytesIO(payload))
        if reader.is_encrypted and not reader.decrypt(""):
            return {"error": "the PDF is password-protected"}
        texts: list[str] = []
        for page in reader.pages[:pages]:
            text = (page.extract_text() or "").strip()
            if text:
                texts.append(text)
            if sum(len(t) for t in texts) >= chars:
                break
        info = reader.metadata
        title = str(info.title) if info is not None and info.title else None
        created = info.creation_date if info is not None else None
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - pypdf raises many kinds on broken files
        detail = " ".join(str(exc).split()) or type(exc).__name__
        return {"error": f"could not read the PDF ({detail[:160]})"}
    published = created.date().isoformat() if isinstance(created, dt.datetime) else None
    return {"title": title, "text": "\n\n".join(texts), "published": published}
