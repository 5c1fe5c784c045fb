"""Research rounds -> what the Run page's Rounds tab shows (SPEC step 4).

Pure functions (pandas, no Streamlit). Each "triage:N" step holds the lead's assessment
after round N: coverage per subtopic, the decision on every follow-up question, and, in
the last round, why research stopped. Tables show plain text; Markdown goes through md_text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from dashboard.views import status_label, subtopic_names
from research.core.records import Step, Subtopic

COVERAGE = {"answered": "Answered", "open": "Open", "conflicting": "Conflicting"}
ACTIONS = {
    "filter": "🚫 Filtered",
    "answer": "🔎 Answered by a quick lookup",
    "escalate": "⬆️ New subtopic next round",
}


def round_steps(steps: Sequence[Step]) -> list[dict[str, Any]]:
    """The finished triage results, by round."""
    results = []
    for step in steps:
        if step.kind != "triage" or not step.result:
            continue
        result = dict(step.result)
        result.setdefault("round", _round_of(step.key))
        results.append(result)
    return sorted(results, key=lambda r: int(r.get("round") or 0))


def _round_of(key: str) -> int:
    try:
        return int(key.split(":", 1)[1])
    except (IndexError, ValueError):
        return 0


def coverage_frame(result: Mapping[str, Any], plan: Sequence[Subtopic] | None) -> pd.DataFrame:
    names = subtopic_names(plan)
    rows = [{
        "Subtopic": names.get(str(c.get("subtopic_id")), str(c.get("subtopic_id") or "")),
        "Coverage": COVERAGE.get(str(c.get("status") or ""), str(c.get("status") or "")),
        "Note": c.get("note") or "",
    } for c in result.get("coverage") or []]
    return pd.DataFrame(rows, columns=["Subtopic", "Coverage", "Note"])


def triage_frame(result: Mapping[str, Any], plan: Sequence[Subtopic] | None,
                 lookups: Mapping[str, Step] | None = None) -> pd.DataFrame:
    """One row per follow-up question: the decision, why, and the searches of a quick lookup.

    `lookups` maps "followup:<round>:<n>" step keys to their steps, so a lookup's outcome
    (done, failed) is shown next to its decision.
    """
    names = subtopic_names(plan)
    lookups = lookups or {}
    round_no = int(result.get("round") or 0)
    rows = []
    for i, d in enumerate(result.get("decisions") or [], start=1):  # as research/phases/decide/rounds.py
        action = str(d.get("action") or "")
        searches: int | None = None
        outcome = ""
        if action == "answer":
            searches = int(d.get("searches") or 1)
            step = lookups.get(f"followup:{round_no}:{i}")
            if step:
                outcome = status_label(step.status)
                if step.source_count:
                    outcome += f" · {step.source_count} sources"
        rows.append({
            "Question": d.get("question") or "",
            "From subtopic": names.get(str(d.get("subtopic_id")), str(d.get("subtopic_id") or "")),
            "Decision": ACTIONS.get(action, action),
            "Reason": d.get("reason") or "",
            "Searches": searches,
            "Lookup": outcome,
        })
    return pd.DataFrame(rows, columns=["Question", "From subtopic", "Decision", "Reason",
                                       "Searches", "Lookup"])


def stop_text(reason: Any, config: Mapping[str, Any] | None = None) -> str:
    """Why research stopped, in plain words (plain text; escape before Markdown)."""
    text = " ".join(str(reason or "").split())
    if not text:
        return ""
    rounds = (config or {}).get("max_rounds")
    if text.startswith("DEPTH reached"):
        rounds = (config or {}).get("depth")
    if text.startswith(("MAX_ROUNDS reached", "DEPTH reached")):
        limit = f" ({rounds})" if rounds else ""
        return f"The maximum number of research rounds{limit} was reached."
    if text.startswith(("MAX_ROUNDS is 1", "DEPTH is 1")):
        return "Only one research round was asked for, so no follow-ups were researched."
    if text.startswith("No new, relevant, non-redundant question remains"):
        return ("No new question remained that was relevant and not already answered or "
                "planned, so further rounds would have added nothing.")
    return text


def new_subtopics(plan: Sequence[Subtopic] | None, round_no: int) -> list[str]:
    """Titles of the subtopics escalated after `round_no` (researched in the next round)."""
    return [s.title or s.id for s in plan or [] if s.round == round_no + 1]
