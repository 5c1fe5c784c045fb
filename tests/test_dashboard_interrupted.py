"""The Run page says why a run was interrupted (issue 40, point 4), as `--resume` does: the
reason the CLI stored (a full disk, Ctrl-C) or the store's own when the process died before
it could mark the run; and a run whose key was refused leads to Settings (issue 39)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from research.cli import DISK_FULL_MESSAGE
from storage import Store
from storage.runs import ABANDONED_MESSAGE
from tests.dashboard_fixtures import dash_env_fixture, open_run_page, running_run  # noqa: F401

pytestmark = pytest.mark.usefixtures("dash_env")


def _warnings(at: AppTest) -> str:
    return "\n".join(str(w.value) for w in at.warning)


def test_the_run_page_shows_the_reason_the_cli_stored_when_it_stopped(dash_env: Store) -> None:
    run_id = running_run(dash_env)
    dash_env.set_run_status(run_id, "interrupted", error=DISK_FULL_MESSAGE)
    at = open_run_page(run_id)
    assert not at.exception
    assert "Interrupted" in _warnings(at)  # the label of every surface (research/voice.py)
    assert DISK_FULL_MESSAGE.split(";")[0] in _warnings(at)
    assert "Resume" in [b.label for b in at.button]


def test_the_run_page_shows_why_a_run_left_running_by_a_dead_process_was_interrupted(
    dash_env: Store,
) -> None:
    run_id = running_run(dash_env)
    owner = dash_env.get_run(run_id).owner  # type: ignore[union-attr]
    assert dash_env.mark_interrupted(dead_owners=[str(owner)]) == [run_id]
    at = open_run_page(run_id)
    assert not at.exception
    assert ABANDONED_MESSAGE.split(" (")[0] in _warnings(at)


def test_a_run_whose_key_was_refused_leads_to_settings_not_to_empty_tabs(dash_env: Store) -> None:
    run_id = running_run(dash_env)
    message = ("OpenAI did not accept the API key, so the research could not start. Check "
               "OPENAI_API_KEY in Settings, then press Resume.")
    dash_env.start_step(run_id, "preflight", kind="preflight", label="Checking the providers")
    dash_env.fail_step(run_id, "preflight", message)
    dash_env.set_run_status(run_id, "failed", error=message)
    at = open_run_page(run_id)
    assert not at.exception
    assert any("could not start" in e.value and "did not accept the API key" in e.value
               for e in at.error)
    links = [p.proto for p in at.get("page_link")]
    assert any("Settings" in link.label and link.page.endswith("settings") for link in links), links
    assert "Resume" in [b.label for b in at.button]
    assert not at.tabs  # nothing was gathered: no eight empty tabs below

    other = running_run(dash_env)  # a run that failed later keeps its tabs
    dash_env.set_run_status(other, "failed", error="The writer failed.")
    at = open_run_page(other)
    assert at.tabs and not any("Settings" in p.proto.label for p in at.get("page_link"))
