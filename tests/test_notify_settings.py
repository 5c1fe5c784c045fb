"""Settings → Notifications (issue 36, point 4): targets are saved like keys (secrets file,
owner-only), never shown again (only their service), never in the database; "Send a test"
reaches them (Apprise's json:// to a local receiver)."""

from __future__ import annotations

import stat
import tomllib
from pathlib import Path

import pytest
from sqlalchemy import select
from streamlit.testing.v1 import AppTest

from research.living import notify
from storage import Store
from storage.schema import metadata
from tests.dashboard_fixtures import dash_env_fixture, open_page  # noqa: F401 - fixture
from tests.notify_receiver import receiver

pytestmark = pytest.mark.usefixtures("dash_env")

SECRET = "tok-notify-ABCDEF0123456789"


def _everything(at: AppTest) -> str:
    out = []
    for node in at.get("markdown") + at.get("caption") + at.get("text_input") + at.get("error") \
            + at.get("success") + at.get("info") + at.get("warning"):
        out.append(str(node.proto))
        value = getattr(node, "value", None)
        if value is not None:
            out.append(str(value))
    return "\n".join(out)


def _click(at: AppTest, label: str) -> AppTest:
    next(b for b in at.button if b.label == label).click()
    return at.run()


def test_targets_are_saved_like_keys_never_shown_and_send_a_test_reaches_them(
        dash_env: Store, tmp_path: Path) -> None:
    with receiver() as box:
        target = box.target().replace("json://", f"json://me:{SECRET}@")
        at = open_page("app_pages/settings.py").run()
        assert not at.exception
        assert any("No notification target is set" in m.value for m in at.markdown)
        assert next(b for b in at.button if b.label == "Send a test").disabled
        at.text_input(key="notify_new_targets").input(target)
        next(t for t in at.text_input if t.label.startswith("Address of this studio")).input(
            "https://studio.example.org")
        at = _click(at, "Save notifications")
        assert not at.exception
        saved = tomllib.loads((tmp_path / "secrets.toml").read_text())
        assert saved[notify.NOTIFY_KEY] == target
        assert saved[notify.BASE_URL_KEY] == "https://studio.example.org"
        assert stat.S_IMODE((tmp_path / "secrets.toml").stat().st_mode) == 0o600
        assert any("1 target(s) saved here (secrets file): json." in m.value for m in at.markdown)
        assert SECRET not in _everything(at)

        at = _click(at, "Send a test")
        assert any("Sent to 1 target(s)" in s.value for s in at.success)
        got = box.wait_for(1)
    assert got[0]["message"] == ("Test from Deep Research Studio: notifications reach you here. "
                                 "https://studio.example.org")
    for table in metadata.sorted_tables:
        assert SECRET not in repr(dash_env.query(select(table))), table.name

    at = _click(at, "Remove the saved targets")
    assert notify.NOTIFY_KEY not in tomllib.loads((tmp_path / "secrets.toml").read_text())


def test_a_target_that_is_not_an_address_is_refused_in_plain_words(tmp_path: Path) -> None:
    at = open_page("app_pages/settings.py").run()
    at.text_input(key="notify_new_targets").input("just-some-words")
    at = _click(at, "Save notifications")
    assert any("not addresses like" in e.value for e in at.error)
    assert not (tmp_path / "secrets.toml").exists() or notify.NOTIFY_KEY not in tomllib.loads(
        (tmp_path / "secrets.toml").read_text())
