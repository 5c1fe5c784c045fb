"""The stand-in lead judging a person's exit case ("Done when ...") against the findings.

A plain, wording-independent rule: the exit case is met when every content word of it (four
letters or more) occurs somewhere in the findings listed; otherwise the missing words are
named. A real model judges meaning; this judges presence, which is enough to drive both paths.
"""

from __future__ import annotations

import re
from typing import Any

from tests.standin import brain

_EXIT = re.compile(r"<exit_case>(.*?)</exit_case>", re.S)
_FINDINGS = re.compile(r"<untrusted_source[^>]*>(.*?)</untrusted_source", re.S)


def goal_check(user: str) -> dict[str, Any]:
    exit_case = (_EXIT.search(user) or [None, ""])[1] or ""
    findings = " ".join(_FINDINGS.findall(user)).lower()
    words = {w for w in re.findall(r"[a-z0-9]+", exit_case.lower()) if len(w) >= 4}
    missing = sorted(w for w in words if w not in findings)
    if words and not missing:
        return {"met": True, "why": "The findings cover every part of the exit case."}
    return {"met": False, "why": "Still missing: " + (", ".join(missing) or "an exit case")}


brain.register("GoalCheck", goal_check)
