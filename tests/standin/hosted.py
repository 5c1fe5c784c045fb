"""Stand-ins for the hosted deep-research services, served by `tests.standin.server`.

Two APIs, both in background mode, both deterministic (the same question always gives the
same report, citing the same stand-in article pages):

  openai_responses     OpenAI Responses API with a deep-research model
      POST /v1/responses                 {model, input, background: true, tools, ...}
                                         -> Response {id: "resp_...", status: "queued", output: []}
      GET  /v1/responses/{id}            -> in_progress, ..., then completed (or failed)
      POST /v1/responses/{id}/cancel     -> status "cancelled"
    A completed Response has `output` items: reasoning, web_search_call {action: {type:
    "search", query}}, and a message whose `output_text` content carries Markdown with
    inline links and `url_citation` annotations {url, title, start_index, end_index} that
    span the links (character offsets).

  gemini_interactions  Gemini Interactions API with the Deep Research agent
      POST /v1[beta]/interactions         {agent, input, background: true}
                                         -> Interaction {id, status: "in_progress", steps: []}
      GET  /v1[beta]/interactions/{id}    -> in_progress, ..., then completed (or failed)
      POST /v1[beta]/interactions/{id}/cancel (or :cancel) -> status "cancelled"
    A completed Interaction has `steps`: thought, google_search_call {arguments: {queries}},
    and model_output whose text content carries `url_citation` annotations spanning the
    cited sentences, with start/end measured in UTF-8 bytes (as the API documents). The
    text also has the agent's own "[n]" markers and its own Sources list, as real reports do.

A job completes on its `polls_to_complete`-th GET. Controls on `server.hosted`:
`polls_to_complete`, `fail_message` (jobs then end "failed" with it), `jobs`, and
`reset()`. HTTP faults use the server's `add_fault(api, "status", status=429, task=...)`
with task "create", "retrieve" or "cancel".
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.standin import pages

APIS = ("openai_responses", "gemini_interactions")

_RESPONSES = re.compile(r"^/v1/responses(?:/(?P<id>[^/]+)(?P<cancel>/cancel)?)?$")
_INTERACTIONS = re.compile(
    r"^/v1(?:beta|alpha)?/interactions(?:/(?P<id>[^/:]+)(?P<cancel>/cancel|:cancel)?)?$"
)
_QUESTION = re.compile(r"<question>(.*?)</question>", re.DOTALL)
_WORD = re.compile(r"[a-z0-9]+")
TERMINAL = ("completed", "failed", "cancelled", "incomplete")

# Which article numbers each engine cites: 3 and 4 are cited by both (cross-engine dedupe).
OPENAI_ARTICLES = (1, 2, 3, 4)
GEMINI_ARTICLES = (3, 4, 5, 6)


def api_for(method: str, path: str) -> str | None:
    if _RESPONSES.match(path):
        return "openai_responses"
    if _INTERACTIONS.match(path):
        return "gemini_interactions"
    return None


def task_of(api: str, method: str, path: str) -> str:
    """"create", "retrieve" or "cancel": what a fault's `task=` can aim at."""
    match = (_RESPONSES if api == "openai_responses" else _INTERACTIONS).match(path)
    if match is None or match.group("id") is None:
        return "create"
    return "cancel" if match.group("cancel") else "retrieve"


def article_slug(question: str, k: int) -> str:
    """The slug of the k-th article a hosted engine cites for `question`."""
    kebab = "-".join(_WORD.findall(question.lower())[:6]) or "topic"
    return f"{kebab[:60].strip('-')}-{k}"


def cited_urls(base_url: str, question: str, api: str) -> list[str]:
    """Every URL (as written, before canonicalisation) the engine's report cites."""
    numbers = OPENAI_ARTICLES if api == "openai_responses" else GEMINI_ARTICLES
    urls = [f"{base_url}/pages/article/{article_slug(question, k)}" for k in numbers]
    if api == "openai_responses":
        return [u + "?utm_source=openai" for u in urls]
    return [*urls, f"{base_url}/pages/missing/{article_slug(question, 9)}"]


@dataclass
class Job:
    id: str
    api: str
    question: str
    model: str
    created: float
    polls: int = 0
    status: str = "queued"
    fail_message: str | None = None
    cancelled: bool = False


