"""Passages: the unit a search finds and a report cites.

A passage is a few hundred words that never straddles a PDF page or a heading, so its one
location ("p. 12", or the heading it sits under) is true of every word in it. A passage read by
OCR from a scanned page keeps its page and carries `OCR_SECTION` as its section, so every list
that cites it says so ("Report, p. 3, read by OCR").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from research.documents.extract import Section

PASSAGE_WORDS = 250   # aim: long enough to carry a claim and its context
MAX_WORDS = 350       # a paragraph longer than this is cut at word boundaries
OCR_SECTION = "read by OCR"  # the section of a scanned page's passages (a page has no heading)


@dataclass(frozen=True)
class Passage:
    seq: int
    text: str
    page: int | None
    section: str


def split(sections: list[Section], *, target: int = PASSAGE_WORDS,
          limit: int = MAX_WORDS) -> list[Passage]:
    """Consecutive passages of about `target` words out of located sections."""
    out: list[Passage] = []
    for section in sections:
        for text in _chunks(section.text, target, limit):
            heading = OCR_SECTION if section.ocr else section.heading
            out.append(Passage(len(out), text, section.page, heading))
    return out


def _chunks(text: str, target: int, limit: int) -> list[str]:
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    chunks: list[str] = []
    current: list[str] = []
    count = 0
    for para in paragraphs:
        words = para.split()
        while len(words) > limit:  # one huge paragraph: cut it
            if current:
                chunks.append("\n\n".join(current))
                current, count = [], 0
            chunks.append(" ".join(words[:target]))
            words = words[target:]
        if count and count + len(words) > limit:
            chunks.append("\n\n".join(current))
            current, count = [], 0
        current.append(" ".join(words) if "\n" not in para else para)
        count += len(words)
        if count >= target:
            chunks.append("\n\n".join(current))
            current, count = [], 0
    if current:
        chunks.append("\n\n".join(current))
    return [c for c in chunks if c.strip()]


def location(page: int | None, section: str) -> str:
    """Where in its document a passage is, as a citation says it: "p. 12" or the section."""
    if page and section == OCR_SECTION:
        return f"p. {page}, {OCR_SECTION}"
    if page:
        return f"p. {page}"
    if section:
        return f"section \u201c{section[:80]}\u201d"
    return ""


def cited_title(title: str, page: int | None, section: str) -> str:
    """"Title, p. 12": the title a passage carries as a source, so every list shows where."""
    where = location(page, section)
    return f"{title}, {where}" if where else title
