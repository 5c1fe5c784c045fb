"""The MCP server: the research tools and the finished reports as resources, on the official
`mcp` SDK's MCPServer (what the SDK called FastMCP before 2.0; see
https://py.sdk.modelcontextprotocol.io/v2/migration/#fastmcp-renamed-to-mcpserver).

Tools: `start_research` (the run id at once), `research` (start and wait, with MCP progress
notifications, then the report with its numbered sources), `research_status`, `get_report`
and `search_library`. Resources: `research://reports/{run_id}`, one per finished report of the
person, listed. The tool descriptions carry what a run costs at each preset
(research/mcpserver/costs.py), computed when the server is built.

Who is asking: `person` is called in each request's context. Over stdio it gives the local
person; over HTTP (research/mcpserver/http.py) the person the request's token belongs to,
and it refuses when there is none, so a request that lost its person never sees every run.
Store reads and starts run in worker threads: the event loop only carries messages.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Annotated, Any, TypeVar

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp_types import Resource as MCPResource
from pydantic import Field

from research.core.errors import ResearchError, contained
from research.mcpserver import ask_tool
from research.mcpserver.ask_tool import AskedAnswer
from research.mcpserver.service import (
    REPORT_URI,
    LibraryEntry,
    Preset,
    Report,
    Service,
    Started,
    Status,
)

log = logging.getLogger(__name__)

POLL_S = 0.5  # how often `research` looks at its run while it waits
NAME = "deep-research-studio"
T = TypeVar("T")
UNEXPECTED = ("The research server met a problem in the program itself; a run it had started "
              "is kept. Try again, or ask research_status about the run.")

Person = Callable[[], str | None]
Question = Annotated[str, Field(description="the research question, in plain words "
                                            "(at most 2,000 characters)")]
PresetArg = Annotated[Preset | None, Field(description="how thorough: quick, standard, deep or "
                                                        "exhaustive (default: the server's settings)")]
Subtopics = Annotated[int | None, Field(description="subtopics to research (3-10)")]
Sources = Annotated[int | None, Field(description="sources kept per subtopic (5-50)")]
Reviews = Annotated[int | None, Field(description="review cycles of the draft (0-5)")]
Language = Annotated[str | None, Field(description="language of the report, e.g. German")]
MaxCost = Annotated[float | None, Field(description="stop research when the estimated cost "
                                                    "reaches this many US dollars")]
RunId = Annotated[str, Field(description="the run id start_research or research returned")]
FollowUp = Annotated[str, Field(description="a follow-up question about the run's report "
                                            "(at most 1,000 characters)")]

INSTRUCTIONS = (
    "Deep Research Studio researches a question on the web and "
    "writes a cited report: [n] in the text are the numbered sources at its end. A run takes "
    "minutes and costs money (see the tools' descriptions); prefer start_research and "
    "research_status for long runs, and search_library first: the answer may already exist."
)


class ResearchServer(MCPServer[Any]):
    """MCPServer whose resource list holds the asking person's finished reports."""

    def __init__(self, service: Service, person: Person) -> None:
        # WARNING: the SDK sets up the root logger when nothing has (logging.basicConfig), and
        # at INFO every library's requests would be logged there.
        super().__init__(NAME, title="Deep Research Studio", instructions=INSTRUCTIONS,
                         log_level="WARNING")
        self.service = service
        self.person = person

    async def list_resources(self) -> list[MCPResource]:
        listed = await super().list_resources()
        try:
            person = self.person()
        except ResearchError:  # nobody asks (HTTP without a person): no reports to list
            return listed
        runs = await anyio.to_thread.run_sync(self.service.finished, person)
        return listed + [
            MCPResource(uri=REPORT_URI.format(run_id=run.id), name=f"report-{run.id}",
                        title=_one_line(run.question, 120), mime_type="text/markdown",
                        description=f"The cited report of a research run of {run.created_at}.")
            for run in runs]


