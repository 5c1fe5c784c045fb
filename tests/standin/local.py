"""The stand-in as a model server on a workstation: Ollama, a llama.cpp server or vLLM (issue 31).

Such a server generates a few answers at a time (`parallel`, default 1: Ollama's
OLLAMA_NUM_PARALLEL, llama.cpp's `--parallel` slots, vLLM's batch on a small GPU) and queues
the rest: a queued request waits, unanswered, on its open connection, first come first served.
It writes at `tokens_per_second` and has a context window of `context_tokens` (prompt and
answer together). What it says about itself and what it does with a longer prompt depends on
the kind, as each documents it:

  ollama    GET /api/version {"version"}; POST /api/show {"model"}: `model_info`
            `<arch>.context_length` (what the model was trained for) and `parameters` with the
            configured `num_ctx`; GET /api/ps lists the loaded model with its `context_length`.
            A longer prompt is cut silently to the window (its start goes), and the answer's
            `usage.prompt_tokens` is the cut count
            (https://github.com/ollama/ollama/blob/main/docs/api.md, docs/faq.md "How can I
            specify the context window size?" and "How does Ollama handle concurrent requests?":
            OLLAMA_CONTEXT_LENGTH, OLLAMA_NUM_PARALLEL).
  llamacpp  GET /props: `default_generation_settings.n_ctx` (per slot) and `total_slots`;
            GET /health. A prompt over n_ctx gets 400 `exceed_context_size_error`
            (https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md).
  vllm      GET /v1/models: `max_model_len`; GET /version. A prompt plus max_tokens over
            max_model_len gets 400 "This model's maximum context length is ..."
            (https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html).

All three speak OpenAI Chat Completions at /v1/chat/completions and need no key.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["ollama", "llamacpp", "vllm"]
KINDS: tuple[Kind, ...] = ("ollama", "llamacpp", "vllm")
TRAINED_CONTEXT = 131_072  # what the model itself could take (Ollama's model_info, llama.cpp's n_ctx_train)


@dataclass(frozen=True)
class LocalServer:
    kind: Kind = "ollama"
    parallel: int = 1
    tokens_per_second: float = 30.0
    context_tokens: int = 8192
    model: str = "llama3.1:8b"
    max_queue: int | None = None  # requests waiting at most; past it 503 (Ollama: OLLAMA_MAX_QUEUE)


class Slots:
    """At most `parallel` answers under way; the others wait their turn, in arrival order."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._parallel = 0  # 0: no limit
        self._max_queue: int | None = None
        self._busy = 0
        self._queue: deque[int] = deque()
        self._tickets = 0

    def configure(self, parallel: int, max_queue: int | None = None) -> None:
        with self._cond:
            self._parallel = max(0, parallel)
            self._max_queue = max_queue
            self._cond.notify_all()

    def acquire(self, abandoned: Callable[[], bool]) -> str:
        """Wait for a slot: "ok"; "abandoned" when `abandoned()` turns true meanwhile (reset,
        shutdown, the client gone); "full" when the waiting line is already at its maximum."""
        with self._cond:
            if not self._parallel:
                self._busy += 1
                return "ok"
            waits = bool(self._queue) or self._busy >= self._parallel
            if waits and self._max_queue is not None and len(self._queue) >= self._max_queue:
                return "full"
            self._tickets += 1
            ticket = self._tickets
            self._queue.append(ticket)
            while not (self._queue[0] == ticket and self._busy < self._parallel):
                if abandoned():
                    self._queue.remove(ticket)
                    self._cond.notify_all()
                    return "abandoned"
                self._cond.wait(0.05)
            self._queue.popleft()
            self._busy += 1
            self._cond.notify_all()
            return "ok"

    def release(self) -> None:
        with self._cond:
            self._busy = max(0, self._busy - 1)
            self._cond.notify_all()

    def clear(self) -> None:
        """Forget the waiting line (its requests are abandoned by the reset that calls this)."""
        with self._cond:
            self._parallel = 0
            self._busy = 0
            self._queue.clear()
            self._cond.notify_all()


