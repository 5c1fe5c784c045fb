"""The research map (issue 14, point 1): question -> subtopics -> branches with their state,
sources and coverage, built from stored data and drawn on the Run page."""

from __future__ import annotations

import json

from dashboard import research_map
from research.core.records import Finding, JsonObject, Source, Step, Subtopic
from storage import Store
from tests.dashboard_fixtures import (  # noqa: F401 - the fixture
    dash_env_fixture,
    finished_run,
    open_run_page,
)
from tests.runs import Runner

PLAN = [Subtopic("t1", "Costs"), Subtopic("t2", "Adoption"), Subtopic("t3", "Policy"),
        Subtopic("r2t1", "Grid limits?", round=2, parent="t2")]


def _step(key: str, kind: str, status: str, *, error: str | None = None,
          result: JsonObject | None = None) -> Step:
    return Step(id=0, run_id="r", key=key, kind=kind, status=status, error=error,
                result=result or {})


STEPS = [
    _step("research:t1", "research", "done"),
    _step("research:t2", "research", "done"),
    _step("research:t3", "research", "failed", error="every search failed"),
    _step("triage:1", "triage", "done", result={
        "round": 1,
        "coverage": [{"subtopic_id": "t1", "status": "answered", "note": ""},
                     {"subtopic_id": "t2", "status": "conflicting", "note": "figures differ"}],
        "decisions": [
            {"question": "Is it sunny?", "subtopic_id": "t1", "action": "filter",
             "reason": "irrelevant"},
            {"question": "What does a unit cost?", "subtopic_id": "t1", "action": "answer"},
            {"question": "Grid limits?", "subtopic_id": "t2", "action": "escalate"}]}),
    _step("followup:1:2", "followup", "running"),
    _step("research:r2t1", "research", "running"),
]
SOURCES = [Source(f"s{i}", f"https://s{i}.example/", subtopic_id=sid)
           for i, sid in enumerate(["t1", "t1", "t2", "r2t1"])]
FINDINGS = [Finding("r2t1", "Which grids are full?", kind="follow_up"),
            Finding("t1", "Is it sunny?", kind="follow_up"),
            Finding("t1", "Units cost 10k.", kind="finding")]


def test_every_branch_has_its_state_parent_sources_and_coverage() -> None:
    tree = research_map.branches("Heat pumps?", PLAN, STEPS, SOURCES, FINDINGS)
    by_label = {b.label: b for b in tree}
    assert tree[0].id == research_map.ROOT and tree[0].sources == 4
    assert (by_label["Costs"].state, by_label["Costs"].sources,
            by_label["Costs"].coverage) == ("explored", 2, "answered")
    assert by_label["Adoption"].coverage == "conflicting"
    assert (by_label["Policy"].state, by_label["Policy"].reason) == ("dropped",
                                                                      "every search failed")
    grid = by_label["Grid limits?"]
    assert (grid.kind, grid.parent, grid.state, grid.sources) == ("escalation", "t2", "running", 1)
    sunny = by_label["Is it sunny?"]
    assert (sunny.state, sunny.reason, sunny.parent) == ("dropped", "irrelevant", "t1")
    lookup = by_label["What does a unit cost?"]
    assert (lookup.kind, lookup.state) == ("quick lookup", "running")
    assert by_label["Which grids are full?"].state == "open"  # not triaged yet
    # A finished run's untouched follow-ups are left for later, not "open".
    done = {b.label: b for b in research_map.branches("Heat pumps?", PLAN, STEPS, SOURCES,
                                                      FINDINGS, finished=True)}
    assert done["Which grids are full?"].state == "left"
    assert "ended before" in done["Which grids are full?"].reason
    assert done["Is it sunny?"].state == "dropped"  # what was decided stays as it was
    figure = research_map.figure(list(done.values()))
    assert all(len(label) <= 28 for label in figure.data[0].labels)
    assert figure.layout.uniformtext.mode == "hide"  # too small to read: hidden, not smeared
    assert [b.label for b in tree].count("Is it sunny?") == 1  # triaged: not open twice
    ids = [b.id for b in tree]
    assert len(ids) == len(set(ids))
    assert all(ids.index(b.parent) < ids.index(b.id) for b in tree[1:])


def test_the_figure_is_a_sunburst_with_inert_labels() -> None:
    tree = research_map.branches("<a href='javascript:x'>Q</a>", PLAN, STEPS, SOURCES, FINDINGS)
    fig = research_map.figure(tree)
    trace = fig.data[0]
    assert trace.type == "sunburst" and list(trace.ids) == [b.id for b in tree]
    assert not any("<" in label for label in trace.labels)
    assert trace.marker.colors[1] == research_map.STATE_COLOURS["explored"]


def test_the_map_of_a_real_run_follows_its_plan_and_sources(
    runs: Runner
) -> None:
    store, run_id, run = runs.completed(preset="quick", MAX_ROUNDS=2)
    plan = store.get_plan(run_id) or []
    sources = store.get_sources(run_id, with_text=False)
    tree = research_map.branches(run.question, plan, store.get_steps(run_id), sources,
                                 store.get_findings(run_id))
    by_id = {b.id: b for b in tree}
    assert {s.id for s in plan} <= set(by_id)
    assert all(by_id[s.id].state == "explored" for s in plan)
    escalated = [s for s in plan if s.parent]
    assert escalated and all(by_id[s.id].parent == s.parent for s in escalated)
    assert sum(b.sources for b in tree[1:]) == len(sources)
    assert any(b.coverage for b in tree)  # the lead's triage judged coverage
    json.dumps([b.__dict__ for b in tree])  # plain data, storable with the run


def test_the_run_page_draws_the_map_and_opens_a_branch(dash_env: Store) -> None:
    run_id = finished_run(dash_env, sources=6)
    at = open_run_page(run_id, "Map")
    assert not at.exception
    charts = at.get("plotly_chart")
    assert charts and "sunburst" in charts[0].proto.spec
    box = next(s for s in at.selectbox if s.key == "map_branch")
    box.set_value("t1").run()
    assert not at.exception
    table = next(df.value for df in at.dataframe if "Kind" in df.value.columns)
    assert len(table) == 3 and set(table["Subtopic"]) == {"Growth figures"}


def test_unchosen_proposals_and_earlier_research_are_branches_too() -> None:
    plan = [*PLAN[:3], Subtopic("r2t1", "Grid limits?", round=2, parent="t2")]
    steps = [*STEPS, _step("steer:1", "steer", "done", result={
        "round": 1, "proposals": [
            {"n": 1, "id": "r2t1", "title": "Grid limits?", "parent": "t2"},
            {"n": 2, "id": "r2t2", "title": "Installer shortage", "parent": "t1"}],
        "answer": {"follow": [1], "add": [], "enough": False}})]
    sources = [*SOURCES, Source("s9", "https://s9.example/", subtopic_id=research_map.INHERITED)]
    tree = research_map.branches("Heat pumps?", plan, steps, sources, FINDINGS)
    by_label = {b.label: b for b in tree}
    skipped = by_label["Installer shortage"]
    assert (skipped.state, skipped.parent, skipped.reason) == ("dropped", "t1",
                                                               "you chose not to follow it")
    assert [b.label for b in tree].count("Grid limits?") == 1  # followed: a subtopic, once
    earlier = by_label["Earlier research (build-on)"]
    assert (earlier.parent, earlier.sources) == (research_map.ROOT, 1)
