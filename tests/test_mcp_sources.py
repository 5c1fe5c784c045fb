"""MCP servers as sources: real MCP servers written with the official SDK
(tests/mcp_source_server.py), started by the test as stdio programs or served over streamable
HTTP on a loopback port, searched through the SDK's client (research.search.mcp_tools), listed
in the secrets file, and read by a complete run with the real openai client against the
stand-in model. A slow, failing, crashing or hostile server costs only its own results."""

from __future__ import annotations

import json
import re
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from research import Credentials, build_config, run_research
from research.core.config import ResearchConfig
from research.core.errors import ConfigError, ProviderError, ProviderTimeout
from research.core.mcp_servers import ENV_NAME, McpServer
from research.core.settings import effective_env
from research.export import to_markdown
from research.export.run_document import build_document_for_run
from research.search import build_search_providers
from storage import Store
from tests.standin import StandinServer

if TYPE_CHECKING:
    from research.search.mcp_tools import McpSearch

SERVER = str(Path(__file__).with_name("mcp_source_server.py"))
ENV_SECRET = "s3cret-env-value"  # the stdio server refuses to start without it
TOKEN = "mcp-token-4f9c2a7b1e"
QUESTION = "How is heat pump adoption changing in Europe?"


def stdio(mode: str, name: str = "wiki", **fields: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [SERVER, mode],
            "env": {"WIKI_SECRET": ENV_SECRET}, "timeout_s": 60, **fields} | {"name": name}


def search_of(fields: dict[str, Any]) -> McpSearch:
    from research.search.mcp_tools import McpSearch

    server = McpServer(**fields)
    return McpSearch(server, server.secrets())


