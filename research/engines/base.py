"""What a hosted deep-research service looks like to the engine: a background job.

Each service (OpenAI's deep-research models, Gemini's Deep Research agent) is one small
client with three calls — start, look, stop — that return a `RemoteJob` in one shape and
raise `research.core.errors` errors (one attempt each: `research.core.retry` owns retries).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

# Remote statuses, normalised: the job is still going while its status is one of these.
RUNNING = ("queued", "in_progress")


@dataclass(frozen=True)
class Citation:
    """A web page the service cites for text[start:end] (character offsets into `text`)."""

    url: str
    title: str
    start: int
    end: int


@dataclass(frozen=True)
class RemoteJob:
    id: str
    status: str                       # queued | in_progress | completed | failed | cancelled | incomplete
    text: str = ""                    # the report, as the service wrote it
    citations: tuple[Citation, ...] = ()
    queries: tuple[str, ...] = ()     # web searches the service says it ran
    error: str | None = None          # the service's reason, when failed or incomplete
    input_tokens: int = 0
    output_tokens: int = 0


class HostedClient(Protocol):
    engine: str     # "openai-deep-research" | "gemini-deep-research"
    provider: str   # "openai" | "gemini"
    model: str      # model or agent name

    def create(self, prompt: str) -> RemoteJob:
        """Start a background job."""
        ...

    def retrieve(self, job_id: str) -> RemoteJob:
        ...

    def cancel(self, job_id: str) -> RemoteJob:
        ...
