"""The Run page says why a run was interrupted (issue 40, point 4), as `--resume` does: the
reason the CLI stored (a full disk, Ctrl-C) or the store's own when the process died before
it could mark the run."""

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
    assert "interrupted" in _warnings(at)
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
