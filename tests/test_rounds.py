"""Research rounds: coverage, follow-up triage (filter / answer / escalate), stop reasons."""

from __future__ import annotations

from typing import Any

from research.phases.decide.rounds import _breadth, _overlap
from storage import Store
from tests.runs import Runner

# Small runs: three subtopics, no review cycles.
SMALL: dict[str, Any] = {"SUBTOPIC_COUNT": 3, "SOURCES_PER_SUBTOPIC": 5,
                         "SEARCHES_PER_SUBTOPIC": 2, "REVIEW_CYCLES": 0}


def _small(runs: Runner, **overrides: Any) -> tuple[Store, str]:
    return runs(**{**SMALL, **overrides})


def test_triage_filters_answers_and_escalates_then_stops_at_max_rounds(runs: Runner) -> None:
    store, run_id = _small(runs, MAX_ROUNDS=2)
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", run and run.error
    triage = [s for s in store.get_steps(run_id) if s.kind == "triage"]
    assert [s.key for s in triage] == ["triage:1", "triage:2"]
    first = triage[0].result
    assert {d["action"] for d in first["decisions"]} == {"filter", "answer", "escalate"}
    assert all(d["reason"] for d in first["decisions"])  # every decision says why
    assert {c["status"] for c in first["coverage"]} == {"answered", "open"}
    plan = store.get_plan(run_id) or []
    assert [s.round for s in plan] == [1, 1, 1, 2]
    escalated = next(d for d in first["decisions"] if d["action"] == "escalate")
    assert plan[-1].questions == (escalated["question"],)
    # The last round may not escalate: what the lead would escalate is looked up instead.
    assert triage[-1].result["stop_reason"] == "MAX_ROUNDS reached."
    assert not any(d["action"] == "escalate" for d in triage[-1].result["decisions"])
    lookups = [s for s in store.get_steps(run_id) if s.kind == "followup"]
    assert lookups and all(s.status == "done" and s.source_count <= 5 for s in lookups)
    assert run.totals.stop_reason == "MAX_ROUNDS reached." and run.totals.rounds == 2
    events = store.get_events(run_id)
    assert sum(e.type == "round_completed" for e in events) == 2


def test_research_stops_when_no_new_question_remains(runs: Runner) -> None:
    # The second round's only follow-up repeats the one that created it: filtered as
    # redundant before the lead is asked, and research stops before MAX_ROUNDS.
    store, run_id = _small(runs, MAX_ROUNDS=4)
    triage = [s.result for s in store.get_steps(run_id) if s.kind == "triage"]
    assert len(triage) == 2
    assert triage[1]["stop_reason"] == "No new, relevant, non-redundant question remains."
    assert [d["action"] for d in triage[1]["decisions"]] == ["filter"]
    assert triage[1]["decisions"][0]["reason"].startswith("redundant with:")
    assert store.get_run(run_id).totals.rounds == 2  # type: ignore[union-attr]


def test_a_single_round_skips_triage(runs: Runner) -> None:
    store, run_id = _small(runs, MAX_ROUNDS=1)
    triage = store.get_step(run_id, "triage:1")
    assert triage is not None and triage.result["decisions"] == []
    assert "MAX_ROUNDS is 1" in triage.result["stop_reason"]
    assert all(s.round == 1 for s in store.get_plan(run_id) or [])


def test_breadth_depth_schedule_halves_breadth_and_searches(runs: Runner) -> None:
    assert [_breadth(8, r, "breadth_depth", 4) for r in (1, 2, 3)] == [4, 2, 1]
    assert _breadth(8, 3, "rounds", 4) == 4
    store, run_id = _small(runs, MAX_ROUNDS=3, DEPTH=3, SEARCHES_PER_SUBTOPIC=4,
                         schedule="breadth_depth")
    plan = store.get_plan(run_id) or []
    assert [s.searches for s in plan if s.round > 1] == [2]  # 4 halved at level 1


def test_near_duplicate_questions_count_as_redundant() -> None:
    a = "How do recent heat pump sales compare across European regions?"
    assert _overlap(a, "How do recent heat pump sales compare across regions in Europe?") > 0.7
    assert _overlap(a, "What do installers charge in Norway?") < 0.2


def test_depth_not_max_rounds_limits_the_breadth_depth_schedule(runs: Runner) -> None:
    # MAX_ROUNDS=1 would stop after one round; under this schedule DEPTH=2 decides.
    store, run_id = _small(runs, MAX_ROUNDS=1, DEPTH=2, BREADTH=1,
                         schedule="breadth_depth")
    plan = store.get_plan(run_id) or []
    assert [s.round for s in plan].count(2) == 1  # BREADTH=1: one new subtopic
    run = store.get_run(run_id) or {}
    assert run.totals.rounds == 2 and run.totals.stop_reason == "DEPTH reached."


