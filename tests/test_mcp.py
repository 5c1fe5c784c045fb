"""The MCP server over stdio: the SDK's own client starts `python -m research mcp` as a child
process with the stand-in's settings, lists the tools, starts a run and gets its id at once,
researches and waits with progress notifications, reads status and reports, searches the
library and reads a finished report as a resource (tests/test_mcp_http.py: the same over
streamable HTTP, as a token's person)."""

from __future__ import annotations

import re
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from research.core.constants import PRESETS
from storage import Store
from tests.cli_helpers import ROOT
from tests.standin import StandinServer
from tests.test_startup_imports import imported

if TYPE_CHECKING:
    from mcp import ClientSession

TOOLS = {"start_research", "research", "research_status", "get_report", "search_library",
         "ask_report"}
# A run of seconds on the stand-in: quick, three subtopics of five sources, no review.
SMALL = {"preset": "quick", "subtopics": 3, "sources_per_subtopic": 5, "review_cycles": 0}
SMALL_ENV = {"DEEP_RESEARCH_SEARCH": "tavily", "DEEP_RESEARCH_SEARCHES_PER_SUBTOPIC": "2",
             "DEEP_RESEARCH_INCLUDE_ACADEMIC_SOURCES": "false"}
HANG_GUARD_S = 240  # only so a hung server fails the test instead of the session
Progress = list[tuple[float, float | None, str | None]]


