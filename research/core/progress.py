"""How far a run has got, from its stored steps: shared by the CLI and the dashboard."""

from __future__ import annotations

from collections.abc import Sequence

from research.core.records import Run, Step

TERMINAL = ("completed", "failed", "cancelled")


def percent(run: Run, steps: Sequence[Step]) -> int:
    """0-100: finished steps over planned steps. 100 only once the run has completed."""
    if run.status == "completed":
        return 100
    config = run.config
    research = sum(1 for s in steps if s.kind == "research")
    subtopics = max(research, int(config.get("subtopic_count", 6)))
    review_steps = [s for s in steps if s.kind in ("review", "revise")]
    approved = any(s.result.get("approved") for s in review_steps)
    planned_reviews = (len(review_steps) if approved
                       else max(len(review_steps), 2 * int(config.get("review_cycles", 2))))
    # preflight, plan, workers, draft, reviews, verify, deliver
    total = 2 + subtopics + 1 + planned_reviews + 1 + 1
    done = sum(
        1 for s in steps
        if s.status == "done" or (s.kind == "research" and s.status == "failed")
    )
    return max(0, min(99, round(100 * done / total)))
