"""Library page: listing, search, delete with confirmation, compare, run again."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from dashboard import compare_table
from storage import Store
from tests.dashboard_fixtures import dash_env_fixture, finished_run, on_postgresql, open_page  # noqa: F401 - fixture

pytestmark = pytest.mark.usefixtures("dash_env")


def _library() -> AppTest:
    return open_page("app_pages/library.py").run()


def _table(at: AppTest):
    return next(df.value for df in at.dataframe if "Question" in df.value.columns)


def _click(at: AppTest, label: str) -> AppTest:
    next(b for b in at.button if b.label == label).click()
    return at.run()


def test_empty_library_says_how_to_start(dash_env: Store) -> None:
    at = _library()
    assert any("No research yet" in i.value for i in at.info)


def test_every_run_is_listed_with_its_settings_and_search_narrows_it(dash_env: Store) -> None:
    finished_run(dash_env, "How fast is solar power growing?", SUBTOPIC_COUNT=4)
    finished_run(dash_env, "Is nuclear power getting cheaper?", SUBTOPIC_COUNT=5)
    at = _library()
    table = _table(at)
    assert len(table) == 2
    assert {"Question", "Date", "Status", "Subtopics", "Sources", "Duration", "Cost (USD)"} <= set(table.columns)
    assert set(table["Subtopics"]) == {4, 5}
    # One click opens a run in this tab: a link per run, newest first, with its status line.
    links = [(link.proto.label.replace("\\", ""), link.proto.query_string)
             for link in at.get("page_link")]
    runs = dash_env.list_runs()
    assert [(label, query) for label, query in links if "power" in label] == [
        (r.question, f"run={r.id}") for r in runs]
    assert any("Completed" in c.value and "Quick" in c.value for c in at.caption)
    at.text_input(key="lib_search").input("NUCLEAR").run()
    table = _table(at)
    assert list(table["Question"]) == ["Is nuclear power getting cheaper?"]
    at.text_input(key="lib_search").input("no such words").run()
    assert any("No run matches" in i.value for i in at.info)


def test_delete_asks_first_and_keep_it_changes_nothing(dash_env: Store) -> None:
    run_id = finished_run(dash_env)
    at = _library()
    at = _click(at, "Delete")
    assert any("cannot be undone" in w.value for w in at.warning)
    assert dash_env.get_run(run_id) is not None
    at = _click(at, "Keep it")
    assert dash_env.get_run(run_id) is not None
    at = _click(at, "Delete")
    at = _click(at, "Yes, delete it")
    assert dash_env.get_run(run_id) is None
    assert dash_env.get_sources(run_id) == []
    assert any("No research yet" in i.value for i in at.info)


def test_a_running_run_cannot_be_deleted(dash_env: Store) -> None:
    run_id = finished_run(dash_env, status="running")
    dash_env.heartbeat(run_id, "someone-else")
    at = _library()
    at = _click(at, "Delete")
    assert any("still working" in e.value for e in at.error)
    assert dash_env.get_run(run_id) is not None


def test_compare_two_runs_side_by_side_with_charts(dash_env: Store) -> None:
    a = finished_run(dash_env, "Solar growth?", sources=4, SUBTOPIC_COUNT=3)
    b = finished_run(dash_env, "Wind growth?", sources=10, SUBTOPIC_COUNT=8)
    at = _library()
    at.multiselect(key="lib_compare").set_value([a]).run()
    assert any("at least one more" in c.value for c in at.caption)
    at.multiselect(key="lib_compare").set_value([a, b]).run()
    compare = next(df.value for df in at.dataframe if "Citations" in df.value.columns)
    assert sorted(compare["Sources"]) == [4, 10]
    assert sorted(compare["Subtopics"]) == [3, 8]  # the form's words, not the constant's name
    assert all("Solar growth?" in r or "Wind growth?" in r for r in compare["Run"])
    assert not any(a in r or b in r for r in compare["Run"])  # named by question, not by id
    assert set(compare["Approved"]) == {"no"}
    assert len(at.get("plotly_chart")) >= 5


def test_two_runs_of_one_question_stay_two_bars_with_their_own_figures(dash_env: Store) -> None:
    """Compare once drew two runs of the same question as one bar (same truncated label) with
    their sources, citations, cost and time added up."""
    quick = finished_run(dash_env, "How fast is solar power growing in Europe this decade?",
                         sources=4)
    deep = finished_run(dash_env, "How fast is solar power growing in Europe this decade?",
                        sources=10)  # same preset, same minute: told apart by number
    frame = compare_table.compare_frame(dash_env, [quick, deep])
    charts = compare_table.compare_charts(frame, "Subtopics")
    bars = charts["Sources"].data[0]
    assert list(bars.x) == [quick, deep]  # one bar per run
    assert sorted(bars.y) == [4, 10]  # each its own figure, nothing added up
    labels = list(charts["Sources"].layout.xaxis.ticktext)
    assert len(set(labels)) == 2 and all("How fast is solar" in label for label in labels)
    assert not any(quick in label or deep in label for label in labels)  # never the ids


def test_open_and_run_again_go_to_the_right_pages(dash_env: Store) -> None:
    run_id = finished_run(dash_env, "Solar growth?")
    at = _click(_library(), "Open")
    assert at.query_params.get("run") in (run_id, [run_id])
    at = _click(_library(), "Run again")
    assert at.query_params.get("from") in (run_id, [run_id])
    assert at.text_area(key="question").value == "Solar growth?"


@on_postgresql
def test_on_postgresql_the_library_works_the_same(dash_env: Store) -> None:
    """Each check above that reads or deletes runs, again on one PostgreSQL database (its
    case-insensitive search and deletes are the other dialect's); the library is emptied
    between them, as each expects a new one."""
    for check in (test_every_run_is_listed_with_its_settings_and_search_narrows_it,
                  test_delete_asks_first_and_keep_it_changes_nothing,
                  test_compare_two_runs_side_by_side_with_charts,
                  test_open_and_run_again_go_to_the_right_pages):
        check(dash_env)
        for run in dash_env.list_runs():
            dash_env.delete_run(run.id)


def test_compared_reports_stand_side_by_side_with_sections_aligned_and_differences_marked(
        dash_env: Store) -> None:
    from dashboard import compare_view

    one = "# A\n\n---\n\n## Summary\n\nSolar grew 20% [1]. Costs fell [2].\n\n## Costs\n\nPanels are cheap [2].\n"
    two = "# B\n\n---\n\n## Summary\n\nSolar grew 20% [3]. Storage lags [1].\n\n## Policy\n\nSubsidies end [4].\n"
    rows = {r.title: r for r in compare_view.aligned([one, two])}
    assert list(rows) == ["Summary", "Costs", "Policy"]  # the first report's order, then the rest
    summary = rows["Summary"]
    assert summary.columns == (("Solar grew 20%.", "Costs fell."), ("Solar grew 20%.", "Storage lags."))
    assert summary.only_here == (frozenset({"Costs fell."}), frozenset({"Storage lags."}))
    assert rows["Costs"].columns[1] is None and rows["Policy"].columns[0] is None

    a = finished_run(dash_env, "Solar growth?")
    b = finished_run(dash_env, "Wind growth?")
    at = _library()
    at.multiselect(key="lib_compare").set_value([a, b]).run()
    assert not at.exception
    assert any("The reports side by side" in m.value for m in at.markdown)
    assert [e.label for e in at.expander if e.label in ("Executive summary", "Key findings")]
