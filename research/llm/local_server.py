"""Model servers on your own machine or network (Ollama, llama.cpp, vLLM): their pace and window.

A local server is not a cloud account. It generates one answer, or a few, at a time and queues
the rest; it has a context window of a few thousand tokens; Ollama even cuts a longer prompt to
its window without a word. So for an OpenAI-compatible base URL on a loopback or private address
(or another, not a known cloud, that says it is one of these servers) the run:

- asks the server, once per process, what it allows (`discover`): cheap GETs and one POST to the
  configured host only, never following a redirect, each with a short time limit, and never
  fatal (an unknown server keeps today's behaviour and is learned from its errors);
- sends it no more requests at once than it generates (`ServerGate`, one per server, shared by
  every role and every run of the process); a request's time limit starts when it is its turn,
  not while it waits in our queue, and waiting there costs the step no time;
- fits prompts to the window learned (research/llm/fitting.py `window_chars`), lowers that
  window when the server refuses a prompt as too long, and names a server that cut a prompt
  silently, with the fix.

Where each fact comes from (the documentation each reading is modelled on):

- Ollama, https://github.com/ollama/ollama/blob/main/docs/api.md: `POST /api/show` gives
  `model_info["<arch>.context_length"]` (what the model was trained for: an upper bound) and
  `parameters` ("num_ctx 8192" when the model sets its window); `GET /api/ps` gives the
  `context_length` a loaded model really runs with; `GET /api/version` names the version. Its FAQ
  (https://docs.ollama.com/faq, "How can I specify the context window size?" and "How does Ollama
  handle concurrent requests?"): the window is `num_ctx` or `OLLAMA_CONTEXT_LENGTH`, by default
  2048 tokens before v0.6.7, 4096 since (from v0.15.5 chosen by VRAM, 4096 below 24 GiB,
  https://docs.ollama.com/context-length); `OLLAMA_NUM_PARALLEL` answers at once per model,
  "default 1" (older versions: "4 or 1 based on available memory"), which no endpoint reports;
  the rest wait in its queue (`OLLAMA_MAX_QUEUE`, 512) and a longer prompt is truncated.
- llama.cpp, https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md: `GET
  /props` gives `total_slots` ("defined by `--parallel`", `-np`) and
  `default_generation_settings.n_ctx`, one slot's window (`--ctx-size` shared by the slots); a
  longer prompt is refused with `exceed_context_size_error` and its `n_ctx`.
- vLLM, https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html: `GET /v1/models`
  lists each model with `owned_by: "vllm"` and `max_model_len` (`--max-model-len`); a longer
  prompt is refused ("This model's maximum context length is N tokens"). How many sequences it
  batches (`--max-num-seqs`) is not reported.

Where no endpoint says how many answers the server generates at once, the gate measures it
(`Parallelism`): it starts at one and lets one more in while answers given side by side take no
longer, per unit of work, than answers given alone.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from research.errors import FetchRefused, RunCancelled
from research.llm.limits import AccountLimits
from research.urls import IPAddress, parse_ip, refusal_kind

PROBE_TIMEOUT_S = 2.0          # each discovery request; a server that is slower is asked nothing
PROBE_MAX_BYTES = 1_000_000    # what we read of one discovery answer
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
OLLAMA_DEFAULT_CONTEXT = 4096  # since v0.6.7; 2048 before (docs.ollama.com/faq)
OLLAMA_OLD_DEFAULT_CONTEXT = 2048
KINDS = {"ollama": "Ollama", "llamacpp": "llama.cpp", "vllm": "vLLM"}


@dataclass(frozen=True)
class Discovery:
    """What one look at the server found: its kind ("" unknown) and what it allows."""

    kind: str = ""
    limits: AccountLimits = AccountLimits()
    version: str = ""


# --- where the server is ---------------------------------------------------------------------

def is_private_host(host: str, resolve: bool = True) -> bool:
    """True for loopback, private (RFC 1918, unique-local), link-local and shared (CGNAT)
    addresses, and names that resolve only to those. Cloud metadata addresses are never local
    servers (research.urls refuses them everywhere)."""
    addresses = host_addresses(host, resolve)
    return bool(addresses) and all(
        refusal_kind(a, allow_private=True) is None and refusal_kind(a, allow_private=False)
        for a in addresses)


def host_addresses(host: str, resolve: bool = True) -> list[IPAddress]:
    """The addresses `host` stands for: itself when written as an IP, else what it resolves to
    ([] when it does not; loopback for "localhost")."""
    host = host.strip("[]").lower().rstrip(".")
    if not host:
        return []
    if host == "localhost" or host.endswith(".localhost"):
        return [ipaddress.ip_address("127.0.0.1")]
    try:
        literal = parse_ip(host)
    except FetchRefused:
        return []
    if literal is not None:
        return [literal]
    if not resolve:
        return []
    with contextlib.suppress(OSError, UnicodeError, ValueError):
        return [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
                for info in socket.getaddrinfo(host, None)]
    return []


def never_asked(host: str) -> bool:
    """A host no request of ours may reach outside what the person sends it: a cloud metadata
    service (by name or address), or an address that is not a usable one."""
    if host.lower().rstrip(".") in ("metadata", "metadata.google.internal"):
        return True
    return any(refusal_kind(a, allow_private=True) is not None for a in host_addresses(host))


def server_root(base_url: str) -> str:
    """The server's own address: the base URL without its OpenAI-compatible `/v1` part, where
    Ollama's `/api/...` and llama.cpp's `/props` live."""
    parts = urlsplit(base_url.strip())
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return f"{parts.scheme}://{parts.netloc}{path}"


# --- asking the server -----------------------------------------------------------------------

Getter = Callable[[str, str, dict[str, Any] | None], Any]  # (method, url, json body) -> JSON


def discover(base_url: str, model: str, api_key: str = "", get: Getter | None = None) -> Discovery:
    """Ask the server at `base_url` what it is and what it allows for `model`. Every request
    goes to that host, follows no redirect and is time-bounded; any failure means "not known"."""
    ask = get or _http_getter(api_key)
    base = base_url.rstrip("/")
    root = server_root(base_url)

    def fetch(method: str, url: str, body: dict[str, Any] | None = None) -> Any:
        try:
            return ask(method, url, body)
        except Exception:  # noqa: BLE001 - discovery is never fatal: not known is an answer
            return None

    listed = fetch("GET", f"{base}/models")
    entry = _model_entry(listed, model)
    owner = str(entry.get("owned_by", "")).lower() if entry else ""
    if owner == "vllm":
        length = _positive(entry.get("max_model_len")) if entry else None
        return Discovery("vllm", AccountLimits(context_tokens=length, source="vLLM's /v1/models"))
    props = fetch("GET", f"{root}/props") if owner in ("llamacpp", "") else None
    if isinstance(props, dict) and isinstance(props.get("default_generation_settings"), dict):
        return _llamacpp(props)
    version = fetch("GET", f"{root}/api/version")
    if isinstance(version, dict) and isinstance(version.get("version"), str):
        shown = fetch("POST", f"{root}/api/show", {"model": model})
        running = fetch("GET", f"{root}/api/ps")
        return _ollama(str(version["version"]), shown, running, model)
    return Discovery()


def _llamacpp(props: dict[str, Any]) -> Discovery:
    settings = props["default_generation_settings"]
    return Discovery("llamacpp", AccountLimits(
        parallel=_positive(props.get("total_slots")),
        context_tokens=_positive(settings.get("n_ctx")),
        source="llama.cpp's /props"))


def _ollama(version: str, shown: Any, running: Any, model: str) -> Discovery:
    """Ollama's window for `model`: what the loaded model runs with, else its `num_ctx`, else
    the version's default; never more than the model was trained for."""
    trained = None
    num_ctx = None
    if isinstance(shown, dict):
        info = shown.get("model_info")
        if isinstance(info, dict):
            arch = info.get("general.architecture")
            trained = _positive(info.get(f"{arch}.context_length")) if arch else None
            if trained is None:  # an architecture key we do not know: any "*.context_length"
                trained = next((_positive(v) for k, v in info.items()
                                if k.endswith(".context_length") and _positive(v)), None)
        match = re.search(r"(?m)^\s*num_ctx\s+(\d+)", str(shown.get("parameters") or ""))
        num_ctx = int(match.group(1)) if match else None
    loaded = None
    if isinstance(running, dict) and isinstance(running.get("models"), list):
        for row in running["models"]:
            if isinstance(row, dict) and model in (row.get("name"), row.get("model")):
                loaded = _positive(row.get("context_length"))
    window = loaded or num_ctx or _ollama_default(version)
    if trained:
        window = min(window, trained)
    how = ("the loaded model's context_length (/api/ps)" if loaded else
           "its num_ctx (/api/show)" if num_ctx else f"Ollama {version}'s default window")
    return Discovery("ollama", AccountLimits(context_tokens=window, source=f"Ollama: {how}"),
                     version=version)


