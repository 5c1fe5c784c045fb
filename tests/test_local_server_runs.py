"""Complete runs on a model server of one's own (issue 31, point 5): the stand-in answers as
Ollama, a llama.cpp server or vLLM that generates one answer at a time, queues the rest and has
an 8,192-token window; the run goes through the real openai SDK over HTTP.

Each request has a short time limit (4 s) while the server takes a fraction of a second an
answer: a run that sent its requests all at once would leave most of them waiting in the
server's queue past that limit. These runs must end with nothing failed.
"""

from __future__ import annotations

from typing import Any

import pytest

from research.core.executor import RequestSlots
from research.llm import local_server as local
from research.llm.base import RoleLLM
from research.llm.budget import UsageMeter
from research.llm.limits import AccountLimits
from research.llm.messages import Message
from research.llm.openai_llm import OpenAIChat
from tests.runs import Runner
from tests.standin import StandinServer

MODEL = "llama3.1:8b"
WINDOW = 8192


@pytest.fixture(autouse=True)
def _fresh_servers() -> Any:
    local.forget_servers()  # the stand-in keeps its address from test to test
    yield
    local.forget_servers()


def _most_waiting(log: list[dict[str, Any]]) -> int:
    """The most requests that waited at once in the server's own queue (arrived, not started)."""
    events = sorted([(r["time"], 1) for r in log] + [(r["started"], -1) for r in log])
    most = now = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most


def _local_run(standin: StandinServer, http_runs: Runner, kind: str, window: int = WINDOW,
               **overrides: Any) -> tuple[Any, str]:
    standin.set_local_server(kind, parallel=1, tokens_per_second=400, context_tokens=window,
                             model=MODEL)
    runner = http_runs.with_env(DEEP_RESEARCH_MODEL=MODEL)
    # One search a subtopic, no academic or other-side searches: the subtopics still go at
    # once, so the run's requests still meet one another at the server's one slot.
    return runner(preset="quick", request_timeout_s=4, max_retries=1, searches_per_subtopic=1,
                  include_academic_sources=False, search_other_side=False, **overrides)


@pytest.mark.parametrize("kind", ["ollama", "llamacpp", "vllm"])
def test_a_run_on_a_local_server_that_answers_one_at_a_time_completes(
    kind: str, standin: StandinServer, http_runs: Runner
) -> None:
    store, run_id = _local_run(standin, http_runs, kind)
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", run and run.error
    log = standin.requests_for("openai")
    assert log and all(r.get("status") == 200 for r in log)  # none refused, none abandoned
    assert not any(r.get("client_gone") for r in log)
    # The next request may reach the server while it is still closing the last answer (a
    # handover: one, or two on a loaded machine where the server is slow to close); Ollama and
    # vLLM are measured, so one more may be let in while the gate finds out whether two go side
    # by side. Sent all at once, a Quick run's three subtopics, its sources and its checks would
    # queue several more.
    assert _most_waiting(log) <= (2 if kind == "llamacpp" else 3)
    events = store.get_events(run_id)
    assert not [e.message for e in events if e.type == "retrying"]
    assert not [s for s in store.get_steps(run_id) if s.status == "failed"]
    warned = " ".join(e.message for e in events if e.type == "warning")
    assert "8,192 tokens" in warned and "at least 16,384" in warned
    if kind == "ollama":
        assert "OLLAMA_CONTEXT_LENGTH" in warned


def test_an_ollama_that_cuts_prompts_silently_is_named_with_the_fix_and_asked_again(
    standin: StandinServer, standin_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ollama told us a bigger window than it runs with (as when OLLAMA_CONTEXT_LENGTH is lower
    than the model's num_ctx says): a long prompt is cut without a word. The step is not lost:
    the prompt goes again with fewer sources, and every later one is fitted to the real window.
    (A complete run's prompts fit the smallest window Ollama has, 2,048 tokens, or not at all:
    the writer's notes are no sources to drop. So this is one role's call, not a run.)"""
    told = local.discover  # as the server's LocalServer calls it

    def overstated(*args: Any, **kwargs: Any) -> local.Discovery:
        found = told(*args, **kwargs)
        return local.Discovery(found.kind, AccountLimits(context_tokens=4 * WINDOW),
                               found.version)

    monkeypatch.setattr(local, "discover", overstated)
    standin.set_local_server("ollama", parallel=1, tokens_per_second=400, context_tokens=WINDOW,
                             model=MODEL)
    notes: list[str] = []
    role = RoleLLM(OpenAIChat(MODEL, base_url=standin_env["OPENAI_BASE_URL"], timeout=10),
                   "worker", UsageMeter(), on_retry=notes.append, slots=RequestSlots(8))
    sources = "".join(f'<untrusted_source id="S{i}" nonce="a{i}">\n{"Heat pumps. " * 300}\n'
                      f'</untrusted_source nonce="a{i}">\n' for i in range(20))
    messages = [Message("system", "Summarise the sources."), Message("user", sources)]
    assert role.text(messages)
    log = standin.requests_for("openai")
    assert len(log) == 2 and all(r.get("status") == 200 for r in log)
    sent = [sum(len(m["content"]) for m in r["json"]["messages"]) // 4 for r in log]
    assert sent[0] > WINDOW >= sent[1]  # cut once; then sent to fit
    said = " ".join(notes)
    assert "without saying so" in said and "at least 16,384" in said
    assert "OLLAMA_CONTEXT_LENGTH" in said
    role.text(messages)  # the next prompt is fitted before it is sent
    assert len(standin.requests_for("openai")) == 3
