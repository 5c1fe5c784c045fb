"""Finding earlier research a new question can build on, and "dig deeper" questions."""

from __future__ import annotations

import re
from dataclasses import dataclass

from research.core.prompts import strip_control, strip_invisible
from research.core.records import Run
from storage import Store

_STOP = frozenset("the a an and or of in on for to is are was were how what why which who "
                  "does do did with by from at as be it its this that these those about".split())
MIN_SIMILARITY = 0.3


def _terms(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP and len(w) > 2}


def similarity(a: str, b: str) -> float:
    """Overlap of the meaningful words of two questions, 0-1 (Dice coefficient)."""
    ta, tb = _terms(a), _terms(b)
    return 2 * len(ta & tb) / (len(ta) + len(tb)) if ta and tb else 0.0


@dataclass(frozen=True, slots=True)
class SimilarRun:
    """An earlier run a new question could build on, and how close its question is (0-1)."""

    run: Run
    similarity: float


def similar_runs(store: Store, question: str, *, limit: int = 3, scan: int = 500,
                 person: str | None = None) -> list[SimilarRun]:
    """Completed runs (of `person`; None: anyone's) whose question is close to this one,
    best first, with their score."""
    scored = []
    for run in store.list_runs(status="completed", limit=scan, person=person):
        score = similarity(question, run.question)
        if score >= MIN_SIMILARITY:
            scored.append(SimilarRun(run, round(score, 2)))
    scored.sort(key=lambda r: -r.similarity)  # stable: newest first among equals
    return scored[:limit]


def report_sections(markdown: str) -> list[str]:
    """The '## ' section titles of a report, for "Dig deeper" (not its Sources list)."""
    titles = [m.strip() for m in re.findall(r"^##\s+(.+)$", markdown, flags=re.MULTILINE)]
    return [t for t in titles if t.lower() not in ("sources", "references")]


SECTION_TITLE_CHARS = 80
_MARKUP = re.compile(r"[\\`*_{}\[\]()<>#!|~$]")


def section_title(section: str) -> str:
    """A report's section title made short and plain for a question: it was written by a
    model from web text, so no markup, control or invisible characters, at most 80 characters."""
    text = " ".join(_MARKUP.sub(" ", strip_invisible(strip_control(section))).split())
    if len(text) <= SECTION_TITLE_CHARS:
        return text
    return text[:SECTION_TITLE_CHARS].rsplit(" ", 1)[0] + "…"


def dig_deeper_question(parent_question: str, section: str) -> str:
    """The question of a follow-up run that goes deeper into one section of a report: the
    person's own words plus the cleaned section title. The section's text is never part of
    it; the planner sees that text as untrusted data (research/phases/start/plan.py)."""
    return f"{parent_question.strip()} (dig deeper into: {section_title(section)})"[:2000]


def section_text(markdown: str, section: str) -> str:
    match = re.search(rf"^##\s+{re.escape(section)}\s*$(.*?)(?=^##\s|\Z)", markdown,
                      flags=re.MULTILINE | re.DOTALL)
    return match.group(1).strip() if match else ""
