"""Model servers of one's own (Ollama, llama.cpp, vLLM): their pace and their window.

A local server is not a cloud account. It generates one answer, or a few, at a time and queues
the rest; its context window is a few thousand tokens; Ollama even cuts a longer prompt to its
window without a word (https://docs.ollama.com/faq). So for an OpenAI-compatible base URL on a
loopback or private address (or another, not a known cloud, that says it is one of these
servers), one `LocalServer` per server in the process, shared by every role and every run:

- asks the server what it is and allows (research/llm/local_discovery.py), once, and again for
  each run's models; an unknown server keeps today's behaviour and is learned from its errors;
- sends it no more requests at once than it generates (`turn`, its gate): as many as it says
  (llama.cpp's `total_slots`), else as many as measured (`Parallelism`: Ollama does not report
  OLLAMA_NUM_PARALLEL, "default 1" in its FAQ; vLLM does not report --max-num-seqs). A request's
  time limit starts at its turn, not while it waits in our queue, and the step gets that
  waiting time back (it is held time of the run, research/llm/pacing.py `RunWaits`);
- gives the window it learned to fitting (research/llm/fitting.py `window_chars`), lowers it
  when the server refuses a prompt as too long (llama.cpp's `n_ctx`, vLLM's "maximum context
  length is N tokens") or cuts one silently (its `usage.prompt_tokens` far below what was sent),
  and says so in plain words with the fix ("set its context length to at least 16,384").
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from research.core.errors import RunCancelled
from research.llm.limits import AccountLimits
from research.llm.local_discovery import (
    KINDS,
    Discovery,
    Getter,
    discover,
    is_private_host,
    never_asked,
    positive,
    server_root,
)

GATE_POLL_S = 0.25             # how often a request waiting its turn looks at cancellation
MAX_MEASURED_PARALLEL = 16     # the most answers at once the gate grows to by measuring
# One more at once must bring this share of the extra work an answer alone gets through: a
# server that queues still gains a little (it works while we read an answer and send the next:
# up to half as much again when answers are quick), one that batches gains nearly all.
GROWTH_SHARE = 0.75
PROBE_MAX_ANSWER_S = 15.0      # slower answers than this: not measured further (stays as is)
SAMPLES_PER_LEVEL = 6          # answers seen at a level before deciding to try the next
PROMPT_TOKEN_WORK = 0.1        # a prompt token costs a local server about a tenth of an answer
                               # token (prompt processing is batched, generation is not)
SILENT_CUT_RATIO = 0.6         # usage.prompt_tokens below this share of what we sent = cut
ROUND_CUT_RATIO = 0.9          # ... or below this share and about a round window size
EXACT_CUT_RATIO = 0.98         # ... or below this share and exactly a window (2048, 4096...)
CHARS_PER_TOKEN_SENT = 4       # our estimate of the tokens we sent, to compare with usage
MIN_CUT_TOKENS = 1000          # a cut prompt keeps about a window: never fewer than this
ADVISED_CONTEXT = 16_384       # the window we ask people to give a local model


# --- how many at once ------------------------------------------------------------------------

@dataclass
class Parallelism:
    """How many answers the server generates at once: told (`fixed`), or measured.

    Measured by throughput: the gate starts at one answer at a time and counts the work the
    server gets through (answer tokens, plus a tenth of the prompt's) per second while it has
    as many of ours as the level allows ("full"). After a few answers at a level, one more is
    let in; if the next level is full for a few answers without getting through most of the
    extra work that one more answer at once would bring (GROWTH_SHARE), the server is queueing
    them: the level goes back down and stays. Only full time counts, so a run that had fewer
    requests to send than the level says nothing about the server.
    """

    level: int = 1
    fixed: bool = False
    settled: bool = False
    ceiling: int = MAX_MEASURED_PARALLEL
    _throughput: dict[int, float] = field(default_factory=dict)  # work per full second, by level
    _full_since: float | None = None
    _full_time: float = 0.0
    _full_work: float = 0.0
    _answers: int = 0

    def in_flight(self, count: int, now: float) -> None:
        """The gate's count changed (before an answer's `answered`, after its release)."""
        if self._full_since is not None:
            self._full_time += now - self._full_since
            self._full_since = None
        if count >= self.level:
            self._full_since = now

    def answered(self, work: float, now: float) -> None:
        """An answer came back, the gate's count still including it."""
        if self.fixed or self.settled or work <= 0 or self._full_since is None:
            return
        self._full_time += now - self._full_since
        self._full_since = now
        self._full_work += work
        self._answers += 1
        if self._answers < SAMPLES_PER_LEVEL or self._full_time <= 0:
            return
        here = self._full_work / self._full_time
        before = self._throughput.get(self.level - 1)
        if before is None and self._full_time / self._answers > PROBE_MAX_ANSWER_S:
            self.settled = True  # answers this slow: a request let in beside one would wait
            return               # longer than is safe for its own time limit
        gain = 1 + GROWTH_SHARE / max(1, self.level - 1)
        if before is not None and here < before * gain:
            self.level -= 1
            self.settled = True
        elif self.level >= self.ceiling:
            self.settled = True
        else:
            self._throughput[self.level] = here
            self.level += 1
        self._full_since, self._full_time, self._full_work, self._answers = None, 0.0, 0.0, 0


