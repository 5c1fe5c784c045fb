"""Local model servers (research/llm/local_server.py, local_discovery.py): what Ollama,
llama.cpp and vLLM are asked, the gate that sends them no more than they generate at once,
prompts fitted to their window, and a silent cut named with its fix.

The servers here are tiny HTTP servers of this file that answer as each documents (Ollama's
/api/show, /api/ps and /api/version; llama.cpp's /props and its exceed_context_size_error;
vLLM's /v1/models max_model_len); model calls go through the real openai SDK.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from research.core.errors import ContextTooLong, StepTimeLimit
from research.core.executor import RequestSlots
from research.core.retry import RetryPolicy
from research.llm.base import RoleLLM
from research.llm.budget import UsageMeter
from research.llm.fitting import DROP_NOTE, fit_prompt, window_chars
from research.llm.local_discovery import discover, is_private_host
from research.llm.local_server import (
    ADVISED_CONTEXT,
    SAMPLES_PER_LEVEL,
    LocalServer,
    Parallelism,
    forget_servers,
    local_server,
    server_of,
)
from research.llm.messages import Message
from research.llm.openai_llm import OpenAIChat
from research.llm.waits import RunWaits


@dataclass
class Fake:
    """What the fake server is and does: its kind, what it reports, what it really allows."""

    kind: str                      # "ollama", "llamacpp", "vllm" or "other"
    window: int = 8192             # the real window, in tokens (chars // 4)
    reported_window: int | None = None
    slots: int = 1                 # llama.cpp's --parallel
    version: str = "0.12.3"
    num_ctx: int | None = None     # Ollama: the model's num_ctx parameter
    loaded_ctx: int | None = None  # Ollama: /api/ps context_length
    trained: int = 131072
    redirect_to: str | None = None  # every discovery GET answers 302 to here
    seconds: float = 0.02          # how long one answer takes
    one_at_a_time: threading.Lock = field(default_factory=threading.Lock)
    in_flight: int = 0
    most: int = 0
    chats: list[int] = field(default_factory=list)  # prompt tokens of each chat request
    paths: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _handler(fake: Fake) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

        def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            fake.paths.append(self.path)
            if fake.redirect_to:
                self._send(302, {}, {"Location": fake.redirect_to + self.path})
                return
            if self.path == "/v1/models":
                row: dict[str, Any] = {"id": "m", "object": "model",
                                       "owned_by": {"vllm": "vllm", "llamacpp": "llamacpp"}.get(
                                           fake.kind, "library")}
                if fake.kind == "vllm":
                    row["max_model_len"] = fake.reported_window or fake.window
                self._send(200, {"object": "list", "data": [row]})
            elif self.path == "/props" and fake.kind == "llamacpp":
                self._send(200, {"default_generation_settings": {
                    "n_ctx": fake.reported_window or fake.window}, "total_slots": fake.slots})
            elif self.path == "/api/version" and fake.kind == "ollama":
                self._send(200, {"version": fake.version})
            elif self.path == "/api/ps" and fake.kind == "ollama":
                rows = ([{"name": "m", "model": "m", "context_length": fake.loaded_ctx}]
                        if fake.loaded_ctx else [])
                self._send(200, {"models": rows})
            else:
                self._send(404, {"error": "not found"})

        def do_POST(self) -> None:
            fake.paths.append(self.path)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path == "/api/show" and fake.kind == "ollama":
                params = f"num_ctx {fake.num_ctx}\nstop \"<end>\"" if fake.num_ctx else "stop x"
                self._send(200, {"parameters": params, "model_info": {
                    "general.architecture": "llama", "llama.context_length": fake.trained}})
            elif self.path == "/v1/chat/completions":
                self._chat(body)
            else:
                self._send(404, {"error": "not found"})

        def _chat(self, body: dict[str, Any]) -> None:
            tokens = sum(len(m["content"]) for m in body["messages"]) // 4
            if tokens > fake.window and fake.kind == "llamacpp":
                self._send(400, {"error": {
                    "code": 400, "type": "exceed_context_size_error", "n_ctx": fake.window,
                    "n_prompt_tokens": tokens, "message": f"request ({tokens} tokens) exceeds "
                    f"the available context size ({fake.window} tokens), try increasing it"}})
                return
            if tokens > fake.window and fake.kind == "vllm":
                self._send(400, {"object": "error", "type": "BadRequestError", "code": 400,
                                 "message": f"This model's maximum context length is "
                                 f"{fake.window} tokens. However, you requested {tokens} tokens."})
                return
            read = min(tokens, fake.window)  # Ollama (and "other") cut it without a word
            with fake.lock:
                fake.chats.append(tokens)
            slot = fake.one_at_a_time if fake.kind == "ollama" else contextlib.nullcontext()
            with slot:  # Ollama's default: one answer at a time, the rest queued
                with fake.lock:
                    fake.in_flight += 1
                    fake.most = max(fake.most, fake.in_flight)
                time.sleep(fake.seconds)
                with fake.lock:
                    fake.in_flight -= 1
            text = '{"ok": true}' if body.get("response_format") else "A plain answer."
            self._send(200, {
                "id": "x", "object": "chat.completion", "created": 0, "model": "m",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": read, "completion_tokens": 5,
                          "total_tokens": read + 5}})

    return Handler


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[ThreadingHTTPServer] = []

    def start(fake: Fake) -> str:
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        servers.append(httpd)
        return f"http://127.0.0.1:{httpd.server_address[1]}/v1"

    forget_servers()
    yield start
    forget_servers()
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


def _sources(n: int, size: int) -> str:
    return "".join(f'<untrusted_source id="S{i}" nonce="ab{i}">\n{"x" * size}\n'
                   f'</untrusted_source nonce="ab{i}">\n' for i in range(n))


# --- discovery -------------------------------------------------------------------------------

def test_ollama_window_is_the_models_num_ctx(serve: Any) -> None:
    found = discover(serve(Fake("ollama", num_ctx=8192)), "m")
    assert found.kind == "ollama"
    assert found.limits.context_tokens == 8192
    assert found.limits.parallel is None  # OLLAMA_NUM_PARALLEL is not reported: measured


def test_ollama_window_of_a_loaded_model_is_what_it_runs_with(serve: Any) -> None:
    found = discover(serve(Fake("ollama", num_ctx=8192, loaded_ctx=32768)), "m")
    assert found.limits.context_tokens == 32768


@pytest.mark.parametrize(("version", "window"), [("0.5.13", 2048), ("0.6.7", 4096),
                                                 ("0.15.6", 4096)])
def test_ollama_window_defaults_by_version(serve: Any, version: str, window: int) -> None:
    assert discover(serve(Fake("ollama", version=version)), "m").limits.context_tokens == window


def test_ollama_window_is_never_above_what_the_model_was_trained_for(serve: Any) -> None:
    found = discover(serve(Fake("ollama", num_ctx=65536, trained=8192)), "m")
    assert found.limits.context_tokens == 8192


def test_llamacpp_reports_its_slots_and_window(serve: Any) -> None:
    found = discover(serve(Fake("llamacpp", window=4096, slots=3)), "m")
    assert (found.kind, found.limits.parallel, found.limits.context_tokens) == ("llamacpp", 3, 4096)


def test_vllm_reports_its_max_model_len(serve: Any) -> None:
    found = discover(serve(Fake("vllm", window=12288)), "m")
    assert (found.kind, found.limits.context_tokens) == ("vllm", 12288)


def test_an_unknown_server_is_not_known(serve: Any) -> None:
    found = discover(serve(Fake("other")), "m")
    assert found.kind == "" and not found.limits.known


def test_discovery_follows_no_redirect(serve: Any) -> None:
    elsewhere = Fake("llamacpp")
    target = serve(elsewhere).removesuffix("/v1")
    found = discover(serve(Fake("llamacpp", redirect_to=target)), "m")
    assert found.kind == "" and elsewhere.paths == []


def test_discovery_of_a_server_that_is_not_there_is_not_fatal() -> None:
    found = discover("http://127.0.0.1:9/v1", "m")  # the discard port: nothing listens
    assert found.kind == ""


def test_which_addresses_are_ones_own() -> None:
    for host in ("127.0.0.1", "localhost", "::1", "10.1.2.3", "192.168.1.20", "172.16.0.5",
                 "100.64.1.1", "fd00::5"):
        assert is_private_host(host), host
    for host in ("8.8.8.8", "169.254.169.254", "2001:4860:4860::8888", "0.0.0.0"):
        assert not is_private_host(host), host
    assert local_server(None) is None
    assert local_server("https://api.openai.com/v1") is None  # a cloud: paced by its headers
    assert local_server("http://169.254.169.254/v1") is None  # metadata: never asked
    assert local_server("http://metadata.google.internal/v1") is None
    public = local_server("http://8.8.8.8/v1")  # a GPU box: only if it says what it is
    assert public is not None and not public.private


def _answers(routes: dict[str, Any]) -> Any:
    """A discovery getter answering from `routes` by path, without a network."""
    def get(method: str, url: str, body: Any) -> Any:
        return routes.get(url.split("/", 3)[-1])
    return get


def test_a_public_server_that_says_it_is_llamacpp_gets_a_gate() -> None:
    server = LocalServer("http://203.0.113.5:8080/v1", private=False, get=_answers({
        "props": {"default_generation_settings": {"n_ctx": 8192}, "total_slots": 2}}))
    assert server.limits("m").parallel == 2 and server.context_tokens("m") == 8192
    assert _through_gate([RequestSlots(16)], server, 6) == 2


def test_a_public_server_that_says_nothing_is_a_cloud() -> None:
    server = LocalServer("http://203.0.113.5/v1", private=False, get=_answers({}))
    assert _through_gate([RequestSlots(16)], server, 6) > 1
    assert server.silent_cut("m", 40_000, 4_096) is None
    assert server.context_tokens("m") is None


# --- the gate --------------------------------------------------------------------------------

def _through_gate(slots_list: list[RequestSlots], server: LocalServer, calls: int) -> int:
    """`calls` threads, spread over the runs' slots, each holding a turn for a moment; the most
    that were inside at once."""
    inside, most, lock = [0], [0], threading.Lock()

    def one(i: int) -> None:
        with slots_list[i % len(slots_list)].hold("m", server=server, model="m"):
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(0.02)
            with lock:
                inside[0] -= 1

    threads = [threading.Thread(target=one, args=(i,)) for i in range(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return most[0]


def test_the_gate_sends_llamacpp_no_more_than_its_slots_across_runs(serve: Any) -> None:
    server = local_server(serve(Fake("llamacpp", slots=2)))
    assert server is not None
    most = _through_gate([RequestSlots(16), RequestSlots(16)], server, 12)
    assert most == 2


def test_the_gate_starts_ollama_at_one_answer_at_a_time(serve: Any) -> None:
    server = local_server(serve(Fake("ollama")))
    assert server is not None
    assert _through_gate([RequestSlots(16)], server, 8) == 1


def test_an_unknown_local_server_is_sent_to_as_today(serve: Any) -> None:
    server = local_server(serve(Fake("other")))
    assert server is not None
    assert _through_gate([RequestSlots(16)], server, 8) > 1


def test_waiting_for_the_servers_turn_costs_the_step_no_time(serve: Any) -> None:
    server = local_server(serve(Fake("ollama")))
    assert server is not None
    slots = RequestSlots(4)
    holding, release = threading.Event(), threading.Event()

    def first() -> None:
        with slots.hold("first", server=server, model="m"):
            holding.set()
            release.wait(5)

    thread = threading.Thread(target=first)
    thread.start()
    holding.wait(5)
    waits = RunWaits()  # the run's held time, which steps get back
    deadline = time.monotonic() + 0.05  # the step's limit passes while the call waits its turn
    waits.shifted(deadline)  # the step's first call: from here its held time counts
    threading.Timer(0.3, release.set).start()
    with slots.hold("second", deadline=deadline, server=server, model="m",
                    holding=waits.holding) as waited:
        assert deadline + waited > time.monotonic()  # the step still has its time
        shifted = waits.shifted(deadline)
        assert shifted is not None and shifted > time.monotonic()
    thread.join()


def test_a_requests_time_limit_starts_at_its_turn_not_in_the_servers_queue(serve: Any) -> None:
    """Six calls at once to an Ollama that answers one at a time, each answer taking 0.4 s, each
    call allowed 1.5 s: sent at once, the last ones would wait 2 s in its queue and time out."""
    fake = Fake("ollama", seconds=0.4)
    base_url = serve(fake)
    notes: list[str] = []
    slots = RequestSlots(16)

    def call() -> str:
        role = RoleLLM(OpenAIChat("m", base_url=base_url, timeout=10), "worker", UsageMeter(),
                       policy=RetryPolicy(attempts=1), call_timeout=1.5, on_retry=notes.append,
                       slots=slots)
        return role.text([Message("user", "A short question.")])

    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(lambda _: call(), range(6)))
    assert answers == ["A plain answer."] * 6 and not notes


def test_without_a_server_a_step_out_of_time_still_stops_the_wait() -> None:
    slots = RequestSlots(1)
    with slots.hold("first"), pytest.raises(StepTimeLimit):
        with slots.hold("second", deadline=time.monotonic() + 0.05):
            pass


def _serve(measured: Parallelism, answers: int, seconds_each: float, at_once: int,
           clock: list[float]) -> None:
    """`answers` answers of 100 units of work, `at_once` of ours in flight all along, the server
    finishing one every `seconds_each`."""
    measured.in_flight(at_once, clock[0])
    for _ in range(answers):
        clock[0] += seconds_each
        measured.answered(100, clock[0])
        measured.in_flight(at_once - 1, clock[0])  # released, and the next one let in
        measured.in_flight(at_once, clock[0])


def test_measuring_settles_at_one_for_a_server_that_queues() -> None:
    measured, clock = Parallelism(), [0.0]
    _serve(measured, SAMPLES_PER_LEVEL, 2.0, 1, clock)   # alone: one answer every 2 s
    assert measured.level == 2
    _serve(measured, SAMPLES_PER_LEVEL, 2.0, 2, clock)   # two in flight: still one every 2 s
    assert (measured.level, measured.settled) == (1, True)
    _serve(measured, 10, 0.1, 1, clock)
    assert measured.level == 1


def test_measuring_grows_for_a_server_that_batches() -> None:
    measured, clock = Parallelism(), [0.0]
    for level in (1, 2, 3):  # each level finishes `level` answers in the time of one
        _serve(measured, SAMPLES_PER_LEVEL, 2.0 / level, level, clock)
    assert measured.level == 4 and not measured.settled


def test_time_with_fewer_of_ours_in_flight_than_the_level_says_nothing() -> None:
    measured, clock = Parallelism(), [0.0]
    _serve(measured, SAMPLES_PER_LEVEL, 2.0, 1, clock)
    _serve(measured, 10, 2.0, 1, clock)  # level 2, but only one request to send
    assert (measured.level, measured.settled) == (2, False)


def test_a_server_whose_answers_are_slow_is_not_probed() -> None:
    measured, clock = Parallelism(), [0.0]
    _serve(measured, SAMPLES_PER_LEVEL, 40.0, 1, clock)  # a CPU at a few tokens a second
    assert (measured.level, measured.settled) == (1, True)


def test_a_server_that_reports_its_slots_is_not_measured() -> None:
    told = Parallelism(level=2, fixed=True)
    _serve(told, 10, 2.0, 2, [0.0])
    assert told.level == 2


# --- the window ------------------------------------------------------------------------------

def test_window_leaves_room_for_the_answer() -> None:
    class Model:
        def context_window(self) -> int:
            return 8192

    chars = window_chars(Model())
    assert chars is not None and chars < 8192 * 4
    assert window_chars(object()) is None


def test_sources_are_left_out_rather_than_the_step_failed() -> None:
    instructions = "Answer from the sources below. " * 20
    messages = [Message("system", instructions), Message("user", _sources(12, 1000))]
    fitted = fit_prompt(messages, 2500)
    assert sum(len(m.content) for m in fitted) <= 2500
    assert fitted[0].content == instructions
    assert 'id="S0"' in fitted[1].content and 'id="S11"' not in fitted[1].content
    assert DROP_NOTE.split("{")[0] in fitted[1].content


def test_a_prompt_too_long_without_any_source_is_still_refused() -> None:
    with pytest.raises(ContextTooLong):
        fit_prompt([Message("user", "x" * 5000)], 1000)


def _role(base_url: str, notes: list[str]) -> RoleLLM:
    return RoleLLM(OpenAIChat("m", base_url=base_url, timeout=10), "worker", UsageMeter(),
                   policy=RetryPolicy(attempts=2, base_delay=0.01), on_retry=notes.append,
                   slots=RequestSlots(8))


def test_prompts_are_fitted_to_the_window_the_server_reports(serve: Any) -> None:
    fake = Fake("vllm", window=4096)
    role = _role(serve(fake), [])
    role.text([Message("system", "Use the sources."), Message("user", _sources(20, 2000))])
    assert fake.chats and max(fake.chats) <= 4096  # never refused, never cut


def test_a_silent_cut_is_named_with_its_fix_and_the_prompt_sent_again_shorter(serve: Any) -> None:
    fake = Fake("ollama", window=2048, version="0.9.0")  # reports 4096 (its default): it is 2048
    notes: list[str] = []
    role = _role(serve(fake), notes)
    answer = role.text([Message("system", "Use the sources."), Message("user", _sources(20, 1500))])
    assert answer == "A plain answer."
    assert fake.chats[0] > 2048 and fake.chats[-1] <= 2048  # cut once, then sent to fit
    server = server_of(role.llm)
    assert server is not None and server.context_tokens("m") == 2048
    said = " ".join(notes + server.notices)
    assert f"at least {ADVISED_CONTEXT:,}" in said and "OLLAMA_CONTEXT_LENGTH" in said


def test_llamacpp_refusal_teaches_the_window_for_every_role(serve: Any) -> None:
    fake = Fake("llamacpp", window=3000, reported_window=6000)
    role = _role(serve(fake), [])
    role.text([Message("system", "Use the sources."), Message("user", _sources(20, 1500))])
    assert fake.chats[-1] <= 3000
    other = _role(role.llm._base_url, [])  # another role of the run, same server
    fake.chats.clear()
    other.text([Message("system", "Use the sources."), Message("user", _sources(20, 1500))])
    assert len(fake.chats) == 1 and fake.chats[0] <= 3000  # fitted before sending


def test_a_small_window_is_said_in_plain_words(serve: Any) -> None:
    server = local_server(serve(Fake("llamacpp", window=8192)))
    assert server is not None
    notice = server.small_window_notice("m")
    assert notice is not None and "8,192" in notice and "16,384" in notice
    assert "--ctx-size" in notice


def test_a_prompt_that_reused_a_cached_prefix_is_no_cut(serve: Any) -> None:
    server = local_server(serve(Fake("ollama")))
    assert server is not None
    assert server.silent_cut("m", 40_000, 300) is None      # a repair turn: its prefix cached
    assert server.silent_cut("m", 40_000, 9_000) is None    # tokenizers count differently
    assert server.silent_cut("m", 40_000, 4_096) is not None
    assert server.context_tokens("m") == 4_096
