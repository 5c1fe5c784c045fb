"""Deterministic checks of a draft, run beside the model's review (SPEC step 6).

They need no model: every [n] resolves to a gathered source, the share of sentences
that carry a citation, the word count against REPORT_MAX_WORDS, and stale sources.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import date, timedelta
from functools import lru_cache
from typing import Any

from research.core.records import Source

CITATION = re.compile(r"\[(\d+(?:\s*[-–,]\s*\d+)*)\](?!\()")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"“(])")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_UNCITED_SECTIONS = re.compile(
    r"open questions|gaps|sources|references|offene fragen|lücken|quellen|questions ouvertes|"
    r"lacunes|références|preguntas abiertas|lagunas|fuentes|referencias|domande aperte|fonti",
    re.IGNORECASE,
)
STALE_AFTER_DAYS = 730  # when SOURCE_MAX_AGE_DAYS is 0, older than two years counts as stale
MIN_CITED_SHARE = 0.8
MAX_STALE_SHARE = 0.5
MAX_EXAMPLES = 5  # uncited statements quoted back to the writer


def cited_numbers(text: str) -> list[int]:
    """Every citation number in order of appearance; [2-4] and [1, 3] are expanded."""
    out: list[int] = []
    for group in CITATION.findall(text):
        for part in group.split(","):
            bounds = re.split(r"\s*[-–]\s*", part.strip())
            if len(bounds) == 2 and bounds[0].isdigit() and bounds[1].isdigit():
                lo, hi = int(bounds[0]), int(bounds[1])
                out.extend(range(lo, hi + 1) if 0 < hi - lo <= 50 else [lo, hi])
            elif bounds[0].isdigit():
                out.append(int(bounds[0]))
    return out


_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")
_FIGURE = re.compile(r"\d")


def data_rows(lines: list[str]) -> set[int]:
    """Indices of the table rows that hold data: not header rows, not separator rows."""
    rows: set[int] = set()
    for i, line in enumerate(lines):
        if not line.strip().startswith("|") or _TABLE_SEPARATOR.match(line):
            continue
        if i + 1 < len(lines) and _TABLE_SEPARATOR.match(lines[i + 1]):
            continue  # a header row
        rows.add(i)
    return rows


def factual_row(row: str) -> bool:
    """A table row states something checkable when it cites a source or gives a figure."""
    return bool(CITATION.search(row) or _FIGURE.search(CITATION.sub("", row)))


def has_figure(text: str) -> bool:
    """Whether a statement gives a number (a figure, a date...), citations aside."""
    return bool(_FIGURE.search(CITATION.sub("", text)))


def claim_sentences(text: str) -> list[str]:
    """Statements: sentences of prose and list items, and table rows that cite or give a
    figure, outside headings and the sections where uncited text is expected (open
    questions, sources)."""
    return list(_claim_sentences(text))


# A draft's text is read again and again while it is written, checked, shortened and
# verified (the same text up to a dozen times): the two readings below are kept for the
# last texts asked about.
_SAME_TEXTS = 128


@lru_cache(maxsize=_SAME_TEXTS)
def _claim_sentences(text: str) -> tuple[str, ...]:
    sentences: list[str] = []
    skip = False
    lines = text.splitlines()
    rows = data_rows(lines)
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith("#"):
            skip = bool(_UNCITED_SECTIONS.search(stripped))
            continue
        if not skip and i in rows and factual_row(stripped):
            sentences.append(stripped)
            continue
        if skip or not stripped or stripped.startswith("|") or stripped.startswith(">"):
            continue
        stripped = _LIST_MARK.sub("", stripped)
        for sentence in _SENTENCE_END.split(stripped):
            if len(CITATION.sub("", sentence).split()) >= 5:
                sentences.append(sentence)
    return tuple(sentences)


# A Markdown table: a row of cells, then its separator row (| --- | --- |).
MARKDOWN_TABLE = re.compile(r"^\s*\|.+\|\s*\n\s*\|\s*:?-{3,}", re.MULTILINE)


_WORD = re.compile(r"[A-Za-z0-9À-ÿ][\w'’-]*")


@lru_cache(maxsize=_SAME_TEXTS)
def word_count(text: str) -> int:
    return len(_WORD.findall(CITATION.sub("", text)))


@dataclass(frozen=True, slots=True)
class DraftChecks:
    """The deterministic checks of one draft. Stored as JSON (a review's `checks`, the
    report's meta) through `as_json`, under these same names, which the dashboard reads."""

    citations: int
    unresolved_citations: list[int]
    all_citations_resolve: bool
    removed_citations: int
    sentences: int
    cited_sentences: int
    cited_share: float
    uncited_examples: list[str]
    word_count: int
    max_words: int
    within_word_limit: bool
    cited_sources: int
    stale_sources: list[str]
    stale_share: float
    undated_sources: int
    passed: bool
    needs_table: bool = False  # the person asked for a comparison table (research/core/shapes)
    has_table: bool = True


    def as_json(self) -> dict[str, object]:
        return asdict(self)


def run_checks(
    text: str,
    numbering: Mapping[int, str],
    sources: Mapping[str, Source],
    *,
    max_words: int,
    max_age_days: int,
    today: date,
    removed_citations: int = 0,
    needs_table: bool = False,
) -> DraftChecks:
    """`removed_citations`: citations the normaliser removed from this draft because they
    pointed at nothing gathered (research/report/citations.py); they count as unresolved.
    `needs_table`: the report's shape is a comparison table, so it must hold one."""
    numbers = cited_numbers(text)
    unresolved = sorted({n for n in numbers if numbering.get(n) not in sources})
    cited_ids = list(dict.fromkeys(numbering[n] for n in numbers if numbering.get(n) in sources))
    sentences = claim_sentences(text)
    cited = sum(1 for s in sentences if CITATION.search(s))
    uncited = [s for s in sentences if not CITATION.search(s)]
    limit = today - timedelta(days=max_age_days or STALE_AFTER_DAYS)
    stale = [sid for sid in cited_ids if _older(sources[sid].published, limit)]
    undated = [sid for sid in cited_ids if not sources[sid].published]
    words = word_count(text)
    has_table = bool(MARKDOWN_TABLE.search(text))
    share = round(cited / len(sentences), 3) if sentences else 0.0
    stale_share = round(len(stale) / len(cited_ids), 3) if cited_ids else 0.0
    return DraftChecks(
        citations=len(numbers),
        unresolved_citations=unresolved,
        all_citations_resolve=not unresolved and not removed_citations,
        removed_citations=removed_citations,
        sentences=len(sentences),
        cited_sentences=cited,
        cited_share=share,
        uncited_examples=[" ".join(s.split())[:160] for s in uncited[:MAX_EXAMPLES]],
        word_count=words,
        max_words=max_words,
        within_word_limit=words <= max_words,
        cited_sources=len(cited_ids),
        stale_sources=stale,
        stale_share=stale_share,
        undated_sources=len(undated),
        passed=(not unresolved and not removed_citations and share >= MIN_CITED_SHARE
                and words <= max_words and stale_share <= MAX_STALE_SHARE
                and (has_table or not needs_table)),
        needs_table=needs_table, has_table=has_table,
    )


def problems(checks: DraftChecks) -> list[str]:
    """The failed checks in plain words, for the writer's revision prompt."""
    out = []
    if checks.unresolved_citations:
        nums = ", ".join(f"[{n}]" for n in checks.unresolved_citations)
        out.append(f"Citations {nums} do not match any gathered source: remove or fix them.")
    if checks.removed_citations:
        out.append(f"{checks.removed_citations} citation(s) or link(s) pointed at no gathered "
                   "source and were removed: cite only the numbered sources listed.")
    if checks.cited_share < MIN_CITED_SHARE:
        out.append(f"Only {checks.cited_share:.0%} of factual statements (sentences, list "
                   f"items, table rows with figures) cite a source; at least {MIN_CITED_SHARE:.0%} "
                   "must: cite each with the numbered sources, or remove what no source supports.")
        if checks.uncited_examples:
            out.append("Statements without a citation include: "
                       + " | ".join(f'"{e}"' for e in checks.uncited_examples))
    if not checks.within_word_limit:
        out.append(f"The report has {checks.word_count} words; the limit is "
                   f"{checks.max_words}.")
    if checks.stale_share > MAX_STALE_SHARE:
        out.append("Most cited sources are old; prefer recent ones or say the data is dated.")
    if checks.needs_table and not checks.has_table:
        out.append("A comparison table was asked for, and the report has none: set the options "
                   "side by side in a Markdown table under \"Comparison\", a cited figure or "
                   "fact in each cell.")
    return out


def _older(published: Any, limit: date) -> bool:
    if not published:
        return False
    try:
        return date.fromisoformat(str(published)[:10]) < limit
    except ValueError:
        return False
