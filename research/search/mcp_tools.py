"""An MCP server's search tool as a search provider, through the official `mcp` SDK's client.

A person lists MCP servers in Settings (research.core.mcp_servers): a company wiki, a database,
a code host. A run that names one ("mcp:wiki" among its search providers) calls the server's
search-like tool with each query. Which tool: the one the server's settings name, otherwise the
first whose input schema takes one required string (a query), preferring a name that says
search (https://modelcontextprotocol.io/specification/2025-06-18/server/tools: a tool is listed
with a JSON Schema of its arguments). Its answer's text and embedded resources
(https://modelcontextprotocol.io/specification/2025-06-18/server/tools#tool-result) become
results that carry their text (`SearchResult.in_hand`): research reads them as they are and
fetches nothing, like a passage of the person's own documents.

What a server says is untrusted like a web page: its text goes through the same cleaning,
scoring, citing and checking as any source, is never obeyed and never rendered as HTML. A link
it names is kept as the source's address only when it is an http(s) address that
`research.untrusted.urls` would not refuse on its face (no private or metadata address, a web
port, no user name); it is never fetched. Otherwise the source's address is
"mcp://SERVER/TOOL/DIGEST" (shown, never linked). Each result is capped (`MAX_RESULT_CHARS`),
as are their number and the size of one answer (`MAX_ANSWER_BYTES`: a stdio server's answers
pass through `research.search.mcp_relay`, which ends a server whose answer runs past it).

A slow, failing or hostile server costs only its own results: each search connects, asks and
disconnects within the search's time limit (a stdio server is a child process that is stopped
when the search ends, started with only the SDK's safe default environment plus the variables
its settings give, so none of our keys); every failure is a ProviderError in plain words that
never quotes the server's own error text nor a token.
"""

from __future__ import annotations

import atexit
import hashlib
import math
import os
import re
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
from anyio.abc import TaskStatus
from anyio.from_thread import start_blocking_portal
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from research.core.errors import ProviderError, ProviderTimeout, redact
from research.core.mcp_servers import McpServer
from research.llm.deadline import run_with_deadline
from research.search.base import SearchResult
from research.untrusted.textclean import strip_hidden_controls
from research.untrusted.urls import canonical_url, check_port, parse_ip, refusal_kind

SCHEME = "mcp://"
MAX_RESULT_CHARS = 20_000     # text kept of one result
MAX_ANSWER_CHARS = 200_000    # text kept of one tool answer, all results together
MAX_ANSWER_BYTES = 4_000_000  # one answer larger than this (HTTP body, stdio line) is refused
MAX_ITEMS = 50                # content items of one answer looked at
RELAY = Path(__file__).with_name("mcp_relay.py")  # research.search.mcp_relay
IDLE_S = 60.0                 # a server's session with no search for this long is closed
_SEARCH_WORDS = ("search", "query", "find", "lookup", "retrieve")
_LIMIT_ARGS = ("max_results", "limit", "top_k", "count", "k", "n", "num_results")
_TEXT_KEYS = ("content", "text", "body", "snippet", "summary", "description")
_TITLE_KEYS = ("title", "name", "heading")
_URL_KEYS = ("url", "uri", "link", "href")