def _user_prompt(request: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content")) for m in request["json"].get("messages", [])
                     if m.get("role") == "user")


def test_a_later_round_worker_is_told_earlier_learnings_and_queries(
    standin: Any, runs: Runner
) -> None:
    store, run_id = _small(runs, MAX_ROUNDS=2)
    plan = store.get_plan(run_id) or []
    first_ids = {s.id for s in plan if s.round == 1}
    later = next(s for s in plan if s.round == 2)
    claims = [f.claim for f in store.get_findings(run_id)
              if f.kind == "finding" and f.subtopic_id in first_ids]
    queries = [q.query for q in store.get_queries(run_id) if q.subtopic_id in first_ids]
    assert claims and queries
    prompts = [_user_prompt(r) for r in standin.requests_for("openai")]
    later_prompts = [p for p in prompts if f"<subtopic>{later.title}</subtopic>" in p]
    assert later_prompts, "the round-2 worker wrote no queries"
    assert any(c[:80] in later_prompts[0] for c in claims)  # a cited learning, not a page
    assert all(q in later_prompts[0] for q in queries[:5])  # the earlier queries
    first_title = next(s.title for s in plan if s.round == 1)
    first_prompt = next(p for p in prompts if f"<subtopic>{first_title}</subtopic>" in p)
    assert not any(c[:80] in first_prompt for c in claims)  # round 1 has nothing earlier
    # No query of the round-2 subtopic repeats one of round 1.
    seen = {" ".join(q.lower().split()) for q in queries}
    assert not any(" ".join(q.query.lower().split()) in seen
                   for q in store.get_queries(run_id) if q.subtopic_id == later.id)


class _Worker:
    """A worker model that answers the query prompt with fixed lists, one per call."""

    def __init__(self, *answers: list[str]) -> None:
        self.answers = list(answers)
        self.llm = self

    def structured(self, messages: Any, schema: Any, **_: Any) -> Any:
        return schema(queries=self.answers.pop(0))


class _Ctx:
    def checkpoint(self) -> None:
        """Never cancelled."""


def test_a_query_repeating_an_earlier_one_is_not_searched_again() -> None:
    from research.phases.gather import searching

    worker = _Worker(["Heat pumps  EUROPE", "heat pump subsidies", "heat pump subsidies"],
                     ["heat pump prices 2024"])
    queries = searching._queries(_Ctx(), worker, {"id": "r2t1", "title": "t"},  # type: ignore[arg-type]
                                 [], 2, [], 0.0, avoid=["heat pumps europe"])
    # The repeat (case and spacing aside) and the duplicate are dropped; the first wave
    # still asks once more for the missing query.
    assert queries == ["heat pump subsidies", "heat pump prices 2024"]


def test_a_resume_triages_follow_ups_its_stored_triage_never_saw(runs: Runner) -> None:
    """A triage stored while part of the round's research had failed must not be reused as
    is once a resume has re-run that research: its new follow-ups get decided (only they:
    the earlier decisions stand, in their order, so their lookups keep their steps)."""
    store, run_id = _small(runs, MAX_ROUNDS=2)
    first = store.get_step(run_id, "triage:1")
    assert first is not None and first.status == "done"
    decisions = first.result["decisions"]
    late = decisions[-1]["subtopic_id"]  # its research "failed" when the triage ran
    stale = [d for d in decisions if d["subtopic_id"] != late]
    missed = [d["question"] for d in decisions if d["subtopic_id"] == late]
    assert stale and missed
    store.finish_step(run_id, "triage:1", result={**first.result, "decisions": stale,
                                                  "seen": [d["question"] for d in stale]})
    store.set_run_status(run_id, "failed")

    run = runs.resume(run_id)
    assert run.status == "completed", run.error
    redone = store.get_step(run_id, "triage:1")
    assert redone is not None and redone.status == "done"
    again = redone.result["decisions"]
    assert again[:len(stale)] == stale  # decided before: kept as they were
    assert {d["question"] for d in again[len(stale):]} == set(missed)
    assert all(d["action"] in ("filter", "answer", "escalate") for d in again)
    assert set(missed) <= set(redone.result["seen"])
    plan_ids = [s.id for s in store.get_plan(run_id) or []]
    assert len(plan_ids) == len(set(plan_ids))  # no subtopic planned twice