def server_env(standin_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    return {**standin_env, **SMALL_ENV, "DEEP_RESEARCH_DB": str(tmp_path / "research.db"),
            "DEEP_RESEARCH_SECRETS_FILE": str(tmp_path / "no-secrets.toml")}


def structured(result: Any) -> Any:
    """A tool's structured answer; a failed call fails the test with its message."""
    assert not result.is_error, result.content
    return result.structured_content


async def wait_for_end(session: ClientSession, run_id: str) -> dict[str, Any]:
    """research_status until no worker holds the run."""
    while True:
        status = structured(await session.call_tool("research_status", {"run_id": run_id}))
        if not status["still_going"]:
            return dict(status)
        await anyio.sleep(0.5)


def assert_costs_per_preset(tools: list[Any]) -> None:
    """The research tools say what a run takes at every preset, in time and dollars."""
    for tool in tools:
        if tool.name in ("start_research", "research"):
            for preset in PRESETS:
                assert re.search(rf"{preset}: about \d+ \w+.*~\$\d+\.\d\d", tool.description), \
                    (preset, tool.description)


def assert_report_with_numbered_sources(report: dict[str, Any]) -> None:
    assert report["status"] == "completed", report
    sources = report["sources"]
    markdown = report["report_markdown"]
    assert sources and [s["number"] for s in sources] == list(range(1, len(sources) + 1))
    cited = {int(n) for n in re.findall(r"\[\[(\d+)\]\]\(#source-\d+\)", markdown)}
    assert cited and cited <= {s["number"] for s in sources}
    for source in sources:  # the Sources list at the end: each number and its address
        assert f'{source["number"]}. <a id="source-{source["number"]}"></a>' in markdown
        assert source["url"].split("://", 1)[1][:30] in markdown


async def full_session(session: ClientSession, question: str) -> dict[str, Any]:
    """What a calling agent does, start to finish; returns what the test checks further."""
    await session.initialize()
    tools = (await session.list_tools()).tools
    assert {t.name for t in tools} == TOOLS
    assert_costs_per_preset(tools)

    started = structured(await session.call_tool(
        "start_research", {"question": f"{question} (started)", **SMALL}))
    assert started["status"] == "queued" and started["estimate"].startswith("Estimate: about")

    progress: Progress = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    waited = structured(await session.call_tool(
        "research", {"question": question, **SMALL}, progress_callback=on_progress))
    assert_report_with_numbered_sources(waited)
    assert waited["run_id"] != started["run_id"]
    values = [p[0] for p in progress]
    assert len(values) >= 3 and values == sorted(set(values)), progress  # each one higher
    assert values[-1] == 100 and all(total == 100 for _, total, _ in progress)
    assert waited["run_id"] in (progress[0][2] or "")  # the id comes first, for a caller who leaves

    first = await wait_for_end(session, started["run_id"])
    assert first["status"] == "completed" and first["percent"] == 100 and first["sources"]
    report = structured(await session.call_tool("get_report", {"run_id": started["run_id"]}))
    assert_report_with_numbered_sources(report)

    found = structured(await session.call_tool("search_library", {"query": "(started)"}))
    assert [e["run_id"] for e in found["result"]] == [started["run_id"]]

    listed = (await session.list_resources()).resources
    uri = f"research://reports/{waited['run_id']}"
    assert uri in {str(r.uri) for r in listed}
    read = await session.read_resource(uri)
    assert read.contents[0].text == waited["report_markdown"]  # type: ignore[union-attr]
    return {"started": started, "waited": waited, "progress": progress, "tools": tools}


async def with_guard(fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
    with anyio.fail_after(HANG_GUARD_S):
        return await fn(*args)


def test_stdio_server_researches_start_to_finish_with_the_sdks_client(
    standin_env: dict[str, str], tmp_path: Path,
) -> None:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {**server_env(standin_env, tmp_path), "PYTHONPATH": str(ROOT),
           "PYTHONPROFILEIMPORTTIME": "1"}  # its imports, listed on stderr
    params = StdioServerParameters(command=sys.executable, args=["-m", "research", "mcp"],
                                   env=env, cwd=tmp_path)
    question = "How do heat pumps perform in cold climates?"

    async def go() -> dict[str, Any]:
        with (tmp_path / "server.err").open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    return await full_session(session, question)

    seen = anyio.run(with_guard, go)
    err = (tmp_path / "server.err").read_text()
    assert "Traceback" not in err, err
    key = standin_env["OPENAI_API_KEY"]
    assert key not in err
    # Claude Desktop starts it often: it loads the engine and the job engine, not the dashboard.
    assert {"research.mcpserver.server", "dbos"} <= imported(err)
    assert imported(err) & {"streamlit", "pandas", "plotly"} == set()
    with Store(tmp_path / "research.db") as store:  # the runs are the local person's: nobody's
        runs = {r.id: r for r in store.list_runs()}
    assert {seen["started"]["run_id"], seen["waited"]["run_id"]} <= set(runs)
    assert runs[seen["waited"]["run_id"]].question == question
    assert runs[seen["waited"]["run_id"]].person is None


def test_a_run_left_when_the_client_quit_goes_on_when_the_server_starts_again(
    standin: StandinServer, standin_env: dict[str, str], tmp_path: Path,
) -> None:
    """Claude Desktop quits, and its stdio server with it, while a run is in flight: the next
    start of the server (here, or the dashboard's on the same database) carries it on."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "research", "mcp"],
                                   env={**server_env(standin_env, tmp_path),
                                        "PYTHONPATH": str(ROOT)}, cwd=tmp_path)

    async def first() -> str:
        async with stdio_client(params, errlog=sys.stderr) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                started = structured(await session.call_tool(
                    "start_research", {"question": "Why do ice storms break power lines?",
                                       **SMALL}))
                while True:  # until research is under way, then the client quits
                    status = structured(await session.call_tool(
                        "research_status", {"run_id": started["run_id"]}))
                    if status["step"].startswith("Research") or status["percent"] > 0:
                        return str(started["run_id"])
                    await anyio.sleep(0.2)

    async def second(run_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
        async with stdio_client(params, errlog=sys.stderr) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                ended = await wait_for_end(session, run_id)
                report = structured(await session.call_tool("get_report", {"run_id": run_id}))
                return ended, report

    standin.set_delay(0.3)  # slow enough that the run is still going when the client quits
    run_id = anyio.run(with_guard, first)
    with Store(tmp_path / "research.db") as store:
        left = store.get_run(run_id)
    assert left is not None and left.status not in ("completed", "failed")
    standin.set_delay(0.0)
    ended, report = anyio.run(with_guard, second, run_id)
    assert ended["status"] == "completed"
    assert_report_with_numbered_sources(report)


def test_stdio_server_that_cannot_open_its_database_says_so_and_exits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    from research.mcpserver.stdio import main

    monkeypatch.setenv("DEEP_RESEARCH_SECRETS_FILE", str(tmp_path / "none.toml"))
    assert main(["--db", "postgresql://"]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("error: ") and "Traceback" not in err and "postgresql" in err
    assert out == ""

