"""Text of an uploaded Word file under its headings, run in a child process (see
`research.untrusted.sandbox`).

The zip has already been measured by the parent (`extract.check_zip`: no zip bomb gets this
far), but a DOCX within those limits can still hold XML that takes a lot of memory to parse;
here that costs a child process under a memory cap, never the dashboard. python-docx parses
with entity resolution off, so no entity expansion or external entity is followed.

This module imports only python-docx and the standard library: it is what the child loads,
imported once by the sandbox's starter before it forks the child.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import docx

if TYPE_CHECKING:  # the child loads this module alone: nothing of research at run time
    from research.untrusted.sandbox import ChildAnswer


def extract_docx(payload: bytes) -> ChildAnswer:
    """{"title", "sections": [[heading, text], ...]} or {"error": plain words}."""
    try:
        document = docx.Document(io.BytesIO(payload))
        sections: list[list[str]] = []
        heading, lines = "", list[str]()
        for para in document.paragraphs:
            style = (para.style.name if para.style is not None else "") or ""
            text = para.text.strip()
            if style.lower().startswith(("heading", "title")) and text:
                if lines:
                    sections.append([heading, "\n".join(lines)])
                heading, lines = text, []
            elif text:
                lines.append(text)
        if lines:
            sections.append([heading, "\n".join(lines)])
        for table in document.tables:
            rows = [" | ".join(c.text.strip() for c in row.cells) for row in table.rows]
            if any(r.strip(" |") for r in rows):
                sections.append([heading, "\n".join(rows)])
        title = document.core_properties.title or ""
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - python-docx and lxml raise many kinds
        return {"error": "the Word file could not be read; it may be damaged "
                         f"({type(exc).__name__})"}
    return {"title": title, "sections": sections}