def info(server: LocalServer | None, method: str, path: str,
         body: Any) -> tuple[int, Any] | None:
    """The server's answer about itself (status, JSON or text), None for an unknown path."""
    now = int(time.time())
    if server is None:
        if path == "/v1/models":  # OpenAI's own list: no context length in it
            return 200, {"object": "list", "data": [
                {"id": m, "object": "model", "created": 1_700_000_000, "owned_by": "system"}
                for m in ("gpt-4.1", "gpt-4.1-mini", "gpt-5-mini")]}
        return None
    name, ctx = server.model, server.context_tokens
    if server.kind == "ollama":
        if path == "/" and method == "GET":
            return 200, "Ollama is running"
        if path == "/api/version":
            return 200, {"version": "0.12.6"}
        if path == "/api/show" and method == "POST":
            wanted = str((body or {}).get("model") or (body or {}).get("name") or "")
            if wanted and wanted.split(":")[0] != name.split(":")[0]:
                return 404, {"error": f"model '{wanted}' not found"}
            return 200, {
                "modelfile": f"FROM {name}\nPARAMETER num_ctx {ctx}\n",
                "parameters": f"num_ctx                        {ctx}\n"
                              'stop                           "<|eot_id|>"',
                "template": "{{ .Prompt }}",
                "details": {"parent_model": "", "format": "gguf", "family": "llama",
                            "families": ["llama"], "parameter_size": "8.0B",
                            "quantization_level": "Q4_K_M"},
                "model_info": {"general.architecture": "llama",
                               "general.parameter_count": 8_030_261_248,
                               "llama.context_length": TRAINED_CONTEXT,
                               "llama.embedding_length": 4096},
                "capabilities": ["completion", "tools"],
                "modified_at": "2026-01-01T00:00:00Z",
            }
        if path == "/api/ps":
            return 200, {"models": [{"name": name, "model": name, "size": 6_000_000_000,
                                     "context_length": ctx,
                                     "expires_at": "2099-01-01T00:00:00Z"}]}
        if path == "/v1/models":
            return 200, {"object": "list", "data": [
                {"id": name, "object": "model", "created": now, "owned_by": "library"}]}
    if server.kind == "llamacpp":
        if path == "/props":
            return 200, {
                "default_generation_settings": {"n_ctx": ctx, "params": {"n_predict": -1,
                                                                         "temperature": 0.8}},
                "total_slots": server.parallel,
                "model_path": f"/models/{name}.gguf",
                "chat_template": "{{ messages }}",
                "build_info": "b6500-standin",
            }
        if path == "/health":
            return 200, {"status": "ok"}
        if path == "/v1/models":
            return 200, {"object": "list", "data": [
                {"id": name, "object": "model", "created": now, "owned_by": "llamacpp",
                 "meta": {"n_ctx_train": TRAINED_CONTEXT, "n_params": 8_030_261_248}}]}
    if server.kind == "vllm":
        if path == "/version":
            return 200, {"version": "0.11.0"}
        if path == "/v1/models":
            return 200, {"object": "list", "data": [
                {"id": name, "object": "model", "created": now, "owned_by": "vllm",
                 "root": name, "parent": None, "max_model_len": ctx, "permission": []}]}
    return None


# Ollama's answer when its waiting line is full (server/sched.go, ErrMaxQueue).
BUSY = (503, {"error": "server busy, please try again.  maximum pending requests exceeded"})


def refusal(server: LocalServer, prompt_tokens: int, max_tokens: int) -> tuple[int, Any] | None:
    """The 400 a llama.cpp or vLLM server gives a request over its window; None when it fits
    (Ollama never refuses: see `fit`)."""
    ctx = server.context_tokens
    if server.kind == "llamacpp" and prompt_tokens > ctx:
        return 400, {"error": {
            "code": 400, "type": "exceed_context_size_error",
            "message": f"request ({prompt_tokens} tokens) exceeds the available context size "
                       f"({ctx} tokens), try increasing it",
            "n_prompt_tokens": prompt_tokens, "n_ctx": ctx}}
    if server.kind == "vllm" and prompt_tokens + max_tokens > ctx:
        if max_tokens:
            asked = (f"However, you requested {prompt_tokens + max_tokens} tokens ({prompt_tokens} "
                     f"in the messages, {max_tokens} in the completion). Please reduce the length "
                     "of the messages or completion.")
        else:
            asked = (f"However, you requested {prompt_tokens} tokens in the messages, Please "
                     "reduce the length of the messages.")
        return 400, {"error": {
            "message": f"This model's maximum context length is {ctx} tokens. {asked}",
            "type": "BadRequestError", "param": None, "code": 400}}
    return None


def fit(server: LocalServer, system: str, user: str) -> str:
    """The user text an Ollama server really reads: a prompt over its window loses its start
    (the system prompt stays), silently. Tokens are counted as the stand-in counts them
    (4 characters each)."""
    if server.kind != "ollama":
        return user
    room = max(0, server.context_tokens * 4 - len(system))
    return user if len(user) <= room else user[len(user) - room:]
