"""Answers a provider stops on purpose: content-filtered, safety-blocked, recitation and
length cut-offs are named, retried once with a changed request where that can help, and never
used as an empty result or retried as if the network had failed (issue 10.5)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from research import Credentials, build_config, run_research
from research.core.errors import AnswerBlocked, AnswerCutOff
from research.core.retry import RetryPolicy
from research.llm import build_llm
from research.llm.answer_stops import CONCISE_NUDGE
from research.llm.base import RoleLLM
from research.llm.budget import UsageMeter
from research.llm.messages import Message
from storage import Store
from tests.standin import StandinServer

MODELS = {"openai": "gpt-5-mini", "gemini": "gemini-2.5-flash"}
MESSAGES = [Message("system", "You are a research writer."),
            Message("user", "Write a short note about heat pumps in Europe.")]


def _role_llm(provider: str, env: dict[str, str], retries: list[str]) -> RoleLLM:
    config = build_config(env=env, provider=provider, request_timeout_s=10)
    llm = build_llm(provider, MODELS[provider], config, Credentials.from_env(env))
    return RoleLLM(llm, "writer", UsageMeter(), on_retry=retries.append,
                   policy=RetryPolicy(attempts=4, base_delay=0.01, max_delay=0.05))


@pytest.mark.parametrize(("provider", "reason"), [
    ("openai", "content_filter"), ("gemini", "SAFETY"), ("gemini", "RECITATION"),
])
def test_a_filtered_answer_is_named_and_not_retried_as_a_network_error(
    standin: StandinServer, standin_env: dict[str, str], provider: str, reason: str,
) -> None:
    standin.add_fault(provider, "finish", times=10, reason=reason)
    retries: list[str] = []
    with pytest.raises(AnswerBlocked, match=reason) as caught:
        _role_llm(provider, standin_env, retries).text(MESSAGES)
    assert "writer model" in str(caught.value)  # names the step's role
    assert standin.count(provider) == 2  # the first try and one changed request, not four
    assert len(retries) == 1 and "changed request" in retries[0]


@pytest.mark.parametrize(("provider", "reason"), [("openai", "length"), ("gemini", "MAX_TOKENS")])
def test_a_cut_off_answer_is_asked_again_more_concisely_and_then_used(
    standin: StandinServer, standin_env: dict[str, str], provider: str, reason: str,
) -> None:
    standin.add_fault(provider, "finish", times=1, reason=reason)
    retries: list[str] = []
    llm = _role_llm(provider, standin_env, retries)
    text = llm.text(MESSAGES)
    assert text.strip()
    second = standin.requests_for(provider)[-1]["json"]
    assert CONCISE_NUDGE[:40] in str(second)  # the retry changed the request
    assert any("cut off" in r for r in retries)
    assert llm.meter.total_tokens() > 0  # the cut-off answer's tokens are counted too


def test_an_answer_cut_off_twice_is_a_plain_error_not_half_a_result(
    standin: StandinServer, standin_env: dict[str, str],
) -> None:
    standin.add_fault("openai", "finish", times=5, reason="length")
    with pytest.raises(AnswerCutOff, match="output length limit twice"):
        _role_llm("openai", standin_env, []).text(MESSAGES)
    assert standin.count("openai") == 2


def test_a_writer_whose_answers_are_filtered_fails_the_run_naming_the_step(
    standin: StandinServer, standin_env: dict[str, str], tmp_db: Path,
) -> None:
    standin.add_fault("openai", "finish", times=100, reason="content_filter", task="writer")
    store = Store(tmp_db)
    config = build_config(env=standin_env, preset="quick", fetch_timeout_s=3)
    run_id = run_research("How is heat pump adoption changing in Europe?", store=store,
                          config=config, credentials=Credentials.from_env(standin_env))
    run = store.get_run(run_id)
    assert run is not None and run.status == "failed" and run.error
    assert "content filter" in run.error and "writer model" in run.error
    assert store.get_report(run_id) is None  # never an empty report
    assert store.count_sources(run_id) > 0
    writer_calls = [r for r in standin.requests_for("openai")
                    if "response_format" not in r["json"]]
    parts = Counter(tuple(re.findall(r"<section>(.*?)</section>", str(r["json"]))) for r in writer_calls)
    assert parts and max(parts.values()) <= 2 * 2  # per section: at most one changed request per attempt
