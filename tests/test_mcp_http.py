"""The MCP server over streamable HTTP, served by uvicorn on 127.0.0.1 and driven by the SDK's
own client: a complete research run on the stand-in as a token's person, a second person who
sees none of it, a request without a token refused, and bad input answered in plain words.

The person resolver here is the test's own (a fixed token per person); the API server wires
its token check to the same seam (`research.mcpserver.http.streamable_http_app`)."""

from __future__ import annotations

import re
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import anyio
import httpx
import httpx2
import pytest

from research.core.config import build_config
from research.core.constants import PRESETS
from research.core.settings import prices_path
from research.estimate import estimate
from research.llm.pricing import PriceTable
from research.mcpserver import door
from research.mcpserver.service import open_service
from storage import Store
from tests.standin import StandinServer
from tests.test_mcp import SMALL, full_session, server_env, structured, with_guard

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request

PEOPLE = {"token-of-ada": "ada@example.org", "token-of-bo": "bo@example.org"}
HELLO = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "test", "version": "1"}}}


def person_of(request: Request) -> str | None:
    """The test's token check: a fixed token per person; the token "everyone" acts as an
    install without sign-in (no person: every run)."""
    from research.mcpserver.http import Refused

    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or (token not in PEOPLE and token != "everyone"):
        raise Refused()
    return PEOPLE.get(token)


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """`app` on uvicorn on a free loopback port, in a thread; its base URL."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                                           lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("the server did not start")
            threading.Event().wait(0.05)
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(30)


@pytest.fixture
def mcp_url(standin_env: dict[str, str], tmp_path: Path) -> Iterator[str]:
    """The MCP endpoint of a server on a free loopback port, over a fresh store."""
    from research.mcpserver.http import streamable_http_app

    door.forget()
    service = open_service(server_env(standin_env, tmp_path))
    with serving(streamable_http_app(person_of, service=service)) as base:
        yield f"{base}/mcp"


@asynccontextmanager
async def session_of(url: str, token: str) -> Any:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


def test_http_server_researches_as_the_tokens_person_and_no_one_else_sees_it(
    mcp_url: str, standin_env: dict[str, str], tmp_path: Path,
) -> None:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    question = "What limits the range of electric buses in winter?"

    async def go() -> tuple[dict[str, Any], dict[str, Any]]:
        headers = {"Authorization": "Bearer token-of-ada"}
        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http:
            async with streamable_http_client(mcp_url, http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    seen = await full_session(session, question)
        async with session_of(mcp_url, "token-of-bo") as other:
            run_id = seen["waited"]["run_id"]
            answers = {
                "status": await other.call_tool("research_status", {"run_id": run_id}),
                "report": await other.call_tool("get_report", {"run_id": run_id}),
                "library": structured(await other.call_tool("search_library", {"query": ""})),
                "resources": (await other.list_resources()).resources,
            }
            try:
                await other.read_resource(f"research://reports/{run_id}")
                answers["read"] = "read"
            except Exception as exc:  # noqa: BLE001 - the SDK raises the server's error
                answers["read"] = str(exc)
        async with session_of(mcp_url, "everyone") as install:  # no sign-in: every run
            answers["everyone"] = structured(await install.call_tool("search_library", {}))
        return seen, answers

    seen, other = anyio.run(with_guard, go)

    env = server_env(standin_env, tmp_path)
    for tool in seen["tools"]:  # the figures are the estimate's under the server's settings
        if tool.name in ("start_research", "research"):
            for preset in PRESETS:
                guess = estimate(build_config(env=env, preset=preset), PriceTable.load(prices_path(env)))
                assert (f"- {preset}: about " in tool.description
                        and f"~${guess.cost_usd:.2f} ({guess.model_calls:,} model calls, "
                            f"{guess.searches:,} searches)" in tool.description), tool.description

    waited = seen["waited"]["run_id"]
    with Store(tmp_path / "research.db") as store:
        mine = store.list_runs(person="ada@example.org")
    assert {r.id for r in mine} == {waited, seen["started"]["run_id"]}

    for name in ("status", "report"):
        assert other[name].is_error
        assert f"There is no run with id '{waited}'." in other[name].content[0].text
    assert other["library"]["result"] == []
    assert {e["run_id"] for e in other["everyone"]["result"]} == {r.id for r in mine}
    assert not [r for r in other["resources"] if waited in str(r.uri)]
    assert f"There is no run with id '{waited}'." in other["read"]


def test_http_request_without_a_valid_token_is_refused_in_plain_words(mcp_url: str) -> None:
    hello = HELLO
    accept = {"Accept": "application/json, text/event-stream"}
    for headers in ({}, {"Authorization": "Bearer not-a-token"},
                    {"Authorization": "Basic token-of-ada"}):
        answer = httpx.post(mcp_url, json=hello, headers={**accept, **headers}, timeout=30)
        assert answer.status_code == 401
        assert answer.headers["www-authenticate"] == "Bearer"
        error = answer.json()["error"]
        assert error["code"] == "unauthorized" and "token" in error["message"]
    allowed = httpx.post(mcp_url, json=hello, timeout=30,
                         headers={**accept, "Authorization": "Bearer token-of-bo"})
    assert allowed.status_code == 200


def test_with_allowed_hosts_it_answers_no_other_host(
    standin_env: dict[str, str], tmp_path: Path,
) -> None:
    from research.mcpserver.http import streamable_http_app

    door.forget()
    service = open_service(server_env(standin_env, tmp_path))
    app = streamable_http_app(person_of, service=service, allowed_hosts=["127.0.0.1:*"])
    headers = {"Accept": "application/json, text/event-stream",
               "Authorization": "Bearer token-of-ada"}
    with serving(app) as base:
        rebound = httpx.post(f"{base}/mcp", json=HELLO, timeout=30,
                             headers={**headers, "Host": "rebound.example"})
        here = httpx.post(f"{base}/mcp", json=HELLO, timeout=30, headers=headers)
    assert rebound.status_code == 421
    assert here.status_code == 200


def test_http_server_refuses_bad_input_in_plain_words(mcp_url: str) -> None:
    async def go() -> list[Any]:
        async with session_of(mcp_url, "token-of-ada") as session:
            return [
                await session.call_tool("start_research", {"question": "heat pumps",
                                                           "subtopics": 12}),
                await session.call_tool("start_research", {"question": "   "}),
                await session.call_tool("start_research", {"question": "x" * 2001}),
                await session.call_tool("research_status", {"run_id": "no-such-run"}),
                await session.call_tool("get_report", {"run_id": "no-such-run"}),
            ]

    answers = anyio.run(with_guard, go)
    texts = [a.content[0].text for a in answers]
    assert all(a.is_error for a in answers), texts
    assert "SUBTOPIC_COUNT must be between 3 and 10 (got 12)." in texts[0]
    assert "Please type a research question." in texts[1]
    assert "2,000" in texts[2] or "2000" in texts[2]
    assert all("There is no run with id 'no-such-run'." in t for t in texts[3:])
    assert not any(re.search(r"\b\w+(Error|Exception)\b", t) for t in texts), texts


def test_a_failed_run_is_answered_with_its_reason_and_never_a_key(
    mcp_url: str, standin: StandinServer, standin_env: dict[str, str],
) -> None:
    key = standin_env["OPENAI_API_KEY"]
    standin.add_fault("openai", "status", times=50, status=401,
                      body={"error": {"message": f"Incorrect API key provided: {key}",
                                      "type": "invalid_request_error", "code": "invalid_api_key"}})

    async def go() -> tuple[Any, Any]:
        async with session_of(mcp_url, "token-of-ada") as session:
            waited = await session.call_tool("research", {"question": "heat pumps", **SMALL})
            status = await session.call_tool("research_status",
                                             {"run_id": structured(waited)["run_id"]})
            return waited, status

    waited, status = anyio.run(with_guard, go)
    report, now = structured(waited), structured(status)
    assert report["status"] == "failed" and report["report_markdown"] == ""
    assert report["message"].startswith("Failed: ")  # as every surface says it (research/voice.py)
    assert report["message"].endswith(f"Run {report['run_id']} has no report.")
    assert now["status"] == "failed" and now["error"] and not now["still_going"]
    everything = str(waited.content) + str(status.content)
    assert key not in everything and key[-8:] not in everything


class _TokenCheck:
    """What the API server's token wrapper does for a mounted app: a known token's Caller in
    the scope's state; here without refusing, so the MCP app's own fail-closed rule shows."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            token = headers.get(b"authorization", b"").decode().removeprefix("Bearer ")
            if token in PEOPLE:
                scope.setdefault("state", {})["caller"] = SimpleNamespace(person=PEOPLE[token])
        await self.app(scope, receive, send)