# --- the server as the process knows it ------------------------------------------------------

class LocalServer:
    """One model server, shared by every role and run of the process: what it allows (found
    once, then learned from its answers) and its gate."""

    def __init__(self, base_url: str, *, api_key: str = "", get: Getter | None = None,
                 private: bool = True) -> None:
        self.base_url = base_url
        self.private = private  # on a loopback or private address
        self._api_key = api_key
        self._get = get
        self._lock = threading.Condition()
        self._found: dict[str, tuple[Discovery, float]] = {}  # by model: answer, when
        self._windows: dict[str, int] = {}       # by model: learned from refusals and cuts
        self.kind = ""
        self.parallel = Parallelism()
        self._in_flight = 0
        self.notices: list[str] = []            # plain sentences for the person, each once
        self._asking = threading.Lock()  # one discovery at a time; the others wait for it

    @property
    def name(self) -> str:
        label = KINDS.get(self.kind, "The local model server")
        return f"{label} at {urlsplit(self.base_url).netloc}"

    # -- what it allows --

    def discovery(self, model: str, *, since: float = 0.0) -> Discovery:
        """What the server said about `model`: asked once, then again only for a model built
        after the last answer (`since`, monotonic time; each run builds its models, so a server
        restarted with other settings between runs is seen by the next run). The first caller
        asks; the others wait for its answer."""
        with self._lock:
            found = self._found.get(model)
        if found is not None and found[1] >= since:
            return found[0]
        with self._asking:
            with self._lock:
                found = self._found.get(model)
            if found is not None and found[1] >= since:
                return found[0]
            return self._keep(model, discover(self.base_url, model, self._api_key, self._get))

    def _keep(self, model: str, found: Discovery) -> Discovery:
        """Keep a new answer; one that differs from the last (a server restarted with other
        settings) also drops what was learned and measured before."""
        with self._lock:
            before = self._found.get(model)
            self._found[model] = (found, time.monotonic())
            if before is not None and before[0] != found:
                self._windows.pop(model, None)
                self.parallel = Parallelism()
                self.kind = ""
            if found.kind:
                self.kind = found.kind
            told = found.limits.parallel
            if told and (not self.parallel.fixed or self.parallel.level != told):
                self.parallel = Parallelism(level=told, fixed=True)
            self._lock.notify_all()
            return found

    def context_tokens(self, model: str) -> int | None:
        """The window prompts for `model` must fit (prompt and answer together), if known."""
        told = self.discovery(model).limits.context_tokens
        learned = self._windows.get(model)
        if told and learned:
            return min(told, learned)
        return told or learned

    def limits(self, model: str) -> AccountLimits:
        found = self.discovery(model).limits
        return found.merged(AccountLimits(
            parallel=self.parallel.level, context_tokens=self.context_tokens(model)))

    def learn_window(self, model: str, tokens: int) -> None:
        """A window the server showed (a refusal, a cut): for every role, for the rest of the
        run. Only for a server that said what it is: to one that did not, prompts are sent as
        today, and each role trims its own after a refusal (research/llm/fitting.py)."""
        if tokens > 0 and self.kind:
            with self._lock:
                known = self._windows.get(model)
                self._windows[model] = min(known, tokens) if known else tokens

    def learn_from_refusal(self, model: str, message: str, body: Any = None) -> None:
        """A prompt refused as too long tells the window: llama.cpp's `n_ctx` field, or the
        "maximum context length is N tokens" of vLLM and OpenAI."""
        window = positive(body.get("n_ctx")) if isinstance(body, dict) else None
        if window is None:
            match = (re.search(r"maximum context length is (\d+)", message)
                     or re.search(r"available context size \((\d+)", message))
            window = int(match.group(1)) if match else None
        if window:
            self.learn_window(model, window)

    def silent_cut(self, model: str, sent_chars: int, prompt_tokens: int) -> str | None:
        """When the server says it read far fewer prompt tokens than we sent, it cut the prompt
        to its window without saying so (Ollama does): learn that window and return the reason
        in plain words, with the fix."""
        sent = sent_chars // CHARS_PER_TOKEN_SENT
        if not (self.private or self.kind) or not _looks_cut(sent, prompt_tokens):
            return None  # a public server that did not say what it is: counts as a cloud
        self.learn_window(model, prompt_tokens)
        fix = ("set OLLAMA_CONTEXT_LENGTH=16384 where Ollama is started, or num_ctx 16384 in "
               "the model's Modelfile" if self.kind == "ollama" else
               "raise its context size setting")
        notice = (f"{self.name} cut a prompt of about {sent:,} tokens to {prompt_tokens:,} "
                  f"without saying so: its context window for {model} is too small. Prompts "
                  f"are now shortened to fit (fewer sources each); for fuller answers set its "
                  f"context length to at least {ADVISED_CONTEXT:,} ({fix}).")
        with self._lock:
            if notice not in self.notices:
                self.notices.append(notice)
        return notice

    def small_window_notice(self, model: str) -> str | None:
        """A sentence for the person when the window is smaller than a run needs to keep its
        sources whole, or None."""
        window = self.context_tokens(model)
        if not window or window >= ADVISED_CONTEXT:
            return None
        fix = (" (OLLAMA_CONTEXT_LENGTH where Ollama is started, or num_ctx in the Modelfile)"
               if self.kind == "ollama" else " (--ctx-size, -c)" if self.kind == "llamacpp"
               else " (--max-model-len)" if self.kind == "vllm" else "")
        return (f"{self.name} gives {model} a context window of {window:,} tokens, so each "
                f"prompt carries fewer sources. For fuller answers set its context length to at "
                f"least {ADVISED_CONTEXT:,}{fix}.")

    # -- the gate --

    @contextlib.contextmanager
    def turn(self, model: str, *, cancel: threading.Event | None = None,
             holding: Callable[[], AbstractContextManager[None]] | None = None,
             ) -> Iterator[float]:
        """Wait until the server has room for one more answer, then hold its place while the
        request runs. The wait is inside `holding` (the run's `RunWaits.holding`, which gives
        the step its time back: waiting our turn is not the step's time); yields how long this
        request waited."""
        self.discovery(model)
        if not self.kind and not self.parallel.fixed:  # a server that did not say what it is
            yield 0.0                                   # is sent to as today
            return
        started = time.monotonic()
        with holding() if holding is not None else contextlib.nullcontext(), self._lock:
            while self._in_flight >= self.parallel.level:
                if cancel is not None and cancel.is_set():
                    raise RunCancelled("The run was cancelled.")
                self._lock.wait(GATE_POLL_S)
            self._in_flight += 1
            self.parallel.in_flight(self._in_flight, time.monotonic())
        try:
            yield time.monotonic() - started
        finally:
            with self._lock:
                self._in_flight -= 1
                self.parallel.in_flight(self._in_flight, time.monotonic())
                self._lock.notify_all()

    def record_answer(self, prompt_tokens: int, answer_tokens: int) -> None:
        """One answer's size, for measuring how many the server gives at once."""
        with self._lock:
            self.parallel.answered(answer_tokens + PROMPT_TOKEN_WORK * prompt_tokens + 1,
                                   time.monotonic())
            self._lock.notify_all()

    @property
    def in_flight(self) -> int:
        with self._lock:
            return self._in_flight


