"""Finding earlier research a new question can build on, and "dig deeper" questions."""

from __future__ import annotations

import re
from typing import Any

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


def similar_runs(store: Store, question: str, *, limit: int = 3, scan: int = 500) -> list[dict[str, Any]]:
    """Completed runs whose question is close to this one, best first, with their score."""
    scored = []
    for run in store.list_runs(status="completed", limit=scan):
        score = similarity(question, run["question"])
        if score >= MIN_SIMILARITY:
            scored.append({**run, "similarity": round(score, 2)})
    scored.sort(key=lambda r: -r["similarity"])  # stable: newest first among equals
    return scored[:limit]


def report_sections(markdown: str) -> list[str]:
    """The '## ' section titles of a report, for "Dig deeper" (not its Sources list)."""
    titles = [m.strip() for m in re.findall(r"^##\s+(.+)$", markdown, flags=re.MULTILINE)]
    return [t for t in titles if t.lower() not in ("sources", "references")]


def dig_deeper_question(parent_question: str, section: str, section_text: str = "") -> str:
    """The question of a follow-up run that goes deeper into one section of a report."""
    excerpt = " ".join(section_text.split())[:600]
    question = f"{parent_question.strip()} (dig deeper into: {section.strip()})"
    if excerpt:
        question += f" Context from the earlier report: {excerpt}"
    return question[:2000]


def section_text(markdown: str, section: str) -> str:
    match = re.search(rf"^##\s+{re.escape(section)}\s*$(.*?)(?=^##\s|\Z)", markdown,
                      flags=re.MULTILINE | re.DOTALL)
    return match.group(1).strip() if match else ""
