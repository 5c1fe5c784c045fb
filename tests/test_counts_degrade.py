"""Counts degrade, they do not fail (issue 9.3): a model that returns fewer subtopics, queries,
scores or triage decisions than asked for is asked once for the missing ones, then the run goes
on with what came (down to the documented minimum) and says so in the log and the report.

The model here is in-process: the stand-in's brain answers by schema, and a "short" model drops
items from the answers of chosen schemas. Search and pages are the in-process fakes too.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from research.llm.messages import Completion, Message, Usage
from research.phases.start.plan import MIN_SUBTOPICS
from storage import Store
from tests.runs import Runner
from tests.standin import brain

Cut = Callable[[dict[str, Any], int], dict[str, Any]]


class ShortModel:
    """Answers like the stand-in, but `cuts[schema](answer, call_no)` trims chosen answers."""

    provider = "openai"
    model = "short-model"

    def __init__(self, cuts: dict[str, Cut]) -> None:
        self.cuts = cuts
        self.calls: Counter[str] = Counter()

    def complete(self, messages: Sequence[Message], *, json_schema: dict | None = None,
                 schema_name: str | None = None, timeout: float | None = None) -> Completion:
        system = "\n\n".join(m.content for m in messages if m.role == "system")
        user = "\n\n".join(m.content for m in messages if m.role == "user")
        text = brain.respond(system, user, json_schema)
        name = schema_name or ""
        self.calls[name] += 1
        if name in self.cuts:
            text = json.dumps(self.cuts[name](json.loads(text), self.calls[name]))
        return Completion(text, Usage(len(user) // 4, len(text) // 4), self.provider, self.model)


def _run(runs: Runner, model: ShortModel, **overrides: Any) -> tuple[Store, str]:
    return runs(model=model, preset="quick", MAX_PARALLEL_WORKERS=1, **overrides)


def _count_warnings(store: Store, run_id: str) -> list[str]:
    return [e.message for e in store.get_events(run_id)
            if e.type == "warning" and (e.data or {}).get("count_note")]


def _first(n: int, key: str) -> Cut:
    return lambda answer, call: {**answer, key: answer[key][:n]}


def test_a_plan_short_of_subtopics_goes_on_and_says_so(
    runs: Runner
) -> None:
    model = ShortModel({"ResearchPlan": _first(2, "subtopics")})  # 2 of 3, repair or not
    store, run_id = _run(runs, model)
    run = store.get_run(run_id) or {}
    assert run.status == "completed", run.error
    assert len(store.get_plan(run_id) or []) == 2
    assert model.calls["ResearchPlan"] == 2  # one repair asking for the missing one
    warnings = _count_warnings(store, run_id)
    assert any("Only 2 of the 3 distinct subtopics asked for came back" in w for w in warnings)
    report = store.get_report(run_id) or {}
    assert "Only 2 of the 3 distinct subtopics asked for came back" in report.markdown


def test_a_plan_repair_that_brings_the_missing_subtopics_is_merged(
    runs: Runner
) -> None:
    def first_short(answer: dict[str, Any], call: int) -> dict[str, Any]:
        return {"subtopics": answer["subtopics"][:1]} if call == 1 else answer

    model = ShortModel({"ResearchPlan": first_short})
    store, run_id = _run(runs, model, max_rounds=1)
    plan = store.get_plan(run_id) or []
    assert len(plan) == 3 and len({s.title for s in plan}) == 3
    assert not _count_warnings(store, run_id)


def test_a_plan_below_the_minimum_fails_with_a_plain_reason(
    runs: Runner
) -> None:
    model = ShortModel({"ResearchPlan": _first(MIN_SUBTOPICS - 1, "subtopics")})
    store, run_id = _run(runs, model)
    run = store.get_run(run_id) or {}
    assert run.status == "failed"
    assert "planned only 1 distinct subtopic" in run.error
    assert f"at least {MIN_SUBTOPICS} are needed" in run.error


def test_fewer_queries_and_scores_are_used_as_they_come(
    runs: Runner
) -> None:
    def half_scores(answer: dict[str, Any], call: int) -> dict[str, Any]:
        scores = answer["scores"]
        return {"scores": scores[: max(1, len(scores) // 2)]}

    model = ShortModel({"SearchQueries": _first(1, "queries"), "RelevanceScores": half_scores})
    store, run_id = _run(runs, model, max_rounds=1)
    run = store.get_run(run_id) or {}
    assert run.status == "completed", run.error
    research = [s for s in store.get_steps(run_id) if s.kind == "research"]
    assert research and all(s.status == "done" for s in research)
    assert store.count_sources(run_id) > 0
    skipped = [p.reason for p in store.get_skipped(run_id)]
    assert "not scored by the model" in skipped
    warnings = _count_warnings(store, run_id)
    assert any("Only 1 of the 2 search queries asked for came back" in w for w in warnings)
    assert any("relevance ratings of pages asked for came back" in w for w in warnings)
    assert all(s.relevance_reason != "not scored by the model"
               for s in store.get_sources(run_id, with_text=False))


def test_undecided_follow_up_questions_are_asked_about_once_then_set_aside(
    runs: Runner
) -> None:
    model = ShortModel({"RoundAssessment": lambda answer, call: {**answer, "decisions": []}})
    store, run_id = _run(runs, model, max_rounds=2)
    run = store.get_run(run_id) or {}
    assert run.status == "completed", run.error
    assert model.calls["RoundAssessment"] == 2  # the assessment and one repair
    assert any("decisions on follow-up questions asked for came back" in w
               for w in _count_warnings(store, run_id))
    # The Library and the CLI read the run's warnings: the note is one of them ("one voice").
    assert any("decisions on follow-up questions" in w for w in run.warnings)
