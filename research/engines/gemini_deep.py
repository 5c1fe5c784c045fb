"""Gemini Deep Research: the agent behind the Interactions API, through `google-genai`.

google-genai 3.3.0 has the Interactions API (`client.interactions`), which sends:

    POST /v1beta/interactions {agent, input, background: true}
    GET  /v1beta/interactions/{id}?stream=false   (polled until completed / failed / cancelled)
    POST /v1beta/interactions/{id}/cancel

with the key in `x-goog-api-key` and the version prefix from `HttpOptions.api_version`,
pinned to `gemini_llm.API_VERSION` (the SDK's own default, `v1`, is not where Google
documents the Interactions API).
An `Interaction` has `steps`; the report is the text content of the last run of
`model_output` steps, whose `url_citation` annotations give url, title and the span they
attribute, measured in UTF-8 bytes (turned into character offsets here).
`google_search_call` steps carry the searches the agent ran.

The Interactions client retries by itself unless told otherwise, so it gets
`HttpRetryOptions(attempts=1)`: `research.core.retry` is the one retry layer. Its errors are the
`google.genai._interactions` classes; HTTP ones become `genai.errors.APIError` so that
`GeminiChat`'s mapping (quota vs rate limit, Retry-After, key refused) applies unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from google import genai
from google.genai import _interactions as interaction_errors
from google.genai import errors as genai_errors
from google.genai import types

from research.core.config import Credentials, ResearchConfig
from research.core.errors import ConfigError, ProviderError, ProviderTimeout
from research.engines.base import Citation, RemoteJob
from research.llm import build_llm
from research.llm.deadline import DeadlineTransport
from research.llm.gemini_llm import API_VERSION, HTTP_TIMEOUTS, HTTP_TRANSPORT_ERRORS, GeminiChat
from research.llm.tls import shared_tls_context

ENGINE = "gemini-deep-research"

# Interaction statuses in the engine's vocabulary (see base.RemoteJob.status).
_STATUS = {
    "queued": "queued", "in_progress": "in_progress", "requires_continuation": "in_progress",
    "completed": "completed", "failed": "failed", "budget_exceeded": "failed",
    "requires_action": "failed", "cancelled": "cancelled", "incomplete": "incomplete",
}
_TIMEOUT_ERRORS: tuple[type[BaseException], ...] = (interaction_errors.APITimeoutError, *HTTP_TIMEOUTS)
_CONNECTION_ERRORS: tuple[type[BaseException], ...] = (interaction_errors.APIConnectionError,
                                                      *HTTP_TRANSPORT_ERRORS)


class GeminiDeepResearch:
    engine = ENGINE
    provider = "gemini"

    def __init__(self, agent: str, config: ResearchConfig, credentials: Credentials) -> None:
        chat = build_llm("gemini", agent, config, credentials)  # ConfigError names a missing key
        if not isinstance(chat, GeminiChat):
            raise ConfigError("The Gemini deep-research engine needs the Gemini provider.")
        self.model = agent
        self._chat = chat
        tls = shared_tls_context()  # as GeminiChat's: the SDK would build two contexts a client
        options = types.HttpOptions(
            base_url=config.gemini_base_url, api_version=API_VERSION,
            timeout=max(1, int(config.request_timeout_s * 1000)),
            retry_options=types.HttpRetryOptions(attempts=1),
            # a trickle ends at its deadline
            client_args={"verify": tls, "transport": DeadlineTransport()},
            async_client_args={"verify": tls, "ssl": tls},
        )
        # Keep the Client: dropping it closes the HTTP connection its resources share.
        self._client = genai.Client(vertexai=False, api_key=credentials.get("gemini"), http_options=options)
        self._interactions: Any = self._client.interactions

    def create(self, prompt: str) -> RemoteJob:
        return self._call(lambda: self._interactions.create(
            agent=self.model, input=prompt, background=True,
        ))

    def retrieve(self, job_id: str) -> RemoteJob:
        return self._call(lambda: self._interactions.get(job_id))

    def cancel(self, job_id: str) -> RemoteJob:
        return self._call(lambda: self._interactions.cancel(job_id))

    def _call(self, fn: Callable[[], Any]) -> RemoteJob:
        where = f"Gemini ({self.model})"
        try:
            return to_job(fn())
        except interaction_errors.APIStatusError as exc:
            raise self._chat._map_api_error(
                genai_errors.APIError(exc.status_code or 0, exc.body, exc.response)
            ) from None
        except _TIMEOUT_ERRORS:
            raise ProviderTimeout(f"{where} did not answer in time.", provider=self.provider) from None
        except _CONNECTION_ERRORS as exc:
            raise ProviderError(
                f"Could not connect to {where}: {self._chat._clean(str(exc) or exc.__class__.__name__)}",
                provider=self.provider,
            ) from None
        except interaction_errors.APIError as exc:
            raise ProviderError(f"{where} failed: {self._chat._clean(str(exc))[:300]}",
                                provider=self.provider) from None


def to_job(interaction: Any) -> RemoteJob:
    """An `Interaction` in the engine's shape."""
    parts: list[str] = []
    citations: list[Citation] = []
    queries: list[str] = []
    for content in _final_output(interaction.steps or []):
        text = str(getattr(content, "text", "") or "")
        raw = text.encode("utf-8")
        offset = sum(len(p) for p in parts)
        for note in getattr(content, "annotations", None) or []:
            if getattr(note, "type", "") != "url_citation" or not getattr(note, "url", None):
                continue
            start = _char_index(raw, int(note.start_index or 0))
            end = _char_index(raw, int(note.end_index if note.end_index is not None else len(raw)))
            citations.append(Citation(url=str(note.url), title=str(note.title or ""),
                                      start=offset + start, end=offset + end))
        parts.append(text)
    for step in interaction.steps or []:
        if getattr(step, "type", "") == "google_search_call":
            queries += [str(q) for q in (getattr(step.arguments, "queries", None) or []) if q]
    status = _STATUS.get(str(interaction.status), "in_progress")
    error = "; ".join(str(e.message or e.code) for e in interaction.errors or [] if e.message or e.code)
    if str(interaction.status) in ("budget_exceeded", "requires_action") and not error:
        error = f"the agent stopped with status {interaction.status}"
    usage = interaction.usage
    return RemoteJob(
        id=str(interaction.id), status=status, text="".join(parts), citations=tuple(citations),
        queries=tuple(dict.fromkeys(queries)), error=error or None,
        input_tokens=int(usage.total_input_tokens or 0) if usage else 0,
        output_tokens=(int(usage.total_output_tokens or 0) + int(usage.total_thought_tokens or 0))
        if usage else 0,
    )


def _final_output(steps: list[Any]) -> list[Any]:
    """Text contents of the last run of model_output steps (thoughts in between are skipped),
    the same text the SDK exposes as `output_text`."""
    runs: list[list[Any]] = []
    current: list[Any] = []
    for step in steps:
        kind = getattr(step, "type", "")
        if kind == "thought":
            continue
        if kind == "model_output":
            current += [c for c in getattr(step, "content", None) or [] if getattr(c, "type", "") == "text"]
        elif current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    return runs[-1] if runs else []


def _char_index(raw: bytes, byte_index: int) -> int:
    """Characters before UTF-8 byte `byte_index` (an index inside a character rounds down)."""
    return len(raw[: max(0, byte_index)].decode("utf-8", errors="ignore"))
