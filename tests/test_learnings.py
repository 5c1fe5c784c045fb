"""Learnings carried to a later round's worker: spread over the subtopics, its own lineage first."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from research.core.records import Finding, Subtopic
from research.phases.gather.learnings import MAX_LEARNINGS, prior


def _ctx(plan: list[Subtopic], findings: list[Finding]) -> Any:
    store = SimpleNamespace(get_plan=lambda run_id: plan, get_findings=lambda run_id: findings,
                            get_queries=lambda run_id: [])
    return SimpleNamespace(store=store, run_id="r1")


def test_a_later_round_hears_from_every_earlier_subtopic_not_only_the_first_stored():
    plan = [Subtopic(f"s{i}", f"Subtopic {i}") for i in range(1, 5)]
    follow_up = Subtopic("s5", "Follow-up", round=2, parent="s3")
    plan.append(follow_up)
    # The first subtopic stored many more findings than the limit, before the others.
    findings = [Finding(f"s{i}", f"claim {i}.{n}", ("x",), confidence=0.5 + n / 100)
                for i in range(1, 5) for n in range(20 if i == 1 else 3)]
    learnings = prior(_ctx(plan, findings), follow_up).learnings
    assert len(learnings) == MAX_LEARNINGS
    told = {text.split(".")[0].split()[1] for text in learnings}
    assert told == {"1", "2", "3", "4"}, learnings
    # Its parent's findings come first, the most confident of them first.
    assert learnings[0] == "claim 3.2"


def test_a_first_round_worker_gets_nothing_and_a_lookup_hears_its_own_subtopic_first():
    plan = [Subtopic("s1", "One"), Subtopic("s2", "Two")]
    findings = [Finding("s1", "one a", confidence=0.9), Finding("s2", "two a", confidence=0.8)]
    assert prior(_ctx(plan, findings), plan[0]).learnings == []
    lookup = Subtopic("s2", "Two", lookup=True)
    assert prior(_ctx(plan, findings), lookup).learnings[0] == "two a"
