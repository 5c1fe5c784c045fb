"""The limits benchmark's figures (bench/limits.py): floors, failed calls, waiting lines."""

from __future__ import annotations

from typing import Any

from bench.limits import SCENARIOS, failed_calls, says_it_waits

SCENARIO = {s.key: s for s in SCENARIOS}


def _request(text: str, status: int | None = 200, completion: int = 0, **extra: Any) -> dict[str, Any]:
    return {"api": "openai", "path": "/v1/chat/completions", "status": status,
            "completion_tokens": completion,
            "json": {"model": "gpt-4.1", "messages": [{"role": "user", "content": text}]}, **extra}


def test_a_retried_call_that_got_an_answer_in_the_end_did_not_fail():
    log = [_request("a", 429), _request("a", 429), _request("a", 200),
           _request("b", 429), _request("b", None),           # never answered
           _request("c", 200, client_gone=True)]              # answered after its client left
    assert failed_calls(log) == 2


def test_the_token_limit_sets_the_floor_when_calls_are_few():
    tier1 = SCENARIO["openai-tier1"]
    answered = [_request("x" * 4_000, completion=500) for _ in range(30)]  # 1,500 tokens each
    floor, why = tier1.floor(answered)
    # the first minute's 30,000 tokens are there at the start; the other 15,000 take 30 s
    assert floor == (30 * 1_500 - 30_000) / 30_000 * 60 and "tokens" in why
    assert tier1.floor(answered[:20])[0] == 0  # within the first minute's allowance
    free = SCENARIO["free-tier"]  # 10 requests a minute: the calls set it
    floor, why = free.floor([{**r, "api": "gemini", "json": {"contents": []}} for r in answered])
    assert floor == 2 * 60 and "calls" in why


def test_a_local_server_floor_is_every_answer_one_after_another():
    local = SCENARIO["local"]
    floor, _ = local.floor([_request("x", completion=300), _request("y", completion=600)])
    assert floor == 900 / 30


def test_waiting_lines_are_retries_and_waits_for_a_limit_not_failures_or_the_person():
    assert says_it_waits("retrying", "writer model: rate limited; trying again in 2 s")
    assert says_it_waits("warning", "Waiting for OpenAI's limit of 30,000 tokens a minute: about 40 s")
    assert not says_it_waits("search_failed", "429: Too Many Requests. Please wait and try again "
                                              "or apply for a key for higher rate limits")
    assert not says_it_waits("waiting", "Waiting for your answers to the clarifying questions")
    assert not says_it_waits("step_completed", "Research on heat pumps finished")