class McpSearch:
    academic = False

    def __init__(self, server: McpServer, secrets: list[str]) -> None:
        self.server = server
        self.name = server.provider
        self._secrets = secrets
        self._who = f"The MCP server \u201c{server.name}\u201d"
        self._lock = threading.Lock()
        self._open: _Connection | None = None

    def search(self, query: str, *, max_results: int, timeout: float) -> list[SearchResult]:
        if not query.strip():
            return []
        limit = min(timeout, self.server.timeout_s)
        # Opening the session may take the server's own time limit (a program that starts
        # slowly), the search itself the search's; each ends by the SDK's own cancellation.
        # The outer limit is for a server that does not let go.
        return run_with_deadline(lambda: self._search(query, max_results, limit),
                                 self.server.timeout_s + limit + 10.0, f"{self.name} search")

    def _search(self, query: str, max_results: int, limit: float) -> list[SearchResult]:
        connection = self._connection(self.server.timeout_s)
        try:
            tool = connection.tool
            answer = connection.call(tool.name, arguments(tool, query, max_results), limit)
        except Exception as exc:  # noqa: BLE001 - words for every way it fails
            self._drop(connection)  # a server that failed once is started afresh next time
            raise self._failure(exc) from None
        finally:
            connection.used()
        if answer.is_error:
            raise ProviderError(f"{self._who} answered the search with an error.",
                                provider=self.name)
        return results_of(self.server.name, tool.name, answer)[:max_results]

    def _connection(self, limit: float) -> _Connection:
        """The open session (one per provider, so one per server and run), opened now if there
        is none; searches that come meanwhile wait for it."""
        with self._lock:
            if self._open is not None and self._open.alive():
                return self._open
            self._open = None
            try:
                self._open = _Connection(self.server, limit)
            except Exception as exc:  # noqa: BLE001 - words for every way it fails
                raise self._failure(exc) from None
            return self._open

    def _drop(self, connection: _Connection) -> None:
        with self._lock:
            if self._open is connection:
                self._open = None
        connection.close()

    def close(self) -> None:
        with self._lock:
            connection, self._open = self._open, None
        if connection is not None:
            connection.close()

    def _failure(self, exc: BaseException) -> ProviderError:
        if isinstance(exc, ProviderError):
            return exc
        if _first(exc, TimeoutError) is not None:
            return ProviderTimeout(f"{self._who} did not answer in time.", provider=self.name)
        if _first(exc, _NoTool) is not None:
            wanted = f"tool named \u201c{self.server.tool}\u201d" if self.server.tool else \
                "search tool (one that takes a query)"
            return ProviderError(f"{self._who} offers no {wanted}.", provider=self.name)
        return ProviderError(f"{self._who} could not be used ({self._words(exc)}).",
                             provider=self.name)

    def _words(self, exc: BaseException) -> str:
        """What went wrong, by kind only: the server's own words are not repeated."""
        if _first(exc, _TooLarge) is not None:
            return f"its answer was larger than {MAX_ANSWER_BYTES // 1_000_000} MB"
        refused = _first(exc, _Refused)
        if isinstance(refused, _Refused):
            hint = " (check its token)" if refused.status in (401, 403) else ""
            return f"it answered HTTP {refused.status}{hint}"
        if _first(exc, httpx2.HTTPError) is not None:
            return "it could not be reached"
        failed = _first(exc, OSError)
        if isinstance(failed, OSError):
            return redact(f"it could not be started or reached: {failed.strerror or 'no answer'}",
                          self._secrets)
        return "it broke off or did not speak MCP"


class _NoTool(Exception):
    pass


