"""OpenAI deep research: the Responses API in background mode, through the `openai` SDK.

    POST /v1/responses {model, input, background: true, tools: [{type: web_search_preview}]}
    GET  /v1/responses/{id}            (polled until completed / failed / cancelled / incomplete)
    POST /v1/responses/{id}/cancel

The report is the `output_text` content of the `message` output items; its `url_citation`
annotations give url, title and the character span they attribute. `web_search_call`
items carry the searches the model ran. The client, its settings (base URL, max_retries=0,
timeout) and the mapping of SDK errors to `research.core.errors` are `OpenAIChat`'s, so the
hosted engine behaves exactly like our chat provider on keys, quotas and rate limits.
"""

from __future__ import annotations

from typing import Any

import openai

from research.core.config import Credentials, ResearchConfig
from research.core.errors import ConfigError
from research.engines.base import Citation, RemoteJob
from research.llm import build_llm
from research.llm.openai_llm import OpenAIChat

ENGINE = "openai-deep-research"


class OpenAIDeepResearch:
    engine = ENGINE
    provider = "openai"

    def __init__(self, model: str, config: ResearchConfig, credentials: Credentials) -> None:
        chat = build_llm("openai", model, config, credentials)  # ConfigError names a missing key
        if not isinstance(chat, OpenAIChat):
            raise ConfigError("The OpenAI deep-research engine needs the OpenAI provider.")
        self.model = model
        self._chat = chat
        self._responses = chat._client.responses

    def create(self, prompt: str) -> RemoteJob:
        return self._call(lambda: self._responses.create(
            model=self.model, input=prompt, background=True,
            tools=[{"type": "web_search_preview"}],
        ))

    def retrieve(self, job_id: str) -> RemoteJob:
        return self._call(lambda: self._responses.retrieve(job_id))

    def cancel(self, job_id: str) -> RemoteJob:
        return self._call(lambda: self._responses.cancel(job_id))

    def _call(self, fn: Any) -> RemoteJob:
        try:
            response = fn()
        except openai.OpenAIError as exc:
            raise self._chat._map_error(exc) from None
        return to_job(response)


def to_job(response: Any) -> RemoteJob:
    """A Responses API `Response` in the engine's shape."""
    parts: list[str] = []
    citations: list[Citation] = []
    queries: list[str] = []
    offset = 0
    for item in response.output or []:
        kind = getattr(item, "type", "")
        if kind == "web_search_call":
            action = getattr(item, "action", None)
            query = getattr(action, "query", None) if getattr(action, "type", "") == "search" else None
            if query:
                queries.append(str(query))
        if kind != "message":
            continue
        for content in getattr(item, "content", None) or []:
            if getattr(content, "type", "") != "output_text":
                continue
            if parts:
                parts.append("\n\n")
                offset += 2
            text = str(content.text or "")
            for note in content.annotations or []:
                if getattr(note, "type", "") == "url_citation" and getattr(note, "url", ""):
                    citations.append(Citation(
                        url=str(note.url), title=str(getattr(note, "title", "") or ""),
                        start=offset + int(note.start_index), end=offset + int(note.end_index),
                    ))
            parts.append(text)
            offset += len(text)
    error = None
    if response.error is not None:
        error = str(response.error.message or response.error.code or "")
    elif response.incomplete_details is not None:
        error = f"stopped early ({response.incomplete_details.reason or 'no reason given'})"
    usage = response.usage
    return RemoteJob(
        id=str(response.id), status=str(response.status or "in_progress"), text="".join(parts),
        citations=tuple(citations), queries=tuple(dict.fromkeys(queries)), error=error,
        input_tokens=int(usage.input_tokens or 0) if usage else 0,
        output_tokens=int(usage.output_tokens or 0) if usage else 0,
    )
