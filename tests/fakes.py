"""In-process fakes for the model, the search providers and the fetcher.

They answer exactly as the HTTP stand-in does, because they call its own logic
(`tests/standin/answers.py`: `llm_answer`, `tavily_results`, `papers`; `pages.py`), under the
same controls: `set_behaviour`, content faults (`add_fault("openai", "invalid_json", ...)`),
`set_answer_words`, `set_off_topic`, `set_extra_results`, `set_delay`. Every call is
logged in `standin.requests` like an HTTP request (api, path, json body in the provider's
request shape), so tests read the same log whichever way the run went.

What only real HTTP can show (status codes and their SDK error mapping, hangs mid-body,
trickled bytes, the fetcher's connect-time address checks) is left to the end-to-end tests;
a fault the fakes cannot act out fails the test (at the latest at teardown, see `take_misuses`).

Phase and pipeline-logic tests use these through the `runs` fixture (conftest.py, tests/runs.py).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import httpx

from research.core.config import Credentials, ResearchConfig
from research.core.errors import AnswerBlocked, AnswerCutOff, ContextTooLong, ProviderTimeout
from research.llm.messages import Completion, Message, Usage
from research.search.base import SearchProvider, SearchResult
from research.search.tavily import iso_date
from research.untrusted.fetch import Fetcher, FetchLimits
from tests.standin import brain, pages
from tests.standin.answers import llm_answer, papers, tavily_results
from tests.standin.server import StandinServer

# Faults that need a socket to act out (see the module docstring).
_HTTP_ONLY = ("status", "trickle", "blocked")
# Such faults met by a fake: the engine may catch the error and carry on, so the `runs`
# fixture fails the test at teardown when this is not empty (see `take_misuses`).
_MISUSED: list[str] = []


def _refuse(kind: str) -> AssertionError:
    message = f"the {kind!r} fault needs the HTTP stand-in (http_runs), not the fakes"
    _MISUSED.append(message)
    return AssertionError(message)


def take_misuses() -> list[str]:
    """Faults the fakes could not act out since the last call (and forget them)."""
    found = list(_MISUSED)
    _MISUSED.clear()
    return found


class FakeModel:
    """A chat model that answers by the requested schema (its title is the pydantic class
    name) or, without one, as the writer: the stand-in's brain, called in-process."""

    def __init__(self, standin: StandinServer, provider: str, model: str) -> None:
        self._standin = standin
        self.provider = provider
        self.model = model

    def complete(self, messages: Sequence[Message], *, json_schema: dict | None = None,
                 schema_name: str | None = None, timeout: float | None = None) -> Completion:
        schema = dict(json_schema) if json_schema is not None else None
        if schema is not None:
            schema.setdefault("title", schema_name or "unknown")
        system = "\n\n".join(m.content for m in messages if m.role == "system")
        user = "\n\n".join(m.content for m in messages if m.role == "user")
        entry = _log(self._standin, self.provider, _body(self.provider, self.model, messages, schema))
        fault = self._standin._take(self.provider, brain.task_name(schema), len(system) + len(user))
        self._wait(fault, timeout)
        if fault is not None and fault.kind == "context_limit":
            raise ContextTooLong(f"{self.provider} ({self.model}): the prompt is longer than the "
                                 "model's context window.", provider=self.provider, status=400)
        text, special, finish = llm_answer(self._standin, fault, system, user, schema)
        usage = Usage(input_tokens=max(1, len(system + user) // 4), output_tokens=max(1, len(text) // 4))
        entry["completion_tokens"], entry["answered"] = usage.output_tokens, time.time()
        self._stop(special, finish, text, usage)
        return Completion(text=text, usage=usage, provider=self.provider, model=self.model)

    def _stop(self, special: Any, finish: str, text: str, usage: Usage) -> None:
        """A refused, withheld or cut-off answer ends as the providers' own seams raise it."""
        if special is not None and special.kind == "refusal":
            raise AnswerBlocked(f"{self.provider} model {self.model} refused to answer.",
                                provider=self.provider, reason="refusal")
        if special is not None and special.kind == "finish":
            finish = str(special.params.get("reason", "length")).lower()
            if finish not in ("length", "max_tokens"):
                raise AnswerBlocked(f"{self.provider} ({self.model}): the answer was withheld "
                                    f"({finish}).", provider=self.provider, reason=finish)
            text = text[: len(text) // 2]
        if finish in ("length", "max_tokens"):
            raise AnswerCutOff(f"{self.provider} ({self.model}): the answer was cut off at the "
                               "output length limit.", provider=self.provider, text=text, usage=usage)

    def _wait(self, fault: Any, timeout: float | None) -> None:
        """The stand-in's delay, latency and `hang` faults, bounded by the call's timeout."""
        if fault is not None and fault.kind in _HTTP_ONLY:
            raise _refuse(fault.kind)
        seconds = self._standin.delay + self._standin.latency(self.provider)
        if fault is not None and fault.kind == "hang":
            seconds += float(fault.params.get("seconds", 30.0))
        if timeout is not None and seconds > timeout:
            time.sleep(timeout)
            raise ProviderTimeout(f"{self.provider} ({self.model}) did not answer in time.",
                                  provider=self.provider)
        if seconds:
            time.sleep(seconds)


_WEB = ("tavily", "web")  # keyless "web" search gets the stand-in's Tavily results, never the internet
FAKED_SEARCH = (*_WEB, "arxiv", "semanticscholar")


class FakeSearch:
    """One search provider (FAKED_SEARCH) with the stand-in's results."""

    def __init__(self, standin: StandinServer, name: str) -> None:
        self._standin = standin
        self.name = name
        self.academic = name not in _WEB

    def search(self, query: str, *, max_results: int, timeout: float) -> list[SearchResult]:
        standin, base = self._standin, self._standin.base_url
        _log(standin, self.name, {"query": query, "max_results": max_results})
        fault = standin._take(self.name, None)
        if fault is not None:
            raise _refuse(fault.kind)
        if standin.delay:
            time.sleep(min(standin.delay, timeout))
        if self.name in _WEB:
            rows = tavily_results(standin, query, max(1, min(20, max_results)), base)
            return [SearchResult(url=r["url"], title=r["title"], snippet=r["content"],
                                 provider=self.name, published=iso_date(r["published_date"]),
                                 score=r["score"]) for r in rows][:max_results]
        found = papers(query, 1 if self.name == "arxiv" else 3)[:max_results]
        return [SearchResult(url=f"{base}/pages/paper/{paper_id}", title=meta["title"],
                             snippet=meta["snippet"], provider=self.name,
                             published=meta["published"] or None) for paper_id, meta in found]


class _Chunks(httpx.SyncByteStream):
    def __init__(self, page: pages.PageResponse) -> None:
        self._page = page

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._page.chunks:
            yield chunk
            if self._page.chunk_delay:
                time.sleep(self._page.chunk_delay)


class _ParsedOnce(Fetcher):
    """The real Fetcher, except that a page it has parsed before in this test process (the
    same address and the same markup) is not parsed again: the stand-in serves the same few
    hundred pages to every run, and parsing them (trafilatura) was 60 % of an in-process
    run's CPU. Each distinct page is still parsed by the real code once; the end-to-end tests
    (`http_runs`, the CLI, the dashboard) parse every page they read."""

    _parsed: dict[tuple[str, bytes], tuple[str | None, str, str | None, str | None]] = {}
    _lock = threading.Lock()

    def _page_text(self, markup: str, url: str) -> tuple[str | None, str, str | None, str | None]:
        key = (url, hashlib.blake2b(markup.encode("utf-8", "surrogatepass")).digest())
        with self._lock:
            known = self._parsed.get(key)
        if known is None:
            known = super()._page_text(markup, url)
            with self._lock:
                self._parsed[key] = known
        return known


def fake_fetcher(standin: StandinServer, config: ResearchConfig) -> Fetcher:
    """The real Fetcher (limits, redirects, address checks per hop, parsing once per distinct
    page: `_ParsedOnce`), reading the stand-in's pages in-process instead of over a socket."""

    def serve(request: httpx.Request) -> httpx.Response:
        target = request.url.raw_path.decode("ascii", "replace")
        _log(standin, "pages", None, path=request.url.path)
        page = pages.page_response(target, standin.base_url)
        if page is None:
            return httpx.Response(404, headers={"Content-Type": "text/html"},
                                  content=b"<html><body>Not found</body></html>")
        return httpx.Response(int(page.status), headers=dict(page.headers), stream=_Chunks(page))

    limits = FetchLimits(timeout_s=config.fetch_timeout_s, allow_private_hosts=config.allow_private_hosts,
                         allowed_ports=config.allowed_ports)
    return _ParsedOnce(limits, transport=httpx.MockTransport(serve))


class Fakes:
    """The three seams of `execute()` (`llm_factory`, `search_factory`, `fetcher`), faked."""

    def __init__(self, standin: StandinServer) -> None:
        self.standin = standin

    def llm_factory(self, provider: str, model: str, config: ResearchConfig,
                    credentials: Credentials) -> FakeModel:
        return FakeModel(self.standin, provider, model)

    def search_factory(self, config: ResearchConfig, credentials: Credentials) -> list[SearchProvider]:
        """Faked web/academic search; other providers (documents) stay real."""
        from research.search import PROVIDERS

        return [FakeSearch(self.standin, name) if name in FAKED_SEARCH
                else PROVIDERS[name](config, credentials) for name in config.active_search_providers()]

    def deps(self, config: ResearchConfig) -> dict[str, Any]:
        """Keyword arguments for `run_research` / `resume` / `execute`."""
        return {"llm_factory": self.llm_factory, "search_factory": self.search_factory,
                "fetcher": fake_fetcher(self.standin, config)}


def _log(standin: StandinServer, api: str, body: Any, *, path: str = "(in-process)") -> dict[str, Any]:
    entry = {"api": api, "method": "POST", "path": path, "query": {}, "headers": {},
             "json": body, "time": time.time()}
    standin._record(entry)
    return entry


def _body(provider: str, model: str, messages: Sequence[Message], schema: dict | None) -> dict[str, Any]:
    """The request body the provider's SDK would send (what tests read back from the log)."""
    if provider == "gemini":
        body: dict[str, Any] = {
            "systemInstruction": {"parts": [{"text": m.content} for m in messages if m.role == "system"]},
            "contents": [{"role": "user", "parts": [{"text": m.content}]}
                         for m in messages if m.role != "system"]}
        if schema is not None:
            body["generationConfig"] = {"responseMimeType": "application/json",
                                        "responseJsonSchema": schema}
        return body
    body = {"model": model, "messages": [{"role": m.role, "content": m.content} for m in messages]}
    if schema is not None:
        body["response_format"] = {"type": "json_schema", "json_schema": {
            "name": schema.get("title"), "schema": schema, "strict": False}}
    return body
