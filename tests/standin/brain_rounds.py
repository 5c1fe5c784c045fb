"""Stand-in answers for clarification and the lead's round assessment (follow-up triage)."""

from __future__ import annotations

import re
from typing import Any

from tests.standin import brain

_SUMMARY = re.compile(r'<subtopic_summary id="([^"]+)"')
_QUESTION_LINE = re.compile(r"^(Q\d+): (.+)$", re.MULTILINE)
_QUESTION = re.compile(r"<question>(.*?)</question>", re.DOTALL)

CLARIFYING = [
    "What is the research for: to decide something, to learn, or to write?",
    "Which region, sector or audience should it focus on?",
    "Which period matters most?",
]


def clarifying_questions(user: str) -> dict[str, Any]:
    match = _QUESTION.search(user)
    question = match.group(1) if match else ""
    vague = "always ask" in user or len(question.split()) < 4
    return {"vague": vague, "questions": CLARIFYING if vague else []}


def round_assessment(user: str) -> dict[str, Any]:
    ids = _SUMMARY.findall(user)
    coverage = [{"subtopic_id": sid, "status": "open" if i == 0 else "answered",
                 "note": "Key figures are still missing." if i == 0 else "Covered."}
                for i, sid in enumerate(ids)]
    may_escalate = "Escalate at most" in user
    nothing = "nothing further" in user  # a question asking it: the lead proposes nothing more
    decisions = []
    for i, (qid, _text) in enumerate(_QUESTION_LINE.findall(user)):
        if nothing:
            decisions.append({"question_id": qid, "action": "filter",
                              "reason": "The findings already answer it."})
        elif i == 0:
            action = "escalate" if may_escalate else "answer"
            decisions.append({"question_id": qid, "action": action,
                              "reason": "Broad and central to the question.", "searches": 2})
        elif i == 1:
            decisions.append({"question_id": qid, "action": "answer",
                              "reason": "One quick lookup settles it.", "searches": 1})
        else:
            decisions.append({"question_id": qid, "action": "filter",
                              "reason": "Redundant with what the findings already cover."})
    return {"coverage": coverage, "decisions": decisions}


brain.register("ClarifyingQuestions", clarifying_questions)
brain.register("RoundAssessment", round_assessment)
