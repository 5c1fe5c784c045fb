"""Library → watched topics (issue 36, point 3): a finished run is watched from the Library,
and the person's watches are listed there, paused, resumed and stopped (that one person sees
only their own is tested on the store, tests/test_watch.py)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from storage import Store
from storage import watches as watchstore
from tests.dashboard_fixtures import dash_env_fixture, finished_run, open_page  # noqa: F401 - fixture

pytestmark = pytest.mark.usefixtures("dash_env")


def _click(at: AppTest, label: str) -> AppTest:
    next(b for b in at.button if b.label == label).click()
    return at.run()


def _captions(at: AppTest) -> str:
    return "\n".join(c.value for c in at.caption)


def test_a_finished_run_is_watched_from_the_library_then_paused_resumed_and_stopped(
        dash_env: Store) -> None:
    run_id = finished_run(dash_env, "How fast is solar power growing?")
    at = open_page("app_pages/library.py").run()
    assert not at.exception
    assert any(e.label == "Watch this topic" for e in at.expander)
    how_often = next(s for s in at.selectbox if s.label == "How often")
    how_often.select("weekly")
    next(n for n in at.number_input if n.label.startswith("Budget")).set_value(0.5)
    at = _click(at, "Watch")
    assert not at.exception
    (watch,) = watchstore.list_watches(dash_env)
    assert (watch.run_id, watch.every, watch.cost_cap, watch.state) == (run_id, "weekly", 0.5,
                                                                        "active")
    assert "Watched topics" in [s.value for s in at.subheader]
    assert "Every week · next update" in _captions(at) and "$0.50 per update" in _captions(at)

    at = _click(at, "Pause")
    assert watchstore.get_watch(dash_env, watch.id).state == "paused"  # type: ignore[union-attr]
    assert "Every week · paused" in _captions(at)
    at = _click(at, "Resume")
    resumed = watchstore.get_watch(dash_env, watch.id)
    assert resumed is not None and resumed.state == "active"
    assert resumed.next_at > watch.next_at  # one period from the resume
    at = _click(at, "Stop")
    assert watchstore.list_watches(dash_env) == []
    assert dash_env.get_run(run_id) is not None
    assert any("Stopped watching" in s.value for s in at.success)


def test_an_unfinished_run_offers_no_watch(dash_env: Store) -> None:
    finished_run(dash_env, "Still going?", status="failed")
    at = open_page("app_pages/library.py").run()
    assert not at.exception
    assert not any(e.label == "Watch this topic" for e in at.expander)
    assert "Watched topics" not in [s.value for s in at.subheader]
