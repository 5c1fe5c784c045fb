"""The MCP server mounted on the API server at /mcp (research/api/mounts.py): the same tokens,
the same people, the same runs, driven by the MCP SDK's own client over streamable HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest

from tests.api_server import ApiServer, Token
from tests.standin import StandinServer

QUESTION = "How do tidal turbines cope with storms?"


@pytest.fixture
def server(standin: StandinServer, standin_env: dict[str, str],
           tmp_path: Path) -> Iterator[ApiServer]:
    started = ApiServer.start({**standin_env, "DEEP_RESEARCH_DB": str(tmp_path / "r.db")},
                              tmp_path)
    try:
        yield started
    finally:
        started.stop()


@asynccontextmanager
async def session_of(url: str, token: Token) -> Any:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers=token.headers,
                                  timeout=httpx2.Timeout(30, read=120)) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


def test_the_mcp_server_on_the_api_server_acts_as_the_tokens_person(server: ApiServer) -> None:
    ada, bo = server.quick_token("ada@example.org"), server.quick_token("bo@example.org")
    with server.client(ada) as client:
        started = client.post("/v1/runs", json={"question": QUESTION, "preset": "quick",
                                                "review_plan": True})
        assert started.status_code == 201, started.text
        run_id = started.json()["run_id"]
    url = f"{server.url}/mcp"

    async def go() -> dict[str, Any]:
        with anyio.fail_after(180):  # a guard against a hang, not a timing assertion
            return await ask()

    async def ask() -> dict[str, Any]:
        async with session_of(url, ada) as session:
            tools = {t.name for t in (await session.list_tools()).tools}
            mine = await session.call_tool("research_status", {"run_id": run_id})
            found = await session.call_tool("search_library", {"query": "tidal turbines"})
        async with session_of(url, bo) as other:
            theirs = await other.call_tool("research_status", {"run_id": run_id})
            nothing = await other.call_tool("search_library", {"query": "tidal turbines"})
        return {"tools": tools, "mine": mine, "found": found, "theirs": theirs,
                "nothing": nothing}

    answers = anyio.run(go)
    assert {"start_research", "research", "research_status", "get_report",
            "search_library"} <= answers["tools"]
    assert not answers["mine"].is_error and answers["mine"].structured_content["run_id"] == run_id
    assert [e["run_id"] for e in answers["found"].structured_content["result"]] == [run_id]
    assert answers["theirs"].is_error  # bo: no such run
    assert answers["nothing"].structured_content["result"] == []
    refused = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=30,
                         headers={"Accept": "application/json, text/event-stream"},
                         follow_redirects=True)
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"
