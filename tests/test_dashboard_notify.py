"""Tell me when it's done (issue 14, point 7): a run that finishes, fails or waits shows a
toast on whatever page is open, and the browser tab's title shows the state."""

from __future__ import annotations

from typing import Any

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from dashboard import notify
from research.core.config import build_config
from research.core.records import Run
from storage import Store
from tests.dashboard_fixtures import APP, dash_env_fixture  # noqa: F401 - the fixture

QUESTION = "Which heat pumps are cheapest to run?"


def _run(run_id: str, status: str, warnings: tuple[str, ...] = ()) -> Run:
    return Run(id=run_id, status=status, question=QUESTION, warnings=warnings)


def test_only_a_change_the_person_cares_about_is_a_notice() -> None:
    seen = {"a": "running", "b": "running", "c": "completed", "d": "running"}
    runs = [_run("a", "completed", warnings=("stopped by the budget",)), _run("b", "failed"),
            _run("c", "completed"), _run("d", "running"), _run("e", "completed")]
    notices = notify.changes(seen, runs)
    assert [(n.run_id, n.status) for n in notices] == [("a", "completed"), ("b", "failed")]
    assert "Completed with warnings" in notices[0].toast_text()  # as the Library says it
    assert notices[1].toast_text().startswith("❌ Failed: Which heat pumps")
    assert [n.status for n in notify.changes({"a": "running"}, [_run("a", "waiting")])] == [
        "waiting"]


def test_the_tab_title_puts_what_needs_the_person_first() -> None:
    finished = notify.Notice("a", "completed", QUESTION)
    assert notify.tab_title([_run("a", "running"), _run("b", "waiting")], None).startswith(
        "❓ Waiting for you")
    assert notify.tab_title([_run("a", "running"), _run("b", "running")], finished).startswith(
        "⏳ Running (2)")
    assert notify.tab_title([_run("a", "completed")], finished).startswith("✅ Completed")
    assert notify.tab_title([_run("a", "completed")], None) == notify.APP_TITLE


def test_any_page_toasts_a_run_that_finished_while_it_was_open(
    dash_env: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    titles: list[str] = []
    original = st.set_page_config

    def recording(**kwargs: Any) -> None:
        if kwargs.get("page_title"):
            titles.append(kwargs["page_title"])
        original(**kwargs)

    monkeypatch.setattr(st, "set_page_config", recording)
    run_id = dash_env.create_run(QUESTION, build_config(env={}, preset="quick").model_dump(
        mode="json"))
    at = AppTest.from_file(APP, default_timeout=30).run()  # (a run left running at start
    dash_env.set_run_status(run_id, "running")             # would be marked interrupted)
    at.run()
    assert not at.exception and not at.toast  # nothing the person needs to hear yet
    assert titles[-1].startswith("⏳ Running (1)"), titles
    dash_env.set_run_status(run_id, "completed")
    at.run()
    assert not at.exception
    assert [t.value for t in at.toast] == [f"✅ Completed: {QUESTION}"]
    assert titles[-1].startswith("✅ Completed")
    at.run()
    assert not at.toast  # told once
