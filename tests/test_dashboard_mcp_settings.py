"""Settings page, MCP servers: a server is added, replaced and removed in the owner-only
secrets file, its token is never shown again (only masked), a bad entry is refused in plain
words, and a listed server is offered among the search services (dashboard/mcp_settings.py)."""

from __future__ import annotations

import stat
import tomllib
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.mcp_settings import check, server_fields
from dashboard.settings_files import mask
from tests.dashboard_fixtures import dash_env_fixture, open_page  # noqa: F401 - fixture

pytestmark = pytest.mark.usefixtures("dash_env")

TOKEN = "mcp-secret-token-0123456789abcdef"


def _every_value(at: AppTest) -> str:
    out = []
    for node in at.get("markdown") + at.get("text_input") + at.get("error") + \
            at.get("success") + at.get("multiselect"):
        out.append(str(node.proto))
        value = getattr(node, "value", None)
        if value is not None:
            out.append(str(value))
    return "\n".join(out)


def _add(at: AppTest, name: str, url: str, token: str = "") -> AppTest:
    next(t for t in at.text_input if t.label == "Name").input(name)
    next(r for r in at.radio if r.label == "How to reach it").set_value("A web address")
    next(t for t in at.text_input if t.label == "Web address").input(url)
    next(t for t in at.text_input if t.label == "Token (optional)").input(token)
    return next(b for b in at.button if b.label == "Save server").click().run()


def test_a_server_is_saved_owner_only_shown_masked_and_offered_as_a_search(
    tmp_path: Path,
) -> None:
    at = _add(open_page("app_pages/settings.py").run(), "intranet",
              "https://mcp.example.org/mcp", TOKEN)
    assert not at.exception
    path = tmp_path / "secrets.toml"
    saved = tomllib.loads(path.read_text())["mcp_servers"]["intranet"]
    assert saved == {"url": "https://mcp.example.org/mcp", "token": TOKEN}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    page = _every_value(at)
    assert TOKEN not in page and mask(TOKEN) in page and "at mcp.example.org" in page
    search = next(m for m in at.multiselect if m.label == "Search providers")
    assert "intranet (MCP server)" in search.options

    # Saved again without a token: the saved one is kept. Then removed.
    at = _add(at, "intranet", "https://mcp2.example.org/mcp")
    saved = tomllib.loads(path.read_text())["mcp_servers"]["intranet"]
    assert saved == {"url": "https://mcp2.example.org/mcp", "token": TOKEN}
    next(b for b in at.button if b.key == "mcp_remove_intranet").click().run()
    assert "mcp_servers" not in tomllib.loads(path.read_text())
    assert "intranet (MCP server)" not in next(
        m for m in at.multiselect if m.label == "Search providers").options


def test_a_bad_server_is_refused_in_plain_words_and_nothing_is_saved(tmp_path: Path) -> None:
    at = _add(open_page("app_pages/settings.py").run(), "My Wiki", "https://wiki.example.org")
    assert any("lower-case letters" in e.value for e in at.error)
    assert not (tmp_path / "secrets.toml").exists()
    with pytest.raises(ValueError, match="either a command .* or a url"):
        server_fields("wiki")
    assert server_fields("wiki", command_line="python 'my server.py' --fast") == {
        "command": "python", "args": ["my server.py", "--fast"]}


def test_the_test_button_makes_one_real_search_and_words_a_refusal() -> None:
    from research.core.mcp_servers import McpServer
    from tests.test_mcp_sources import TOKEN as SERVER_TOKEN
    from tests.test_mcp_sources import serving

    with serving("wiki") as url:
        ok, message = check(McpServer(name="intranet", url=url, token=SERVER_TOKEN))
        refused, why = check(McpServer(name="intranet", url=url, token=TOKEN))
    assert ok and message.startswith("intranet works: found \u201c")
    assert not refused and "answered HTTP 401 (check its token)" in why and TOKEN not in why
