"""Clarifying questions and plan review: the run waits for the person, then goes on."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from research import (
    ConfigError,
    answer_clarification,
    approve_plan,
    pending_clarification,
)
from research.core.records import Subtopic
from tests.cli_helpers import RunCli
from tests.runs import Runner
from tests.standin import StandinServer
from tests.standin.server import openai_error

QUESTION = "How is heat pump adoption changing in Europe?"




def test_clarification_waits_and_the_answers_reach_the_brief(
    standin: StandinServer, runs: Runner
) -> None:
    store, run_id = runs(preset="quick", REQUIRE_CLARIFICATION=True)
    run = store.get_run(run_id)
    assert run is not None and run.status == "waiting"
    asked = pending_clarification(store, run_id)
    assert asked is not None and 1 <= len(asked["questions"]) <= 3
    assert store.get_plan(run_id) is None  # nothing researched yet
    assert "waiting" in [e.type for e in store.get_events(run_id)]

    answer_clarification(store, run_id, ["To decide on a purchase", "Germany and Poland"])
    assert runs.resume(run_id).status == "completed"
    plan_prompts = [r for r in standin.requests_for("openai")
                    if "exactly 3 subtopics" in str(r["json"])]
    assert plan_prompts and "Germany and Poland" in str(plan_prompts[-1]["json"])
    step = store.get_step(run_id, "clarify")
    assert step is not None
    result = step.result
    assert result["answers"][:2] == ["To decide on a purchase", "Germany and Poland"]


def test_a_vague_question_is_clarified_even_when_not_required(
    runs: Runner
) -> None:
    store, run_id = runs("heat pumps", preset="quick")
    assert store.get_run(run_id).status == "waiting"  # type: ignore[union-attr]
    assert pending_clarification(store, run_id)


def _calls_by_task(standin: StandinServer) -> dict[str | None, list[dict]]:  # type: ignore[type-arg]
    from tests.standin.server import _task_of

    calls: dict[str | None, list[dict]] = {}  # type: ignore[type-arg]
    for r in standin.requests_for("openai"):
        calls.setdefault(_task_of("openai", r["json"]), []).append(r)
    return calls


def test_the_plan_is_asked_for_beside_pre_flight_and_the_clarify_step(
    standin: StandinServer, http_runs: Runner
) -> None:
    """The plan's long answer waits neither for the connection check nor for the lead's
    judgement of the question: when the lead asks nothing, the early answer is the plan (one
    plan call, sent before the check and the clarify call were answered)."""
    standin.add_fault("openai", "hang", times=5, task="Ping", seconds=0.5)
    standin.add_fault("openai", "hang", times=5, task="ClarifyingQuestions", seconds=0.5)
    store, run_id = http_runs(QUESTION, preset="quick")
    assert store.get_run(run_id).status == "completed"  # type: ignore[union-attr]
    calls = _calls_by_task(standin)
    assert len(calls["ResearchPlan"]) == 1 and len(calls["ClarifyingQuestions"]) == 1
    assert calls["ResearchPlan"][0]["time"] < calls["Ping"][0]["answered"]
    assert calls["ResearchPlan"][0]["time"] < calls["ClarifyingQuestions"][0]["answered"]
    assert len(store.get_plan(run_id) or []) == 3


def test_an_early_plan_call_that_fails_is_asked_again_in_the_plan_step_without_a_word(
    standin: StandinServer, http_runs: Runner
) -> None:
    """The call made ahead is made once and quietly: its failure is no retry in the run log
    and no outage; the plan step asks again and the run goes on."""
    standin.add_fault("openai", "status", times=1, status=503, task="ResearchPlan")
    store, run_id = http_runs(QUESTION, preset="quick")
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", run and run.error
    assert len(_calls_by_task(standin)["ResearchPlan"]) == 2
    assert len(store.get_plan(run_id) or []) == 3
    said = [e.message for e in store.get_events(run_id) if e.type in ("retrying", "warning")]
    assert not said


def test_a_plan_asked_ahead_is_not_used_once_the_answers_change_the_brief(runs: Runner) -> None:
    store, run_id = runs("heat pumps", preset="quick")
    assert store.get_run(run_id).status == "waiting"  # type: ignore[union-attr]
    answer_clarification(store, run_id, ["To decide on a purchase", "Germany and Poland"])
    assert runs.resume(run_id).status == "completed"
    plan = store.get_plan(run_id) or []
    assert plan and all("Germany and Poland" in s.description for s in plan)


def test_plan_review_waits_and_the_edited_plan_is_what_runs(
    runs: Runner
) -> None:
    store, run_id = runs(preset="quick", review_plan=True)
    assert store.get_run(run_id).status == "waiting"  # type: ignore[union-attr]
    original = store.get_plan(run_id) or []
    assert len(original) == 3 and not store.get_sources(run_id)

    edited = [replace(original[2], title="Costs for households in Poland"),  # renamed, moved up
              original[0],                                                  # kept
              Subtopic(id="", title="Installer shortages",
                       questions=("How long are waiting lists?",))]
    approve_plan(store, run_id, edited)  # original[1] removed, one added
    assert runs.resume(run_id).status == "completed"

    plans = store.get_plans(run_id)
    assert plans[0].kind == "original" and list(plans[0].subtopics) == original
    ran = {s.key for s in store.get_steps(run_id) if s.kind == "research"}
    final = [s for s in store.get_plan(run_id) or [] if s.round == 1]
    assert [s.title for s in final] == ["Costs for households in Poland", original[0].title,
                                        "Installer shortages"]
    assert ran == {f"research:{s.id}" for s in final}
    assert f"research:{original[1].id}" not in ran


def test_bad_plan_edits_are_refused(runs: Runner) -> None:
    store, run_id = runs(preset="quick", review_plan=True)
    with pytest.raises(ConfigError, match="at least one subtopic"):
        approve_plan(store, run_id, [Subtopic(id="", title="  ")])
    with pytest.raises(ConfigError, match="at most 10"):
        approve_plan(store, run_id, [Subtopic(id="", title=f"t{i}") for i in range(11)])


def test_cli_asks_for_answers_with_flags(
    run_cli: RunCli, standin_env: dict[str, str], tmp_path: Path
) -> None:
    env = {**standin_env, "DEEP_RESEARCH_DB": str(tmp_path / "c.db")}
    waiting = run_cli([QUESTION, "--preset", "quick", "--clarify", "--out", str(tmp_path / "r.md")],
                      env, tmp_path)
    assert waiting.returncode == 3 and "--answer" in waiting.stderr
    run_id = waiting.stderr.split("Run id: ")[1].split()[0]
    done = run_cli(["--resume", run_id, "--answer", "To write an article", "--out",
                    str(tmp_path / "r.md")], env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "r.md").read_text().count("## Sources") == 1


def test_an_early_plan_call_refused_with_retry_after_is_not_sent_again_sooner(
    standin: StandinServer, http_runs: Runner
) -> None:
    """Issue 40, point 2: the plan's early call answered 429 with `Retry-After: 7` (here 3:
    the wait holds a test worker, and a resend that ignores it comes 0.0-1.0 s later) is asked
    again only once those seconds have passed, whichever road (the early call or the plan
    step) asks again: one retry path, which honours what the provider said."""
    # The body names no limit (the stand-in's default one says "Limit 3" RPM, which the
    # account's pacer would rightly learn and keep to for the rest of the run).
    body = openai_error("Rate limit reached for requests.", type="requests",
                        code="rate_limit_exceeded")
    standin.add_fault("openai", "status", times=1, status=429, headers={"retry-after": "3"},
                      body=body, task="ResearchPlan")
    store, run_id = http_runs(QUESTION, preset="quick")
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", run and run.error
    plans = _calls_by_task(standin)["ResearchPlan"]
    assert len(plans) == 2 and plans[0].get("status") == 429
    assert plans[1]["time"] - plans[0]["ended"] >= 3 - 0.05, "sent again before Retry-After"