def _looks_cut(sent: int, read: int) -> bool:
    """Whether a server that read `read` prompt tokens of about `sent` cut the prompt. Ollama
    cuts to its window exactly (a round number: 2048, 4096, 8192...); a prompt that reused a
    cached prefix may count only its new tokens, so a small count alone is no cut."""
    if read <= 0 or sent <= 0:
        return False
    if read < SILENT_CUT_RATIO * sent and read >= MIN_CUT_TOKENS:
        return True
    if read >= 2048 and read % 1024 == 0 and read < EXACT_CUT_RATIO * sent:
        return True  # exactly a window: even a small cut (it took the prompt's start)
    near_round = read >= 2048 and read % 1024 >= 1024 - 16
    return near_round and read < ROUND_CUT_RATIO * sent


# --- one per server, for the whole process ---------------------------------------------------

_servers: dict[str, LocalServer] = {}
_servers_lock = threading.Lock()


# OpenAI-compatible clouds: they pace by their own headers (research/llm/pacing.py), and
# asking them what they are would only cost requests.
CLOUD_HOSTS = ("api.openai.com", "openai.azure.com", "openrouter.ai", "api.groq.com",
               "api.together.xyz", "api.deepseek.com", "api.mistral.ai", "api.fireworks.ai",
               "googleapis.com", "api.anthropic.com", "api.x.ai", "api.perplexity.ai")


def local_server(base_url: str | None, *, api_key: str = "") -> LocalServer | None:
    """The process's one `LocalServer` for `base_url`, or None when it is not set or is a
    known cloud. A host on a loopback or private address is a server of one's own whatever it
    says; another (a GPU box with a public address) is one only if it says it is Ollama,
    llama.cpp or vLLM: until then it is sent to as today."""
    if not base_url:
        return None
    parts = urlsplit(base_url.strip())
    host = (parts.hostname or "").lower().rstrip(".")
    if parts.scheme not in ("http", "https") or not host:
        return None
    if any(host == cloud or host.endswith("." + cloud) for cloud in CLOUD_HOSTS):
        return None
    key = server_root(base_url).lower()
    with _servers_lock:
        server = _servers.get(key)
    if server is not None:
        return server
    if never_asked(host):
        return None
    made = LocalServer(base_url, api_key=api_key, private=is_private_host(host))
    with _servers_lock:
        return _servers.setdefault(key, made)


def forget_servers() -> None:
    """Drop what the process learned about every server (tests start each from scratch)."""
    with _servers_lock:
        _servers.clear()


def server_of(llm: object) -> LocalServer | None:
    """The local server behind a chat model (research.llm.openai_llm), if it has one."""
    find = getattr(llm, "local_server", None)
    server = find() if callable(find) else None
    return server if isinstance(server, LocalServer) else None
