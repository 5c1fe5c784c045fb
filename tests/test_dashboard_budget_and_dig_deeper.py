"""Run page: the live cost meter against the cap, the "stopped by the budget" notice, and
"Dig deeper" starting a linked follow-up run; the Library's "Builds on" column."""

from __future__ import annotations

import re

import pytest

from dashboard import budget
from research.core.config import build_config
from research.core.records import Report, Run, RunTotals, UsageTotals
from storage import Store
from tests.dashboard_fixtures import (  # noqa: F401 - fixtures
    FakeExecutor,
    dash_env_fixture,
    fake_jobs_fixture,
    finished_run,
    open_page,
    open_run_page,
)

STOP = "Research stopped because the cost cap of $0.02 was reached ($0.03 spent)."




def test_live_panel_shows_cost_so_far_against_the_cap(dash_env: Store) -> None:
    run_id = finished_run(dash_env, status="paused", max_cost_usd=0.05, max_sources=12)
    at = open_run_page(run_id)
    assert not at.exception
    texts = [p.proto.text for p in at.progress]
    assert "Cost so far \\$0.02 of the \\$0.05 cap" in texts  # one money format; $ escaped
    meter = next(p for p in at.progress if p.proto.text.startswith("Cost so far"))
    assert meter.value == 37  # percent: 0.019 of 0.05
    assert "Sources so far 6 of the 12 cap" in texts
    assert not any("Stopped by the budget" in w.value for w in at.warning)


def test_a_run_stopped_by_the_budget_says_so_clearly(dash_env: Store) -> None:
    run_id = finished_run(dash_env, max_cost_usd=0.02)
    dash_env.update_totals(run_id, stop_reason=STOP)
    at = open_run_page(run_id)
    notice = [w.value for w in at.warning if "Stopped by the budget" in w.value]
    assert notice and "cost cap of \\$0.02 was reached" in notice[0]
    assert "covers what was gathered" in notice[0]
    at = open_run_page(run_id, "Rounds")
    assert any("cost cap" in i.value for i in at.info)


def test_budget_stop_is_read_from_totals_or_the_report_caveats() -> None:
    def stopped(reason: str) -> Run:
        return Run(id="r1", question="q", status="completed", totals=RunTotals(stop_reason=reason))

    assert budget.budget_stop(stopped(STOP)) == \
        "Stopped by the budget: the cost cap of $0.02 was reached ($0.03 spent)."
    assert budget.budget_stop(stopped("MAX_ROUNDS reached.")) is None
    note = "Stopped by the budget: research ended early because the token cap of 1,000 was reached."
    assert budget.budget_stop(stopped(""), Report("r1", "# R", {"notes": [note]})) == note
    meters = budget.meters(build_config(env={}, max_tokens=1000).model_dump(),
                           UsageTotals(tokens=1500), 3)
    assert [(m.label, m.fraction) for m in meters] == [("Tokens", 1.0)]


def test_dig_deeper_starts_a_linked_child_run_with_the_parents_settings(
    dash_env: Store, fake_jobs: FakeExecutor, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    parent = finished_run(dash_env, SUBTOPIC_COUNT=4, report_language="German")
    at = open_run_page(parent, "Report")
    section = at.selectbox(key=f"dig_{parent}")
    assert "Key findings" in section.options and "Sources" not in section.options
    section.select("Key findings").run()
    # What it will cost is said before anything is spent.
    cost = next(c.value for c in at.caption if "A follow-up run" in c.value)
    assert re.search(r"~\\?\$\d+\.\d\d", cost) and "model calls" in cost, cost
    next(b for b in at.button if b.label == "Dig deeper").click().run()
    assert not at.exception and not [e.value for e in at.error]
    child = next(r for r in dash_env.list_runs() if r.id != parent)
    assert child.parent_run_id == parent
    assert "dig deeper into: Key findings" in child.question
    # The section's text is untrusted: never in the question, only shown to the planner as data.
    assert "Storage is the bottleneck" not in child.question
    assert child.config["dig_deeper_section"] == "Key findings"
    assert child.config["subtopic_count"] == 4 and child.config["report_language"] == "German"
    assert at.query_params.get("run") in (child.id, [child.id])  # its Run page opened
    fake_jobs_done = dash_env.get_run(child.id)
    assert fake_jobs_done is not None

    at = open_run_page(child.id)
    links = [p for p in at.get("page_link") if "Builds on" in str(p.proto.label)]
    assert links and "How fast is solar power growing" in links[0].proto.label.replace("\\", "")


def test_dig_deeper_without_a_model_key_starts_nothing_and_says_why(dash_env: Store) -> None:
    parent = finished_run(dash_env)
    at = open_run_page(parent, "Report")
    next(b for b in at.button if b.label == "Dig deeper").click().run()
    assert any("Nothing was started" in e.value and "OPENAI_API_KEY" in e.value for e in at.error)
    assert dash_env.count_runs() == 1


def test_library_shows_which_run_a_run_builds_on(dash_env: Store) -> None:
    parent = finished_run(dash_env, "How fast is solar power growing?")
    config = build_config(env={}, preset="quick").model_dump(mode="json")
    dash_env.create_run("Solar in Spain?", config, parent_run_id=parent)
    at = open_page("app_pages/library.py").run()
    table = next(df.value for df in at.dataframe if "Builds on" in df.value.columns)
    row = table[table["Question"] == "Solar in Spain?"].iloc[0]
    assert row["Builds on"] == "How fast is solar power growing?"  # by question, no id
    assert table[table["Question"] == "How fast is solar power growing?"].iloc[0]["Builds on"] == ""
    assert "Run id" not in table.columns