def build_server(service: Service, person: Person | None = None) -> ResearchServer:
    """The server over `service`; `person` names who asks (default: the local person)."""
    server = ResearchServer(service, person or (lambda: service.local_person))
    costs = service.costs()

    def who() -> str | None:
        """The asking person; a request without one (HTTP) is refused in plain words."""
        try:
            return server.person()
        except ResearchError as exc:
            raise ToolError(str(exc)) from None

    async def call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`fn` in a worker thread; the engine's own words as the tool's error, and a
        problem of the program itself as one plain sentence (the details go to the debug
        log; the test suite gets it raised)."""
        try:
            return await anyio.to_thread.run_sync(partial(fn, *args, **kwargs))
        except ResearchError as exc:
            raise ToolError(str(exc)) from None
        except Exception as exc:
            if not contained(exc):
                raise
            log.debug("an MCP tool failed", exc_info=exc)
            raise ToolError(UNEXPECTED) from None

    @server.tool(description=(
        "Start a research run and return its id at once; the run goes on in the background. "
        "Follow it with research_status and fetch the result with get_report (or read the "
        "resource research://reports/{run_id}). What one run takes, by preset, with this "
        f"server's models and prices (rough figures):\n{costs}"))
    async def start_research(question: Question, preset: PresetArg = None,
                             subtopics: Subtopics = None, sources_per_subtopic: Sources = None,
                             review_cycles: Reviews = None, language: Language = None,
                             max_cost_usd: MaxCost = None) -> Started:
        return await call(service.start, question, who(), preset=preset, subtopics=subtopics,
                          sources_per_subtopic=sources_per_subtopic,
                          review_cycles=review_cycles, language=language,
                          max_cost_usd=max_cost_usd)

    @server.tool(description=(
        "Research a question and wait for the report: progress comes as MCP progress "
        "notifications (percent and the latest step), and the answer is the report in "
        "Markdown with its numbered sources. If you stop waiting the run goes on; its id "
        "is in the first progress message. What one run takes, by preset, with this "
        f"server's models and prices (rough figures):\n{costs}"))
    async def research(question: Question, ctx: Context, preset: PresetArg = None,
                       subtopics: Subtopics = None, sources_per_subtopic: Sources = None,
                       review_cycles: Reviews = None, language: Language = None,
                       max_cost_usd: MaxCost = None) -> Report:
        person = who()
        started = await call(service.start, question, person, preset=preset,
                             subtopics=subtopics, sources_per_subtopic=sources_per_subtopic,
                             review_cycles=review_cycles, language=language,
                             max_cost_usd=max_cost_usd)
        await ctx.report_progress(0, 100, f"Run {started.run_id} started. {started.estimate}")
        shown = 0
        while True:
            status = await call(service.status, started.run_id, person)
            if status.percent > shown:  # progress must rise with each notification
                shown = status.percent
                await ctx.report_progress(shown, 100, status.message or status.step)
            if not status.still_going:
                break
            await anyio.sleep(POLL_S)
        return await call(service.report, started.run_id, person)

    @server.tool(description=(
        "A run's status: queued, running, paused, waiting, completed, failed, cancelled or "
        "interrupted; percent done, the current step and latest progress line, its place in "
        "the queue, sources and cost so far, warnings and error. Free and instant."))
    async def research_status(run_id: RunId) -> Status:
        return await call(service.status, run_id, who())

    @server.tool(description=(
        "A finished run's report in Markdown ([n] cite the numbered Sources list at its end) "
        "with its sources as a list; before the run completes, its status and why there is "
        "no report yet. Free and instant."))
    async def get_report(run_id: RunId) -> Report:
        return await call(service.report, run_id, who())

    @server.tool(description=(
        "Search the library of earlier research runs by words of their question (empty: the "
        "latest runs), newest first, with each completed run's report resource. Free and "
        "instant: look here before starting new research."))
    async def search_library(
            query: Annotated[str, Field(description="words of the question to look for")] = "",
            limit: Annotated[int, Field(ge=1, le=50, description="at most this many")] = 10,
    ) -> list[LibraryEntry]:
        return await call(service.search, query, who(), limit)

    @server.tool(description=(
        "Ask a finished run's report a follow-up question: answered in seconds only from "
        "that run's own sources, citing them with the report's numbers, each claim checked "
        "against its source, and kept with the run. A few model calls, counted in the run's "
        "cost. When the sources don't say, the answer says so."))
    async def ask_report(run_id: RunId, question: FollowUp) -> AskedAnswer:
        return await call(ask_tool.ask_report, service, run_id, question, who())

    @server.resource(REPORT_URI, name="report", mime_type="text/markdown",
                     description="A finished research report in Markdown, citations numbered "
                                 "[n] with its Sources list at the end.")
    async def report(run_id: str) -> str:
        try:
            return await anyio.to_thread.run_sync(service.markdown, run_id, server.person())
        except ResearchError as exc:
            raise ResourceError(str(exc)) from None

    return server


def _one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
