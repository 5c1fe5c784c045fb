"""Ask, part 2: the numbers an answer cites by, and the run's passages for its index.

A source the report cites keeps the report's own number, so a citation in an answer opens the
same source as in the report; a gathered source the report does not cite gets the next free
number after the report's list (the appendix and the Run page list it under the answer).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from research.core.records import Source
from research.export.document import ReportSource
from research.untrusted.excerpts import without_title

PASSAGE_CHARS = 700     # one indexed passage: a paragraph or two of a page
MIN_PASSAGE_CHARS = 40


def answer_numbers(cited: Sequence[ReportSource], gathered: Iterable[Source]) -> dict[str, int]:
    """Source id -> the number answers cite it by (the report's, then the next ones)."""
    numbers = {s.source_id: s.number for s in cited}
    following = max(numbers.values(), default=0)
    for src in sorted(gathered, key=lambda s: s.id):
        if src.id not in numbers:
            following += 1
            numbers[src.id] = following
    return numbers


def passages_of(src: Source) -> list[str]:
    """A source's stored text cut into passages at paragraph (then sentence) breaks."""
    text = without_title(src.text or src.snippet or "", src.title)
    pieces: list[str] = []
    current = ""
    for paragraph in (" ".join(p.split()) for p in text.split("\n")):
        if not paragraph:
            continue
        for part in _sentences(paragraph):
            if current and len(current) + len(part) + 1 > PASSAGE_CHARS:
                pieces.append(current)
                current = ""
            current = f"{current} {part}".strip()
        if len(current) >= PASSAGE_CHARS // 2:
            pieces.append(current)
            current = ""
    if current:
        pieces.append(current)
    return [p for p in pieces if len(p) >= MIN_PASSAGE_CHARS] or pieces[:1]


def _sentences(paragraph: str) -> list[str]:
    if len(paragraph) <= PASSAGE_CHARS:
        return [paragraph]
    out, rest = [], paragraph
    while len(rest) > PASSAGE_CHARS:
        cut = max(rest.rfind(". ", 0, PASSAGE_CHARS), rest.rfind(" ", 0, PASSAGE_CHARS))
        cut = cut + 1 if cut > 0 else PASSAGE_CHARS
        out.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    return [*out, rest] if rest else out