def _ollama_default(version: str) -> int:
    numbers = [int(n) for n in re.findall(r"\d+", version)[:3]]
    if numbers and tuple(numbers) < (0, 6, 7):
        return OLLAMA_OLD_DEFAULT_CONTEXT
    return OLLAMA_DEFAULT_CONTEXT


def _model_entry(listed: Any, model: str) -> dict[str, Any] | None:
    if not isinstance(listed, dict) or not isinstance(listed.get("data"), list):
        return None
    rows = [r for r in listed["data"] if isinstance(r, dict)]
    for row in rows:
        if row.get("id") == model:
            return row
    return rows[0] if len(rows) == 1 else None


def _positive(value: Any) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def _http_getter(api_key: str) -> Getter:
    """Plain HTTP to the configured host: no proxy from the environment, no redirects, a short
    time limit, a capped answer."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def get(method: str, url: str, body: dict[str, Any] | None) -> Any:
        with httpx.Client(timeout=PROBE_TIMEOUT_S, follow_redirects=False, trust_env=False,
                          headers=headers) as client, \
                client.stream(method, url, json=body) as response:
            if response.status_code != 200:
                return None
            data = b""
            for chunk in response.iter_bytes():
                data += chunk
                if len(data) > PROBE_MAX_BYTES:
                    return None
            return json.loads(data)

    return get


# --- how many at once ------------------------------------------------------------------------

@dataclass
class Parallelism:
    """How many answers the server generates at once: told (`fixed`), or measured.

    Measured by throughput: the gate starts at one answer at a time and counts the work the
    server gets through (answer tokens, plus a tenth of the prompt's) per second while it has
    as many of ours as the level allows ("full"). After a few answers at a level, one more is
    let in; if the next level is full for a few answers without getting through most of the
    extra work that one more answer at once would bring (GROWTH_SHARE), the server is queueing
    them: the level goes back down and stays. Only full time counts, so a run that had fewer requests to
    send than the level says nothing about the server.
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
        self._waits = _Waits()
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
        today, and each role trims its own after a refusal (research/llm/base.py)."""
        if tokens > 0 and self.kind:
            with self._lock:
                known = self._windows.get(model)
                self._windows[model] = min(known, tokens) if known else tokens

    def learn_from_refusal(self, model: str, message: str, body: Any = None) -> None:
        """A prompt refused as too long tells the window: llama.cpp's `n_ctx` field, or the
        "maximum context length is N tokens" of vLLM and OpenAI."""
        window = _positive(body.get("n_ctx")) if isinstance(body, dict) else None
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
             deadline: float | None = None) -> Iterator[float]:
        """Wait until the server has room for one more answer, then hold its place while the
        request runs. Yields the time the step's calls have waited in this queue so far (the
        credit added to the step's deadline): waiting our turn is not the step's time."""
        self.discovery(model)
        if not self.kind and not self.parallel.fixed:  # a server that did not say what it is
            yield 0.0                                   # is sent to as today
            return
        started = time.monotonic()
        with self._lock:
            self._waits.begin(deadline, started)
            try:
                while self._in_flight >= self.parallel.level:
                    if cancel is not None and cancel.is_set():
                        raise RunCancelled("The run was cancelled.")
                    self._lock.wait(GATE_POLL_S)
            finally:
                self._waits.end(deadline, time.monotonic())
            self._in_flight += 1
            self.parallel.in_flight(self._in_flight, time.monotonic())
            credit = self._waits.credit(deadline)
        try:
            yield credit
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


class _Waits:
    """Per step (its deadline identifies it), the time during which at least one of its calls
    waited in the server's queue: a step whose calls wait their turn gets that time back."""

    def __init__(self) -> None:
        self._waiting: dict[float, int] = {}
        self._since: dict[float, float] = {}
        self._credit: dict[float, float] = {}

    def begin(self, key: float | None, now: float) -> None:
        if key is None:
            return
        if self._waiting.get(key, 0) == 0:
            self._since[key] = now
        self._waiting[key] = self._waiting.get(key, 0) + 1
        if len(self._credit) > 1000:  # steps long over: forget them
            for old in [k for k in self._credit if k + self._credit[k] < now - 3600]:
                self._credit.pop(old, None)

    def end(self, key: float | None, now: float) -> None:
        if key is None:
            return
        self._waiting[key] -= 1
        if self._waiting[key] == 0:
            del self._waiting[key]
            self._credit[key] = self._credit.get(key, 0.0) + now - self._since.pop(key, now)

    def credit(self, key: float | None) -> float:
        return self._credit.get(key, 0.0) if key is not None else 0.0


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
