"""A goal that can end the run early, and the shape of the output (issue 14, point 3):
"Done when ..." is judged after each round and stops research once met (recorded why);
"I want ..." reaches the writer and reviewer; both are in the method notes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from research import build_config
from research.core.records import Run
from research.export import to_markdown
from research.export.run_document import build_document_for_run
from storage import Store
from tests.cli_helpers import RunCli
from tests.dashboard_fixtures import (  # noqa: F401 - fixtures
    APP,
    FakeExecutor,
    dash_env_fixture,
    fake_jobs_fixture,
)
from tests.runs import QUESTION, Runner
from tests.standin import StandinServer


def _run(runs: Runner, **overrides: Any) -> tuple[Store, str, Run]:
    return runs.completed(preset="quick", **{"MAX_ROUNDS": 3, **overrides})


def _method(store: Store, run_id: str) -> str:
    doc = build_document_for_run(store, run_id)
    assert doc is not None
    return to_markdown(doc)


def test_a_met_exit_case_stops_research_after_the_round_and_says_why(
    standin: StandinServer, runs: Runner
) -> None:
    before = len(standin.requests_for("openai"))
    store, run_id, run = _run(runs, done_when="current evidence and data",
                              want="a comparison table")
    goal = run.totals.goal
    assert goal is not None
    assert goal.met is True and goal.round == 1 and goal.why, (goal, [f.claim for f in store.get_findings(run_id)][:5])
    assert run.totals.stop_reason.startswith("The exit case was met after round 1")
    assert all(s.round == 1 for s in store.get_plan(run_id) or [])  # no round 2
    assert not [s for s in store.get_steps(run_id) if s.kind == "triage"]
    markdown = _method(store, run_id)
    assert "Done when: current evidence and data: met after round 1" in markdown
    assert "Desired output: a comparison table." in markdown
    # The writer was told the shape of the output.
    sent = [str(r) for r in standin.requests_for("openai")[before:]]
    assert any("The person wants this output: a comparison table" in r
               and "(cite by number)" in r for r in sent)


def test_an_unmet_exit_case_lets_the_rounds_run_and_says_so(runs: Runner) -> None:
    store, run_id, run = _run(runs, done_when="quokka zyxwvut tariffs")
    goal = run.totals.goal
    assert goal is not None and goal.met is False and goal.round is not None and goal.round >= 1
    assert not run.totals.stop_reason.startswith("The exit case")
    assert [s for s in store.get_steps(run_id) if s.kind == "triage"]
    assert "quokka zyxwvut tariffs: not met" in _method(store, run_id)


def test_without_a_goal_no_judgement_is_made(runs: Runner) -> None:
    store, run_id, run = _run(runs, MAX_ROUNDS=1)
    assert run.totals.goal is None
    assert not [s for s in store.get_steps(run_id) if s.kind == "goal"]
    assert "Done when" not in _method(store, run_id)


def test_the_cli_sets_the_exit_case_and_the_desired_output(
    run_cli: RunCli, standin_env: dict[str, str], tmp_path: Path
) -> None:
    db = tmp_path / "cli.db"
    result = run_cli([QUESTION, "--preset", "quick", "--done-when", "current evidence and data",
                   "--want", "a one-page brief", "--out", str(tmp_path / "r.md")],
                  {**standin_env, "DEEP_RESEARCH_DB": str(db)}, tmp_path)
    assert result.returncode == 0, result.stderr
    run = Store(db).get_run(result.stdout.strip().splitlines()[-1])
    assert run is not None
    assert (run.config["done_when"], run.config["want"]) == ("current evidence and data",
                                                                   "a one-page brief")
    assert "Desired output: a one-page brief." in (tmp_path / "r.md").read_text()


def test_the_new_research_form_records_the_goal_and_run_again_brings_it_back(
    dash_env: Store, fake_jobs: FakeExecutor, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    at = AppTest.from_file(APP, default_timeout=30).run()
    at.text_input(key="done_when").input("we know the three cheapest options").run()
    at.text_input(key="want").input("a one-page brief").run()
    at.text_area(key="question").input("Which heat pumps are cheapest to run?").run()
    next(b for b in at.button if b.label == "Start research").click().run()
    assert not [e.value for e in at.error], [e.value for e in at.error]
    [run] = dash_env.list_runs()
    assert (run.config["done_when"], run.config["want"]) == (
        "we know the three cheapest options", "a one-page brief")
    again = AppTest.from_file(APP, default_timeout=30)
    again.query_params["from"] = run.id
    again.run()
    assert again.text_input(key="done_when").value == "we know the three cheapest options"
    assert again.text_input(key="want").value == "a one-page brief"


def test_the_estimate_counts_one_goal_check_per_round() -> None:
    from dashboard.estimate import estimate

    plain = build_config(env={}, preset="standard")
    goal = build_config(env={}, preset="standard", done_when="we know the cheapest three")
    assert estimate(goal).model_calls == estimate(plain).model_calls + plain.max_rounds
    assert estimate(goal).cost_usd > estimate(plain).cost_usd