def test_mounted_at_mcp_on_another_app_it_acts_as_the_callers_person(
    standin_env: dict[str, str], tmp_path: Path,
) -> None:
    from starlette.applications import Starlette
    from starlette.routing import Mount

    from research.mcpserver.http import api_mount

    door.forget()
    service = open_service(server_env(standin_env, tmp_path))
    ada = service.store.create_run("Ada's question on tidal power", {}, person="ada@example.org")
    app, lifespan = api_mount(service)

    @asynccontextmanager
    async def outer_lifespan(_: Starlette) -> AsyncIterator[None]:
        async with lifespan():
            yield

    outer = Starlette(routes=[Mount("/mcp", app=_TokenCheck(app))], lifespan=outer_lifespan)
    with serving(outer) as base:
        url = f"{base}/mcp"

        async def go() -> dict[str, Any]:
            async with session_of(url, "token-of-ada") as session:
                mine = structured(await session.call_tool("search_library", {"query": "tidal"}))
            async with session_of(url, "token-of-bo") as other:
                theirs = structured(await other.call_tool("search_library", {"query": "tidal"}))
            return {"mine": mine["result"], "theirs": theirs["result"]}

        found = anyio.run(with_guard, go)
        nobody = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=30,
                            headers={"Accept": "application/json, text/event-stream"},
                            follow_redirects=True)
    assert [e["run_id"] for e in found["mine"]] == [ada]
    assert found["theirs"] == []
    assert nobody.status_code == 401