@dataclass
class HostedState:
    polls_to_complete: int = 3
    fail_message: str | None = None
    jobs: dict[str, Job] = field(default_factory=dict)
    # A test's own report text: report_text(question, base_url) -> text (no annotations).
    report_text: Callable[[str, str], str] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _counter: int = 0

    def reset(self) -> None:
        with self._lock:
            self.polls_to_complete = 3
            self.fail_message = None
            self.report_text = None
            self.jobs.clear()

    # --- dispatch ---------------------------------------------------------------------

    def handle(self, api: str, method: str, path: str, body: Any,
               headers: Mapping[str, str], base_url: str) -> tuple[int, dict[str, Any]]:
        openai = api == "openai_responses"
        lower = {k.lower(): v for k, v in headers.items()}
        if openai and not str(lower.get("authorization", "")).startswith("Bearer "):
            return 401, _openai_error("Incorrect API key provided.", "invalid_request_error")
        if not openai and not lower.get("x-goog-api-key"):
            return 403, _gemini_error(403, "Method doesn't allow unregistered callers.",
                                      "PERMISSION_DENIED")
        match = (_RESPONSES if openai else _INTERACTIONS).match(path)
        assert match is not None
        job_id = match.group("id")
        if job_id is None:
            if method != "POST" or not isinstance(body, dict):
                return 400, self._bad(openai, "Expected a JSON body.")
            return self._create(api, body, base_url)
        with self._lock:
            job = self.jobs.get(job_id)
        if job is None or job.api != api:
            if openai:
                return 404, _openai_error(f"No response found with id '{job_id}'.",
                                          "invalid_request_error")
            return 404, _gemini_error(404, f"Interaction {job_id} not found.", "NOT_FOUND")
        if match.group("cancel"):
            with self._lock:
                if job.status not in TERMINAL:
                    job.status = "cancelled"
                    job.cancelled = True
            return 200, self._render(job, base_url)
        with self._lock:
            if job.status not in TERMINAL:
                job.polls += 1
                if job.polls >= self.polls_to_complete:
                    job.status = "failed" if job.fail_message else "completed"
                else:
                    job.status = "in_progress"
        return 200, self._render(job, base_url)

    def _bad(self, openai: bool, message: str) -> dict[str, Any]:
        if openai:
            return _openai_error(message, "invalid_request_error")
        return _gemini_error(400, message, "INVALID_ARGUMENT")

    def _create(self, api: str, body: dict[str, Any], base_url: str) -> tuple[int, dict[str, Any]]:
        openai = api == "openai_responses"
        if body.get("background") is not True:
            return 400, self._bad(openai, "This stand-in only runs deep research in background mode.")
        if openai:
            model = str(body.get("model") or "")
            if "deep-research" in model and not any(
                isinstance(t, dict) and str(t.get("type", "")).startswith(("web_search", "mcp", "file_search"))
                for t in body.get("tools") or []
            ):
                return 400, _openai_error(
                    "Deep research models require at least one of 'web_search_preview', 'mcp', "
                    "or 'file_search' tools.", "invalid_request_error")
        else:
            model = str(body.get("agent") or "")
            if not model:
                return 400, _gemini_error(400, "Either model or agent is required.", "INVALID_ARGUMENT")
        with self._lock:
            self._counter += 1
            prefix = "resp_" if openai else "v1_int"
            job = Job(id=f"{prefix}standin{self._counter:04d}", api=api,
                      question=_question(body.get("input")), model=model, created=time.time(),
                      status="queued" if openai else "in_progress",
                      fail_message=self.fail_message)
            self.jobs[job.id] = job
        return 200, self._render(job, base_url)

    def _render(self, job: Job, base_url: str) -> dict[str, Any]:
        if job.api == "openai_responses":
            return _openai_response(job, base_url, self.report_text)
        return _gemini_interaction(job, base_url, self.report_text)


# --- question and report text ---------------------------------------------------------------

def _question(value: Any) -> str:
    """The research question inside the prompt (a string or a list of input items)."""
    if isinstance(value, list):
        parts = []
        for item in value:
            if isinstance(item, dict):
                content = item.get("content", item.get("text", ""))
                if isinstance(content, list):
                    parts += [str(c.get("text", "")) for c in content if isinstance(c, dict)]
                else:
                    parts.append(str(content))
            else:
                parts.append(str(item))
        value = "\n".join(parts)
    text = str(value or "")
    match = _QUESTION.search(text)
    return " ".join((match.group(1) if match else text).split())


def _claim(slug: str) -> tuple[str, str]:
    """(title, first-paragraph sentence) of a stand-in article: what a report would say."""
    meta = pages.article_meta(slug)
    return meta["title"], meta["snippet"]


def _openai_report(question: str, base_url: str) -> tuple[str, list[dict[str, Any]]]:
    urls = cited_urls(base_url, question, "openai_responses")
    slugs = [article_slug(question, k) for k in OPENAI_ARTICLES]
    claims = [_claim(s) for s in slugs]
    text = ""
    annotations: list[dict[str, Any]] = []

    def add(sentence: str, i: int) -> None:
        nonlocal text
        title = claims[i][0]
        text += sentence.rstrip(".") + " ("
        link = f"[{title}]({urls[i]})"
        annotations.append({"type": "url_citation", "start_index": len(text),
                            "end_index": len(text) + len(link), "url": urls[i], "title": title})
        text += link + ").\n"

    topic = question.rstrip("?") or "The question"
    text += f"# {topic}: research report\n\n## Executive summary\n"
    add(claims[0][1], 0)
    text += "\n## Key findings\n"
    for i in (1, 2):
        text += "- "
        add(claims[i][1], i)
    text += "\n## Where sources disagree\n"
    add(claims[3][1], 3)
    text += "The first source's figures are the most recent"
    text += " ("
    link = f"[{claims[0][0]}]({urls[0]})"
    annotations.append({"type": "url_citation", "start_index": len(text),
                        "end_index": len(text) + len(link), "url": urls[0], "title": claims[0][0]})
    text += link + ").\n"
    # Real reports also link pages in prose without an annotation: the engine must cite them too.
    text += f"More detail on this is in [{claims[1][0]}]({urls[1]}).\n"
    return text, annotations