class _Refused(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def _first(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    """`exc` or the first exception of that kind inside it (anyio's groups wrap them)."""
    if isinstance(exc, kind):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _first(inner, kind)
            if found is not None:
                return found
    return None


class _Connection:
    """One server's open session, held by a task in an event loop of its own (an anyio
    blocking portal: a thread), so a stdio server is started once per run, not per search.
    It is closed after `IDLE_S` without a search, when a search through it fails, or when the
    process exits; the next search opens another."""

    def __init__(self, server: McpServer, limit: float) -> None:
        self._server = server
        self._owner = os.getpid()
        self._busy = 0
        self._closed = False
        self._guard = threading.Lock()
        self._timer: threading.Timer | None = None
        self.statuses: list[int] = []  # HTTP statuses of refused requests (the SDK drops them)
        self._portal_cm = start_blocking_portal()
        self._portal = self._portal_cm.__enter__()
        try:
            self._held, started = self._portal.start_task(self._hold, limit)
        except BaseException as exc:
            self._portal_cm.__exit__(None, None, None)
            if self.statuses and not isinstance(exc, TimeoutError):
                raise _Refused(self.statuses[-1]) from exc
            raise
        self._session: ClientSession = started[0]
        self.tool: types.Tool = started[1]
        _OPEN.add(self)

    async def _hold(self, limit: float, *, task_status: TaskStatus[Any]) -> None:
        self._closing = anyio.Event()
        started = False
        with anyio.CancelScope(deadline=anyio.current_time() + limit) as opening:
            async with _session(self._server, self.statuses) as session:
                await session.initialize()
                tool = choose_tool((await session.list_tools()).tools, self._server.tool)
                if tool is None:
                    raise _NoTool
                opening.deadline = math.inf  # open: it now lives until closed
                started = True
                task_status.started((session, tool))
                await self._closing.wait()
        if not started:
            raise TimeoutError

    def call(self, tool: str, args: dict[str, Any], limit: float) -> types.CallToolResult:
        with self._guard:
            self._busy += 1
            if self._timer is not None:
                self._timer.cancel()

        async def ask() -> types.CallToolResult:
            with anyio.fail_after(limit):
                return await self._session.call_tool(tool, args)

        try:
            answer: types.CallToolResult = self._portal.call(ask)
        except Exception as exc:
            if self.statuses:
                raise _Refused(self.statuses[-1]) from exc
            raise
        return answer

    def used(self) -> None:
        """A search through it ended: close it once it has been idle for IDLE_S."""
        with self._guard:
            self._busy -= 1
            if self._busy == 0 and not self._closed:
                self._timer = threading.Timer(IDLE_S, self._idle)
                self._timer.daemon = True
                self._timer.start()

    def _idle(self) -> None:
        with self._guard:
            if self._busy:
                return
        self.close()

    def alive(self) -> bool:
        return not self._closed and self._owner == os.getpid() and not self._held.done()

    def close(self) -> None:
        with self._guard:
            if self._closed:
                return
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
        _OPEN.discard(self)
        if self._owner != os.getpid():  # a forked copy: the thread and the server are the parent's
            return
        with suppress(Exception):
            self._portal.call(self._closing.set)
        with suppress(BaseException):
            self._held.result(timeout=15)
        with suppress(BaseException):
            self._portal_cm.__exit__(None, None, None)


_OPEN: set[_Connection] = set()


@atexit.register
def _close_all() -> None:
    for connection in list(_OPEN):
        connection.close()


@asynccontextmanager
async def _session(server: McpServer, statuses: list[int]) -> AsyncIterator[ClientSession]:
    if server.command:
        params = StdioServerParameters(  # through the relay: no answer line past the cap
            command=sys.executable,
            args=["-I", str(RELAY), str(MAX_ANSWER_BYTES), server.command, *server.args],
            env={k: v.get_secret_value() for k, v in server.env.items()})
        with open(os.devnull, "w", encoding="utf-8") as quiet:  # its stderr is not ours
            async with stdio_client(params, errlog=quiet) as (read, write), \
                    ClientSession(read, write) as session:
                yield session
        return
    headers = {"Authorization": f"Bearer {server.token.get_secret_value()}"} \
        if server.token is not None else None
    # As the SDK's create_mcp_http_client makes it (its timeouts, no redirects: the SDK
    # follows same-origin ones itself), with every answer's size capped.
    client = httpx2.AsyncClient(
        headers=headers, timeout=httpx2.Timeout(server.timeout_s), follow_redirects=False,
        transport=_CappedTransport(httpx2.AsyncHTTPTransport(), statuses))
    async with client, streamable_http_client(
            server.url, http_client=client, max_sse_event_size=MAX_ANSWER_BYTES,
            terminate_on_close=True) as (read, write), ClientSession(read, write) as session:
        yield session


def choose_tool(tools: list[types.Tool], wanted: str = "") -> types.Tool | None:
    """The tool named `wanted`; else the first search-like one, a name saying search first."""
    if wanted:
        return next((t for t in tools if t.name == wanted), None)
    usable = [t for t in tools if query_argument(t) is not None]
    return next((t for t in usable if any(w in t.name.lower() for w in _SEARCH_WORDS)),
                usable[0] if usable else None)


def query_argument(tool: types.Tool) -> str | None:
    """The one required string argument of a search-like tool (others optional), or None."""
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    properties = schema.get("properties")
    required = schema.get("required") or []
    if not isinstance(properties, dict) or not isinstance(required, list) or len(required) != 1:
        return None
    name = required[0]
    prop = properties.get(name)
    return name if isinstance(prop, dict) and prop.get("type") == "string" else None


def arguments(tool: types.Tool, query: str, max_results: int) -> dict[str, Any]:
    """The call's arguments: the query, and how many results when the tool takes a number."""
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    name = query_argument(tool) or next(
        (k for k, v in (properties or {}).items() if isinstance(v, dict)
         and v.get("type") == "string"), "query")
    args: dict[str, Any] = {name: query}
    for key in _LIMIT_ARGS:
        prop = (properties or {}).get(key)
        if isinstance(prop, dict) and prop.get("type") == "integer":
            args[key] = max_results
            break
    return args


@dataclass
class _Item:
    text: str
    title: str = ""
    link: str = ""


def results_of(server: str, tool: str, answer: types.CallToolResult) -> list[SearchResult]:
    """The answer's results: structured rows when it has them, else its content items."""
    results: list[SearchResult] = []
    left = MAX_ANSWER_CHARS
    seen: set[str] = set()
    for item in _items(answer):
        text = _clean(item.text)[:min(MAX_RESULT_CHARS, left)]
        if not text or text in seen:
            continue
        seen.add(text)
        left -= len(text)
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
        link = web_link(item.link)
        first_line = text.split("\n", 1)[0]
        title = _clean(item.title) or (first_line[:120] if len(first_line) > 3 else tool)
        results.append(SearchResult(
            url=link or f"{SCHEME}{server}/{tool}/{digest}", title=" ".join(title.split())[:200],
            snippet=" ".join(text.split())[:300], provider=f"mcp:{server}", content=text,
            in_hand=True))
        if left <= 0:
            break
    return results


def _items(answer: types.CallToolResult) -> Iterator[_Item]:
    rows = _structured_rows(answer.structured_content)
    if rows:
        yield from rows
        return
    for block in answer.content[:MAX_ITEMS]:
        if isinstance(block, types.TextContent):
            yield _Item(block.text)
        elif isinstance(block, types.EmbeddedResource):
            resource = block.resource
            if isinstance(resource, types.TextResourceContents):
                yield _Item(resource.text, link=str(resource.uri))
        elif isinstance(block, types.ResourceLink):  # a pointer: its description is the text
            yield _Item(block.description or "", title=block.title or block.name,
                        link=str(block.uri))


def _structured_rows(value: Any) -> list[_Item]:
    """Rows of a structured answer ({"result": [...]} or {"results": [...]}) that carry text."""
    if isinstance(value, dict):
        value = next((value[k] for k in ("results", "result", "items", "documents")
                      if isinstance(value.get(k), list)), None)
    if not isinstance(value, list):
        return []
    rows = []
    for row in value[:MAX_ITEMS]:
        if not isinstance(row, dict):
            return []  # plain strings: the content items say the same
        text = next((row[k] for k in _TEXT_KEYS if isinstance(row.get(k), str) and row[k]), "")
        title = next((row[k] for k in _TITLE_KEYS if isinstance(row.get(k), str)), "")
        link = next((row[k] for k in _URL_KEYS if isinstance(row.get(k), str)), "")
        if text:
            rows.append(_Item(text, title, link))
    return rows


def web_link(value: str) -> str:
    """`value` if it is an http(s) address we could show as the source's (never fetched):
    no user name, a web port, and no private, loopback or metadata address spelled in it."""
    value = value.strip()
    if not re.match(r"^https?://[^\s]+$", value, re.IGNORECASE) or len(value) > 2000:
        return ""
    try:
        parsed = httpx2.URL(value)
        host = parsed.host.lower().rstrip(".")
        if parsed.userinfo or "@" in value.split("://", 1)[1].split("/", 1)[0] or not host:
            return ""
        check_port(parsed.port or (443 if parsed.scheme == "https" else 80))
        address = parse_ip(host)
    except Exception:  # noqa: BLE001 - FetchRefused and httpx2's own invalid-URL errors
        return ""
    if host in ("localhost", "metadata", "metadata.google.internal") or host.endswith(
            (".localhost", ".internal", ".local")):
        return ""
    if address is not None and refusal_kind(address, allow_private=False) is not None:
        return ""
    return value if canonical_url(value) else ""


def _clean(text: str) -> str:
    return strip_hidden_controls(str(text).replace("\x00", "")).strip()


class _TooLarge(Exception):
    pass


class _CappedTransport(httpx2.AsyncBaseTransport):
    """The HTTP client's transport, with every answer's body cut off at MAX_ANSWER_BYTES (the
    SDK caps an SSE event, not a JSON answer)."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, statuses: list[int]) -> None:
        self._inner = inner
        self._statuses = statuses

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        if response.status_code >= 400 and request.method != "DELETE":  # DELETE: hanging up
            self._statuses.append(response.status_code)
        stream = response.stream
        assert isinstance(stream, httpx2.AsyncByteStream)

        async def capped() -> AsyncIterator[bytes]:
            size = 0
            async for chunk in stream:
                size += len(chunk)
                if size > MAX_ANSWER_BYTES:
                    raise _TooLarge
                yield chunk

        return httpx2.Response(response.status_code, headers=response.headers,
                               stream=_Stream(capped(), stream), extensions=response.extensions)

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Stream(httpx2.AsyncByteStream):
    def __init__(self, chunks: AsyncIterator[bytes], inner: httpx2.AsyncByteStream) -> None:
        self._chunks, self._inner = chunks, inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._chunks:
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()
