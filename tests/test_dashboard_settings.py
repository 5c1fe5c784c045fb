"""Settings page: keys are masked everywhere, their origin is shown, saving is owner-only."""

from __future__ import annotations

import re
import stat
import tomllib
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.settings_files import mask, save_secrets
from storage import Store
from tests.dashboard_fixtures import APP, dash_env_fixture, open_page  # noqa: F401 - fixture
from tests.standin import OPENAI_KEY, StandinServer

pytestmark = pytest.mark.usefixtures("dash_env")

ENV_KEY = "sk-test-environment-0123456789abcdef"
FILE_KEY = "tvly-test-secretsfile-0123456789"


def _settings() -> AppTest:
    return open_page("app_pages/settings.py").run()


def _every_value(at: AppTest) -> str:
    """Every string any element carries: values, labels, bodies, help texts, placeholders."""
    out = []
    for node in at.get("markdown") + at.get("caption") + at.get("text_input") + at.get("error") \
            + at.get("success") + at.get("info") + at.get("warning") + at.get("selectbox"):
        out.append(str(node.proto))
        value = getattr(node, "value", None)
        if value is not None:
            out.append(str(value))
    return "\n".join(out)


def test_mask_never_shows_more_than_the_edges() -> None:
    assert mask("sk-proj-abcdefghijklmnop1234") == "sk-…1234"
    assert mask("short") == "•••••• (set)"
    assert mask("") == "not set"


def test_keys_are_masked_and_their_origin_is_shown(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    save_secrets({"TAVILY_API_KEY": FILE_KEY}, tmp_path / "secrets.toml")
    at = _settings()
    assert not at.exception
    everything = _every_value(at)
    assert ENV_KEY not in everything and FILE_KEY not in everything
    assert ENV_KEY[-4:] in everything and mask(ENV_KEY) in everything and mask(FILE_KEY) in everything
    markdown = "\n".join(m.value for m in at.markdown)
    assert "**OpenAI** · set in the environment" in markdown
    assert "**Tavily search** · saved here (secrets file)" in markdown
    assert "**Gemini** · not set" in markdown
    # Plain words on the page: technical names only in tooltips.
    shown = markdown + "\n".join(t.label for t in at.text_input) + "\n".join(n.label for n in at.number_input)
    assert not re.search(r"\b[A-Z]+(?:_[A-Z]+)+\b", shown), shown
    assert any("OPENAI_API_KEY" in (m.help or "") for m in at.markdown)


def test_saving_a_key_writes_an_owner_only_secrets_file_and_shows_it_masked(tmp_path: Path) -> None:
    at = _settings()
    new_key = "AIzaTestGeminiKey0123456789abcdefghij"
    at.text_input(key="key_GEMINI_API_KEY").input(new_key)
    next(b for b in at.button if b.label == "Save keys").click().run()
    path = tmp_path / "secrets.toml"
    assert tomllib.loads(path.read_text())["GEMINI_API_KEY"] == new_key
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert new_key not in _every_value(at)
    assert "**Gemini** · saved here (secrets file) · `AIz…ghij`" in "\n".join(m.value for m in at.markdown)


def test_default_constants_are_saved_and_used_by_the_new_research_form(dash_env: Store, tmp_path: Path) -> None:
    at = _settings()
    subtopics = next(n for n in at.number_input if n.label == "Subtopics")
    subtopics.set_value(9)
    next(b for b in at.button if b.label == "Save defaults").click().run()
    assert any("saved" in s.value for s in at.success)
    fresh = AppTest.from_file(APP, default_timeout=30).run()
    assert fresh.slider(key="c_SUBTOPIC_COUNT").value == 9


def test_a_failed_key_test_speaks_plainly_stays_shown_and_holds_start(
        standin: StandinServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings' test says which problem it is (a refused key, a server that cannot be found),
    never the socket's "[Errno -2] ..."; the result stays on the page when another test runs;
    and New research keeps Start disabled while the model's key is the one that failed."""
    standin.reset()
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{standin.base_url}/v1")
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-test-unreachable-0123456789")
    monkeypatch.setenv("GEMINI_BASE_URL", "http://127.0.0.1:9")  # nothing listens there
    standin.add_fault("openai", "status", times=5, status=401)
    at = _settings()
    next(b for b in at.button if b.key == "test_llm_openai").click().run()
    refused = [e.value for e in at.error if "OpenAI" in e.value]
    assert refused and "refused the key" in refused[0] and "HTTP" not in refused[0]
    next(b for b in at.button if b.key == "test_llm_gemini").click().run()
    texts = [e.value for e in at.error]
    assert any("refused the key" in t for t in texts)  # the first result is still shown
    unreachable = next(t for t in texts if "Gemini" in t)
    assert "nothing answers at that address" in unreachable, unreachable
    assert "Errno" not in unreachable
    labels = [b.label for b in at.button if b.key and b.key.startswith("test_")]
    assert "Test OpenAI (gpt-5-mini)" in labels and not any("semanticscholar" in x for x in labels)

    at.switch_page("app_pages/new_research.py").run()
    start = next(b for b in at.button if b.label == "Start research")
    assert start.disabled
    assert any("last test of OpenAI" in c.value for c in at.caption)


def test_network_errors_are_said_in_words() -> None:
    from dashboard.connection import plain
    from research.core.errors import ProviderError

    cause = ProviderError("Gemini could not be reached: [Errno -2] Name or service not known")
    said = plain(cause, "gemini", [])
    assert said == ("Could not reach Google Gemini: the server's name could not be found (check "
                    "the address, or this computer's network).")