def _gemini_report(question: str, base_url: str) -> tuple[str, list[dict[str, Any]]]:
    urls = cited_urls(base_url, question, "gemini_interactions")
    slugs = [article_slug(question, k) for k in GEMINI_ARTICLES]
    claims = [_claim(s) for s in slugs]
    parts: list[str] = []
    annotations: list[dict[str, Any]] = []

    def size() -> int:
        return len("".join(parts).encode("utf-8"))

    def sentence(text: str, cited: list[int], marker: str) -> None:
        start = size()
        parts.append(text)
        end = size()
        for i in cited:
            title = claims[i][0] if i < len(claims) else "Archived statistics page"
            annotations.append({"type": "url_citation", "start_index": start, "end_index": end,
                                "url": urls[i], "title": title})
        parts.append(f" {marker}\n")

    topic = question.rstrip("?") or "The question"
    parts.append(f"# {topic} \u2014 a deep research report\n\n## Summary\n")
    sentence(claims[0][1], [0], "[1]")
    parts.append("\n## Costs and prices (\u20ac and $)\n")
    sentence(claims[1][1], [1, 2], "[2, 3]")
    sentence(claims[2][1], [2], "[3]")
    parts.append("\n## Regional picture\n")
    sentence(claims[3][1], [3], "[4]")
    sentence("Older statistics put the figures lower.", [4], "[cite: 5]")
    parts.append("\n## Sources\n")
    for n, url in enumerate(urls, 1):
        parts.append(f"{n}. {url}\n")
    return "".join(parts), annotations


def _openai_response(job: Job, base_url: str,
                     own: Callable[[str, str], str] | None = None) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    usage = None
    error = None
    if job.status in ("in_progress", "completed", "failed"):
        output.append({"type": "reasoning", "id": f"rs_{job.id}", "summary": []})
        output.append({"type": "web_search_call", "id": f"ws_{job.id}", "status": "completed",
                       "action": {"type": "search", "query": job.question}})
    if job.status == "completed":
        text, annotations = ((own(job.question, base_url), []) if own
                             else _openai_report(job.question, base_url))
        output.append({"type": "message", "id": f"msg_{job.id}", "status": "completed",
                       "role": "assistant", "content": [{"type": "output_text", "text": text,
                                                         "annotations": annotations, "logprobs": []}]})
        usage = {"input_tokens": 2400, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": 5100, "output_tokens_details": {"reasoning_tokens": 3900},
                 "total_tokens": 7500}
    if job.status == "failed":
        error = {"code": "server_error", "message": job.fail_message}
    return {
        "id": job.id, "object": "response", "created_at": int(job.created),
        "status": job.status, "background": True, "model": job.model, "output": output,
        "error": error, "incomplete_details": None, "instructions": None, "metadata": {},
        "parallel_tool_calls": True, "temperature": 1.0, "top_p": 1.0, "tool_choice": "auto",
        "tools": [{"type": "web_search_preview", "search_context_size": "medium"}],
        "usage": usage,
    }


def _gemini_interaction(job: Job, base_url: str,
                        own: Callable[[str, str], str] | None = None) -> dict[str, Any]:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(job.created))
    steps: list[dict[str, Any]] = []
    body: dict[str, Any] = {"id": job.id, "status": job.status, "agent": job.model,
                            "created": stamp, "updated": stamp, "role": "model"}
    if job.status in ("completed", "failed"):
        steps.append({"type": "thought", "summary": [{"type": "text", "text": "Planning the research."}]})
        steps.append({"type": "google_search_call", "id": f"gs_{job.id}",
                      "arguments": {"queries": [job.question, f"{job.question} statistics"]}})
    if job.status == "completed":
        text, annotations = ((own(job.question, base_url), []) if own
                             else _gemini_report(job.question, base_url))
        steps.append({"type": "model_output",
                      "content": [{"type": "text", "text": text, "annotations": annotations}]})
        body["usage"] = {"total_input_tokens": 3100, "total_output_tokens": 6200,
                         "total_thought_tokens": 2000, "total_tokens": 11300}
    if job.status == "failed":
        body["errors"] = [{"code": "INTERNAL", "message": job.fail_message}]
    body["steps"] = steps
    return body


def _openai_error(message: str, type_: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": None}}


def _gemini_error(code: int, message: str, status: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status, "details": []}}