def guarded(app: Any, token: str) -> Any:
    """`app` behind a bearer token, as a company's MCP gateway would put it."""
    async def asgi(scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != \
                f"Bearer {token}".encode():
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await app(scope, receive, send)
    return asgi


@contextmanager
def serving(mode: str) -> Iterator[str]:
    """The test server in `mode` over streamable HTTP on a free loopback port; its MCP URL."""
    import uvicorn

    from tests.mcp_source_server import app

    server = uvicorn.Server(uvicorn.Config(guarded(app(mode), TOKEN), host="127.0.0.1", port=0,
                                           log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("the MCP test server did not start")
            threading.Event().wait(0.05)
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}/mcp"
    finally:
        server.should_exit = server.force_exit = True  # a request still waiting is dropped
        thread.join(30)


@pytest.fixture(scope="module")
def wiki_url() -> Iterator[str]:
    with serving("wiki") as url:
        yield url


def test_a_stdio_servers_search_tool_gives_results_named_for_the_server() -> None:
    search = search_of(stdio("wiki"))
    try:
        results = search.search("heat pump adoption Europe", max_results=2, timeout=30)
        again = search.search("Norway vapour compressors", max_results=5, timeout=30)  # the same session
    finally:
        search.close()
    assert len(results) == 2  # max_results reached the tool's own "limit" argument
    assert results[0].url == "https://wiki.example.org/heat-pumps/europe"
    assert all(r.provider == "mcp:wiki" and r.in_hand for r in results + again)
    assert results[0].title == "Heat pump rollout in Europe (team wiki)"
    assert "412 installations in the Gdansk pilot" in (results[0].content or "")
    assert again[0].url == "https://wiki.example.org/heat-pumps/cold"


def test_a_hostile_servers_answer_is_kept_as_capped_inert_text() -> None:
    from research.search.mcp_tools import MAX_RESULT_CHARS

    search = search_of(stdio("hostile"))
    try:
        results = search.search("heat pumps", max_results=10, timeout=30)
    finally:
        search.close()
    assert len(results) == 3  # its one search-like tool ("lookup") was found and called
    injected, metadata, huge = results
    assert "IGNORE ALL PREVIOUS INSTRUCTIONS" in (injected.content or "")  # data, not orders
    assert "\u202e" not in (injected.content or "") and "\u200b" not in (injected.content or "")
    # A link to a metadata address is not the source's address: it is never shown or fetched.
    assert metadata.url.startswith("mcp://wiki/lookup/") and "169.254" not in metadata.url
    assert len(huge.content or "") == MAX_RESULT_CHARS

    flooding = search_of(stdio("hostile", tool="flood"))  # 10 MB: the relay ends the server
    with pytest.raises(ProviderError, match="could not be used"):
        flooding.search("heat pumps", max_results=10, timeout=30)


def test_a_server_behind_a_token_is_searched_over_streamable_http(wiki_url: str) -> None:
    search = search_of({"name": "intranet", "url": wiki_url, "token": TOKEN})
    try:
        results = search.search("payback costs", max_results=1, timeout=30)
    finally:
        search.close()
    assert [r.url for r in results] == ["https://wiki.example.org/heat-pumps/costs"]
    assert results[0].provider == "mcp:intranet"

    refused = search_of({"name": "intranet", "url": wiki_url, "token": "wrong-token-123"})
    with pytest.raises(ProviderError) as caught:
        refused.search("payback", max_results=1, timeout=30)
    assert "answered HTTP 401" in str(caught.value) and "wrong-token" not in str(caught.value)


@pytest.mark.parametrize("mode, error, words", [
    ("slow", ProviderTimeout, "did not answer in time"),
    ("failing", ProviderError, "answered the search with an error"),
])
def test_a_slow_or_failing_server_fails_its_search_in_plain_words(
    mode: str, error: type[Exception], words: str,
) -> None:
    with serving(mode) as url:
        search = search_of({"name": "wiki", "url": url, "token": TOKEN})
        with pytest.raises(error) as caught:
            search.search("heat pumps", max_results=3, timeout=2)
        search.close()
    message = str(caught.value)
    assert words in message and "\u201cwiki\u201d" in message
    assert "hunter2" not in message and "db-7" not in message  # its own words are not repeated


def test_a_server_that_crashes_or_lacks_the_tool_is_refused_in_plain_words(
    wiki_url: str,
) -> None:
    with pytest.raises(ProviderError, match="could not be used"):
        search_of(stdio("crash")).search("heat pumps", max_results=3, timeout=30)
    missing = search_of({"name": "wiki", "url": wiki_url, "token": TOKEN, "tool": "no_such_tool"})
    with pytest.raises(ProviderError, match="offers no tool named \u201cno_such_tool\u201d"):
        missing.search("heat pumps", max_results=3, timeout=30)


def test_servers_come_from_the_secrets_file_and_stay_out_of_the_run_config(
    tmp_path: Path,
) -> None:
    secrets = tmp_path / "secrets.toml"
    secrets.write_text(
        '[mcp_servers.intranet]\nurl = "https://mcp.example.org/mcp"\n'
        f'token = "{TOKEN}"\ntool = "search_wiki"\n', encoding="utf-8")
    env = effective_env({"DEEP_RESEARCH_SECRETS_FILE": str(secrets),
                         "DEEP_RESEARCH_SEARCH": "web,mcp:intranet"})
    credentials = Credentials.from_env(env)
    [server] = credentials.mcp_servers
    assert server.provider == "mcp:intranet" and server.tool == "search_wiki"
    assert TOKEN in credentials.secrets() and TOKEN not in repr(credentials)
    config = build_config(env=env, preset="quick")
    assert "mcp:intranet" in config.search_providers
    assert TOKEN not in config.model_dump_json() and "mcp.example.org" not in \
        config.model_dump_json()
    assert [p.name for p in build_search_providers(config, credentials)][:2] == \
        ["web", "mcp:intranet"]

    with pytest.raises(ConfigError, match="no MCP server named \u201cnope\u201d"):
        build_search_providers(build_config(env={**env, "DEEP_RESEARCH_SEARCH": "mcp:nope"}),
                               credentials)
    broken = Credentials.from_env({ENV_NAME: json.dumps({"Bad Name": {"url": "x"}})})
    assert broken.mcp_servers == () and "must be 1 to 40 lower-case" in broken.mcp_problem
    with pytest.raises(ValueError, match="Unknown search provider"):
        ResearchConfig(search_providers=("mcp:",))


def test_a_run_reads_an_mcp_server_and_a_failing_one_costs_only_its_own_results(
    standin: StandinServer, standin_env: dict[str, str], tmp_db: Path,
) -> None:
    with serving("failing") as down_url:
        servers = {"wiki": stdio("wiki"), "hostile": stdio("hostile"),
                   "down": {"url": down_url, "token": TOKEN}}
        env = {**standin_env, ENV_NAME: json.dumps(
                   {name: {k: v for k, v in fields.items() if k != "name"}
                    for name, fields in servers.items()}),
               "DEEP_RESEARCH_SEARCH": "mcp:wiki,mcp:hostile,mcp:down",
               "DEEP_RESEARCH_INCLUDE_ACADEMIC_SOURCES": "false",
               "DEEP_RESEARCH_SEARCHES_PER_SUBTOPIC": "1"}
        credentials = Credentials.from_env(env)
        store = Store(tmp_db, secrets=credentials.secrets())
        config = build_config(env=env, preset="quick")
        run_id = run_research(QUESTION, store=store, config=config, credentials=credentials)
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", run and run.error
    assert standin.count("pages") == 0 and standin.count("tavily") == 0  # nothing fetched

    sources = store.get_sources(run_id)
    wiki = [s for s in sources if s.provider == "mcp:wiki"]
    assert wiki and all(s.url.startswith("https://wiki.example.org/") for s in wiki)
    assert {s.provider for s in sources} <= {"mcp:wiki", "mcp:hostile"}
    assert not any("169.254" in s.url for s in sources)
    failed = [e for e in store.get_events(run_id) if e.type == "search_failed"]
    assert failed and all("mcp:down" in (e.message or "") for e in failed)

    markdown = to_markdown(build_document_for_run(store, run_id))
    assert re.search(r"\[\[\d+\]\]\(#source-\d+\)", markdown)
    assert "wiki.example.org/heat-pumps" in markdown.split("## Sources", 1)[1]
    assert "<script" not in markdown and "onerror=" not in markdown
    checked = store.get_verifications(run_id)
    assert checked and any(set(v.source_ids) & {s.id for s in wiki} for v in checked)
    stored = b"".join(p.read_bytes() for p in tmp_db.parent.glob(tmp_db.name + "*"))
    for secret in (TOKEN, ENV_SECRET, SERVER):
        assert secret.encode() not in stored  # no token, env value or command in the store
