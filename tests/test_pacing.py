"""Pacing model requests to the account (research/llm/pacing.py): the buckets, what the
provider's answers and refusals teach them, the wait lines, and the `AccountTurn` layer of RoleLLM
(research.llm.turns).

The pacer's own arithmetic runs on a fake clock (`try_acquire` never waits); the RoleLLM
tests use tiny real waits and assert what happened (tries, lines, stops), never how long."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from google.genai import errors as genai_errors

from research.core.errors import (
    BudgetExceeded,
    QuotaExhausted,
    QuotaSpent,
    RateLimited,
    RequestTooLarge,
    RunCancelled,
)
from research.core.retry import RetryPolicy
from research.llm.base import RoleLLM
from research.llm.budget import UsageMeter
from research.llm.gemini_llm import GeminiChat
from research.llm.limits import Account, AccountLimits, RateReport
from research.llm.messages import Completion, JsonSchema, Message, Usage
from research.llm.openai_llm import OpenAIChat, rate_report
from research.llm.pacing import EPISODE_GAP_S, WINDOW_FORGET_S, Pacer, Ticket, known_limits, pacer_for
from research.llm.waits import RunWaits, Wait
from storage import Store
from tests.store_files import migrated_copy

ACCOUNT = Account("openai", "", "abc123", "gpt-4.1")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def pacer(clock: Clock, **limits: int) -> Pacer:
    return Pacer(ACCOUNT, clock=clock, limits=AccountLimits(**limits))


def ticket(result: Ticket | float) -> Ticket:
    assert isinstance(result, Ticket), f"expected a turn, got a wait of {result} s"
    return result


# -- the buckets ----------------------------------------------------------------------------

def test_unknown_limits_hold_nothing_back() -> None:
    p = pacer(Clock())
    for _ in range(100):
        ticket(p.try_acquire(50_000))


def test_tokens_a_minute_hold_a_request_until_its_tokens_have_refilled() -> None:
    clock = Clock()
    p = pacer(clock, tokens_per_minute=6_000)  # 100 tokens a second
    ticket(p.try_acquire(5_000))
    wait = p.try_acquire(2_000)
    assert wait == pytest.approx(10.0)  # 1,000 left, 1,000 more needed
    clock.advance(9.0)
    assert not isinstance(p.try_acquire(2_000), Ticket)
    clock.advance(1.0)
    ticket(p.try_acquire(2_000))


def test_requests_a_minute_space_requests_out() -> None:
    clock = Clock()
    p = pacer(clock, requests_per_minute=60)
    for _ in range(60):
        ticket(p.try_acquire(10))
    assert p.try_acquire(10) == pytest.approx(1.0)
    clock.advance(1.0)
    ticket(p.try_acquire(10))


def test_an_answer_gives_back_what_the_estimate_over_counted() -> None:
    clock = Clock()
    p = pacer(clock, tokens_per_minute=6_000)
    first = ticket(p.try_acquire(5_000))
    assert not isinstance(p.try_acquire(3_000), Ticket)
    p.settle(first, used_tokens=1_000)
    ticket(p.try_acquire(3_000))


def test_the_headers_count_of_what_is_left_overrides_ours() -> None:
    clock = Clock()
    p = pacer(clock)
    first = ticket(p.try_acquire(1_000))
    # Another process on the key used most of the minute: the provider says 500 are left.
    p.settle(first, 1_000, RateReport(limits=AccountLimits(tokens_per_minute=6_000,
                                                           requests_per_minute=500),
                                      remaining_tokens=500, remaining_requests=499))
    assert p.limits.tokens_per_minute == 6_000 and p.limits.requests_per_minute == 500
    assert p.try_acquire(1_500) == pytest.approx(10.0)


def test_headers_are_read_against_what_was_sent_after_them() -> None:
    clock = Clock()
    p = pacer(clock, tokens_per_minute=6_000)
    first = ticket(p.try_acquire(1_000))
    ticket(p.try_acquire(2_000))  # sent after the first, not yet counted in its headers
    p.settle(first, 1_000, RateReport(remaining_tokens=5_000))
    assert p.try_acquire(3_500) == pytest.approx(5.0)  # 3,000 left, not 5,000


def test_a_request_larger_than_a_minute_is_fitted_not_waited_for() -> None:
    p = pacer(Clock(), tokens_per_minute=30_000)
    most = p.max_request_tokens()
    assert most is not None and most < 30_000


def test_parallel_bounds_the_requests_in_flight() -> None:
    p = pacer(Clock(), parallel=2)
    first = ticket(p.try_acquire(1))
    ticket(p.try_acquire(1))
    assert not isinstance(p.try_acquire(1), Ticket)
    p.settle(first, 1)
    ticket(p.try_acquire(1))


# -- refusals ---------------------------------------------------------------------------------

def test_a_refusal_pauses_the_account_for_as_long_as_it_asked() -> None:
    clock = Clock()
    p = pacer(clock)
    p.refused(ticket(p.try_acquire(10)), retry_after=7.5)
    assert p.try_acquire(10) == pytest.approx(7.5)
    clock.advance(7.5)
    ticket(p.try_acquire(10))


def test_refusals_that_say_nothing_back_off_and_halve_the_requests_in_flight() -> None:
    clock = Clock()
    p = pacer(clock)
    flying = [ticket(p.try_acquire(10)) for _ in range(8)]
    pauses = [p.refused(flying.pop(), retry_after=None) for _ in range(3)]
    assert pauses == sorted(pauses) and pauses[0] < pauses[-1]  # doubling
    clock.advance(pauses[-1])
    # Halved once for the burst: eight were in flight at its first refusal, four allowed now.
    assert len(flying) == 5
    assert not isinstance(p.try_acquire(10), Ticket)
    for t in flying[:2]:
        p.settle(t, 10)
    ticket(p.try_acquire(10))


def test_the_requests_in_flight_grow_back_after_answers_and_are_forgotten_when_quiet() -> None:
    clock = Clock()
    p = pacer(clock)
    flying = [ticket(p.try_acquire(10)) for _ in range(2)]
    p.refused(flying.pop(), retry_after=0.0)  # two in flight: one allowed
    p.settle(flying.pop(), 10)
    first = ticket(p.try_acquire(10))
    second = p.try_acquire(10)
    assert isinstance(second, Ticket)  # one answer grew it from 1 to 2
    assert not isinstance(p.try_acquire(10), Ticket)
    p.settle(first, 10)
    p.settle(second, 10)
    clock.advance(WINDOW_FORGET_S + 1)
    for _ in range(20):
        ticket(p.try_acquire(10))


def test_a_refusal_on_a_known_limit_empties_that_bucket() -> None:
    clock = Clock()
    p = pacer(clock, tokens_per_minute=6_000, requests_per_minute=600)
    p.refused(ticket(p.try_acquire(100)), retry_after=0.0, limit="tokens")
    assert p.try_acquire(600) == pytest.approx(6.0)  # someone else spent the minute


# -- the wait lines -----------------------------------------------------------------------------

def test_one_line_per_wait_episode_per_account_and_run() -> None:
    clock = Clock()
    p = pacer(clock, tokens_per_minute=30_000)
    said: list[Wait] = []
    waits = RunWaits(said.append, clock=clock)
    ticket(p.try_acquire(30_000))
    for _ in range(5):  # many requests wait in the same episode
        with p._cond:
            notice = p._noticed(40.0, "tokens", clock())
        assert notice is not None
        waits.notice(notice)
        clock.advance(10)
    assert len(said) == 1
    assert said[0].text == ("Waiting for OpenAI's limit of 30,000 tokens a minute on gpt-4.1: "
                            "about 40 s")
    other_run: list[Wait] = []
    RunWaits(other_run.append, clock=clock).notice(notice)
    assert len(other_run) == 1  # another run on the account hears of it too, once
    clock.advance(EPISODE_GAP_S + 1)
    with p._cond:
        later = p._noticed(90.0, "tokens", clock())
    assert later is not None
    waits.notice(later)
    assert len(said) == 2 and said[1].text.endswith("about 2 min")


def test_a_short_wait_is_not_worth_a_line() -> None:
    clock = Clock()
    p = pacer(clock)
    with p._cond:
        assert p._noticed(1.0, "refused", clock()) is None


def test_waits_do_not_use_the_steps_time() -> None:
    clock = Clock()
    waits = RunWaits(clock=clock, until=lambda: clock() + 3600)
    step = clock() + 120
    assert waits.shifted(step) == step
    with waits.holding():
        clock.advance(30)
        with waits.holding():  # two requests held at once: the run was held 30 s, not 60
            pass
    assert waits.shifted(step) == pytest.approx(step + 30)


def test_a_wait_ends_with_the_runs_time_limit_or_a_cancel() -> None:
    clock = Clock()
    cancel = threading.Event()
    until = clock() + 10
    waits = RunWaits(clock=clock, cancel=cancel, until=lambda: until)
    p = pacer(clock)
    p.refused(None, retry_after=3600)
    clock.advance(10)
    with pytest.raises(BudgetExceeded, match="total time limit"):
        p.acquire(10, check=waits.check)
    cancel.set()
    with pytest.raises(RunCancelled):
        p.acquire(10, check=waits.check)
    assert not p._queue


def test_one_pacer_per_account_in_the_process() -> None:
    account = Account("openai", "http://127.0.0.1:1/v1", "k", "m")
    assert pacer_for(account) is pacer_for(account)
    assert pacer_for(account) is not pacer_for(Account("openai", "http://127.0.0.1:1/v1", "k",
                                                       "other"))
    pacer_for(account).learn(AccountLimits(tokens_per_minute=1234))
    assert known_limits(account).tokens_per_minute == 1234


# -- through RoleLLM --------------------------------------------------------------------------

class Scripted:
    """A model that raises the given errors in turn, then answers."""

    provider = "openai"
    model = "gpt-4.1"

    def __init__(self, *errors: Exception, rate: RateReport | None = None) -> None:
        self.errors = list(errors)
        self.calls: list[Sequence[Message]] = []
        self.rate = rate
        self.account = Account("openai", "", "scripted", "gpt-4.1")

    def complete(self, messages: Sequence[Message], *, json_schema: JsonSchema | None = None,
                 schema_name: str | None = None, timeout: float | None = None) -> Completion:
        self.calls.append(messages)
        if self.errors:
            raise self.errors.pop(0)
        return Completion("answer", Usage(100, 10), self.provider, self.model, rate=self.rate)


def role(llm: Scripted, waits: RunWaits | None = None, retried: list[str] | None = None,
         attempts: int = 2) -> RoleLLM:
    return RoleLLM(llm, "writer", UsageMeter(), policy=RetryPolicy(attempts=attempts),
                   on_retry=None if retried is None else retried.append, waits=waits,
                   pacer=Pacer(llm.account))


def limited(after: float = 0.01) -> RateLimited:
    return RateLimited("rate limited", provider="openai", retry_after=after)


def test_in_a_run_a_429_is_a_wait_not_a_try() -> None:
    llm = Scripted(*[limited() for _ in range(6)])
    retried: list[str] = []
    waits = RunWaits(until=lambda: 1e12)
    assert role(llm, waits, retried, attempts=2).text([Message("user", "hi")]) == "answer"
    assert len(llm.calls) == 7 and retried == []  # six waits, none of the call's two tries


def test_outside_a_run_429s_use_the_tries_as_before() -> None:
    llm = Scripted(*[limited() for _ in range(6)])
    with pytest.raises(RateLimited):
        role(llm, attempts=3).text([Message("user", "hi")])
    assert len(llm.calls) == 3


def test_a_spent_quota_stops_the_run_and_is_an_error_outside_one() -> None:
    spent = QuotaExhausted("OpenAI (gpt-4.1): the account has run out of credit.",
                           provider="openai", status=429)
    with pytest.raises(QuotaSpent, match="run out of credit.*resumed"):
        role(Scripted(spent), RunWaits(until=lambda: 1e12)).text([Message("user", "hi")])
    with pytest.raises(QuotaExhausted):
        role(Scripted(spent)).text([Message("user", "hi")])


def test_the_answers_headers_teach_the_accounts_pacer() -> None:
    llm = Scripted(rate=RateReport(limits=AccountLimits(tokens_per_minute=30_000)))
    model = role(llm)
    model.text([Message("user", "hi")])
    assert model.pacer is not None and model.pacer.limits.tokens_per_minute == 30_000


def _source_prompt(chars: int) -> list[Message]:
    body = "x" * chars
    block = f'<untrusted_source id="S1" nonce="ab12">\n{body}\n</untrusted_source nonce="ab12">'
    return [Message("user", "Summarise the source.\n" + block)]


def test_a_prompt_over_a_minutes_tokens_is_sent_with_fewer_source_characters() -> None:
    llm = Scripted()
    model = role(llm)
    assert model.pacer is not None
    model.pacer.learn(AccountLimits(tokens_per_minute=6_000))
    model.text(_source_prompt(100_000))
    sent = sum(len(m.content) for m in llm.calls[0])
    assert sent < 6_000 * 4


def test_a_request_too_large_is_trimmed_to_the_limit_it_names() -> None:
    too_large = RequestTooLarge(
        "one request is larger than the account's tokens a minute", provider="openai",
        status=429, report=RateReport(limits=AccountLimits(tokens_per_minute=6_000)))
    llm = Scripted(too_large)
    role(llm).text(_source_prompt(100_000))
    assert len(llm.calls) == 2
    assert sum(len(m.content) for m in llm.calls[1]) < 6_000 * 4


# -- what the providers say -------------------------------------------------------------------

def _openai_429(message: str, headers: dict[str, str], code: str = "rate_limit_exceeded",
                ) -> openai.RateLimitError:
    response = httpx.Response(429, headers=headers,
                              request=httpx.Request("POST", "https://api.openai.com/v1/x"))
    return openai.RateLimitError(message, response=response,
                                 body={"message": message, "type": "tokens", "code": code})


def test_openai_headers_become_a_rate_report() -> None:
    report = rate_report({
        "x-ratelimit-limit-requests": "500", "x-ratelimit-limit-tokens": "30000",
        "x-ratelimit-remaining-requests": "499", "x-ratelimit-remaining-tokens": "29100",
        "x-ratelimit-reset-requests": "120ms", "x-ratelimit-reset-tokens": "1.8s",
    })
    assert report is not None
    assert report.limits.requests_per_minute == 500 and report.limits.tokens_per_minute == 30_000
    assert report.remaining_tokens == 29_100 and report.reset_tokens_s == pytest.approx(1.8)
    assert rate_report({"x-ratelimit-limit-tokens": "-1"}) is None  # Azure's "not counted"


def test_an_openai_429_says_the_wait_and_the_limit_in_its_text() -> None:
    chat = OpenAIChat("gpt-4.1", api_key="sk-test")
    error = chat._map_error(_openai_429(
        "Rate limit reached for gpt-4.1 in organization org-x on tokens per min (TPM): "
        "Limit 30000, Used 29000, Requested 2000. Please try again in 1.9s.", {}))
    assert isinstance(error, RateLimited)
    assert error.retry_after == pytest.approx(1.9) and error.limit == "tokens"
    assert error.report is not None and error.report.limits.tokens_per_minute == 30_000
    azure = chat._map_error(_openai_429("Rate limit is exceeded.", {"retry-after-ms": "2500"}))
    assert isinstance(azure, RateLimited) and azure.retry_after == pytest.approx(2.5)


def test_an_openai_request_too_large_and_a_spent_quota_are_not_waits() -> None:
    chat = OpenAIChat("gpt-4.1", api_key="sk-test")
    large = chat._map_error(_openai_429(
        "Request too large for gpt-4.1 in organization org-x on tokens per min (TPM): Limit "
        "30000, Requested 45000. The input or output tokens must be reduced.", {}))
    assert isinstance(large, RequestTooLarge)
    assert large.report is not None and large.report.limits.tokens_per_minute == 30_000
    quota = chat._map_error(_openai_429("You exceeded your current quota.", {},
                                        code="insufficient_quota"))
    assert isinstance(quota, QuotaExhausted) and "OPENAI_API_KEY" in str(quota)


def _gemini_429(quota_id: str, value: str | None, delay: str = "17s") -> genai_errors.APIError:
    violation = {"quotaMetric": "generativelanguage.googleapis.com/generate_content_requests",
                 "quotaId": quota_id}
    if value is not None:
        violation["quotaValue"] = value
    body = {"error": {"code": 429, "message": "You exceeded your current quota.",
                      "status": "RESOURCE_EXHAUSTED", "details": [
                          {"@type": "type.googleapis.com/google.rpc.QuotaFailure",
                           "violations": [violation]},
                          {"@type": "type.googleapis.com/google.rpc.RetryInfo",
                           "retryDelay": delay}]}}
    return genai_errors.ClientError(429, body)


def test_gemini_per_minute_quota_is_a_wait_that_names_its_limit() -> None:
    chat = GeminiChat("gemini-2.5-flash", api_key="AIza-test-key")
    error = chat._map_api_error(_gemini_429("GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                                            "10"))
    assert isinstance(error, RateLimited) and error.retry_after == 17.0
    assert error.limit == "requests"
    assert error.report is not None and error.report.limits.requests_per_minute == 10


def test_gemini_per_day_quota_is_spent_not_waited_for() -> None:
    chat = GeminiChat("gemini-2.5-flash", api_key="AIza-test-key")
    error = chat._map_api_error(_gemini_429("GenerateRequestsPerDayPerProjectPerModel-FreeTier",
                                            "250"))
    assert isinstance(error, QuotaExhausted)


# -- several processes, one key: the store's books ------------------------------------------

def test_two_processes_on_one_key_share_its_minute_through_the_store(db_target: str) -> None:
    clock = Clock()
    with Store(db_target) as store:  # SQLite, then PostgreSQL (its row locked FOR UPDATE)
        first = Pacer(ACCOUNT, clock=clock, wall=clock)   # two processes' pacers of one account
        second = Pacer(ACCOUNT, clock=clock, wall=clock)
        first.share(store)
        second.share(store)
        first.learn(AccountLimits(tokens_per_minute=6_000, requests_per_minute=600))
        ticket(first.try_acquire(5_000))
        # The second learned nothing itself, and has sent nothing: the books hold it back.
        assert second.try_acquire(2_000) == pytest.approx(10.0)
        clock.advance(10.0)
        ticket(second.try_acquire(2_000))
        assert not isinstance(first.try_acquire(500), Ticket)


def test_a_refusal_one_process_met_pauses_the_others(tmp_db: Path) -> None:
    clock = Clock()
    with Store(migrated_copy(tmp_db)) as store:
        first, second = (Pacer(ACCOUNT, clock=clock, wall=clock) for _ in range(2))
        first.share(store)
        second.share(store)
        first.learn(AccountLimits(requests_per_minute=600))
        first.refused(ticket(first.try_acquire(10)), retry_after=4.0)
        assert second.try_acquire(10) == pytest.approx(4.0)


def test_a_new_process_starts_from_the_limits_the_store_knows(tmp_db: Path) -> None:
    with Store(migrated_copy(tmp_db)) as store:
        Pacer(ACCOUNT).share(store)
        Pacer(ACCOUNT, limits=AccountLimits(tokens_per_minute=30_000)).share(store)
        assert known_limits(Account("openai", "", "abc123", "gpt-4.1"),
                            store).tokens_per_minute == 30_000
        later = Pacer(ACCOUNT)
        later.share(store)
        assert later.limits.tokens_per_minute == 30_000
        row = store.account_limits(ACCOUNT.id)
        assert row is not None and "abc123" in ACCOUNT.id  # a hash names it, never a key


def test_a_failing_store_leaves_the_pacer_pacing_alone(tmp_db: Path) -> None:
    class Broken:
        def account_limits(self, account_id: str) -> None:
            return None

        def __getattr__(self, name: str) -> Any:
            def fail(*args: Any, **kwargs: Any) -> None:
                raise OSError("disk gone")
            return fail

    clock = Clock()
    p = Pacer(ACCOUNT, clock=clock, wall=clock, limits=AccountLimits(tokens_per_minute=6_000))
    p.share(Broken())  # type: ignore[arg-type]
    ticket(p.try_acquire(5_000))
    assert p.try_acquire(2_000) == pytest.approx(10.0)


def test_the_wait_line_names_the_provider_or_the_server() -> None:
    clock = Clock()
    for base, expected in (
        ("", "Waiting for OpenAI's limit of 500 requests a minute on gpt-4.1: about 30 s"),
        ("https://team.openai.azure.com/openai/v1",
         "Waiting for Azure OpenAI's limit of 500 requests a minute on gpt-4.1: about 30 s"),
        ("http://127.0.0.1:11434/v1", "Waiting for the limit of 500 requests a minute of the "
                                      "model server at 127.0.0.1 (gpt-4.1): about 30 s"),
    ):
        p = Pacer(Account("openai", base, "k", "gpt-4.1"), clock=clock,
                  limits=AccountLimits(requests_per_minute=500))
        with p._cond:
            notice = p._noticed(30.0, "requests", clock())
        assert notice is not None and notice.text == expected


def test_a_wait_for_the_account_does_not_use_the_steps_time_limit() -> None:
    # The account asks for 1.5 s; the step has 1 s left: waiting our turn is not the step's time.
    llm = Scripted(limited(after=1.5))
    waits = RunWaits(until=lambda: time.monotonic() + 3600)
    step = time.monotonic() + 1.0
    assert role(llm, waits).text([Message("user", "hi")], deadline=step) == "answer"
    assert len(llm.calls) == 2


def test_the_chat_models_and_account_of_name_the_same_account() -> None:
    assert OpenAIChat("gpt-4.1", api_key="sk-test").account == Account.of(
        "openai", None, "sk-test", "gpt-4.1")
    gemini = GeminiChat("gemini-2.5-flash", api_key="AIza-test-key", base_url="http://h:1")
    assert gemini.account == Account.of("gemini", "http://h:1", "AIza-test-key",
                                        "gemini-2.5-flash")
    assert "sk-test" not in gemini.account.id and "AIza-test-key" not in gemini.account.id
