"""The stand-in's rate limits and local model servers, through the real SDKs (issue 31, point 7).

The engine is tested against these answers, so they must be the providers' documented ones:
OpenAI's x-ratelimit-* headers on every answer and its 429 body, Gemini's RESOURCE_EXHAUSTED
with QuotaFailure and RetryInfo, the search APIs' refusals, a local server that answers one
request at a time and does what its kind does with a prompt over its window.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any

import httpx
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from tests.standin import GEMINI_KEY, OPENAI_KEY, StandinServer
from tests.standin.limits import duration

MODEL = "gpt-4.1"
GEMINI_MODEL = "gemini-2.5-flash"
RATE_HEADERS = ("x-ratelimit-limit-requests", "x-ratelimit-limit-tokens",
                "x-ratelimit-remaining-requests", "x-ratelimit-remaining-tokens",
                "x-ratelimit-reset-requests", "x-ratelimit-reset-tokens")
DURATION = re.compile(r"^(\d+h)?(\d+m)?(\d+(\.\d+)?s)?$|^\d+ms$")


def _seconds(text: str) -> float:
    """A duration as OpenAI writes it (`20ms`, `1.9s`, `1m3.5s`) in seconds."""
    if text.endswith("ms"):
        return float(text[:-2]) / 1000
    parts = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?", text)
    assert parts and text, text
    h, m, s = (float(p or 0) for p in parts.groups())
    return h * 3600 + m * 60 + s


def _openai(standin: StandinServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{standin.base_url}/v1", api_key=OPENAI_KEY, max_retries=0)


def _ask(client: openai.OpenAI, text: str = "Say hello.", max_tokens: int | None = None,
         model: str = MODEL) -> Any:
    extra = {"max_tokens": max_tokens} if max_tokens else {}
    return client.chat.completions.with_raw_response.create(
        model=model, messages=[{"role": "user", "content": text}], **extra)


def _refused(client: openai.OpenAI, **kwargs: Any) -> openai.RateLimitError:
    with pytest.raises(openai.RateLimitError) as caught:
        _ask(client, **kwargs)
    return caught.value


def _gemini(standin: StandinServer) -> genai.Client:
    options = genai_types.HttpOptions(base_url=standin.base_url, api_version="v1beta",
                                      retry_options=genai_types.HttpRetryOptions(attempts=1))
    return genai.Client(api_key=GEMINI_KEY, http_options=options)


def _gemini_refusal(client: genai.Client) -> genai_errors.APIError:
    with pytest.raises(genai_errors.APIError) as caught:
        client.models.generate_content(model=GEMINI_MODEL, contents="Say hello.")
    return caught.value


def _detail(error: genai_errors.APIError, kind: str) -> dict[str, Any]:
    details = error.details["error"]["details"]
    return next(d for d in details if d["@type"] == f"type.googleapis.com/google.rpc.{kind}")


# --- OpenAI ---------------------------------------------------------------------------------

def test_every_openai_answer_carries_the_accounts_rate_limit_headers(standin_env, standin):
    standin.set_account("openai", requests_per_minute=500, tokens_per_minute=30_000)
    text = "Say hello. " * 40
    answer = _ask(_openai(standin), text, max_tokens=100)
    headers = answer.headers
    assert [h for h in RATE_HEADERS if h not in headers] == []
    assert headers["x-ratelimit-limit-requests"] == "500"
    assert headers["x-ratelimit-limit-tokens"] == "30000"
    assert headers["x-ratelimit-remaining-requests"] == "499"
    # the request's cost for the limit: its prompt (characters / 4) plus max_tokens
    assert int(headers["x-ratelimit-remaining-tokens"]) == 30_000 - (len(text) // 4 + 100)
    assert headers["x-ratelimit-reset-requests"] == "120ms"  # one request of 500 a minute
    assert DURATION.match(headers["x-ratelimit-reset-tokens"])
    assert "retry-after" not in headers
    assert answer.parse().choices[0].message.content


def test_a_request_over_the_token_budget_gets_openais_429_and_no_retry_after(standin_env, standin):
    standin.set_account("openai", requests_per_minute=500, tokens_per_minute=1_000)
    client = _openai(standin)
    big = "word " * 560  # 700 tokens
    _ask(client, big)
    error = _refused(client, text=big, max_tokens=50)
    assert error.status_code == 429
    body = error.body if isinstance(error.body, dict) else {}
    assert body.get("code") == "rate_limit_exceeded" and body.get("type") == "tokens"
    message = str(body.get("message"))
    found = re.search(r"Rate limit reached for gpt-4\.1 in organization org-\S+ on tokens per min "
                      r"\(TPM\): Limit 1000, Used (\d+), Requested (\d+)\. Please try again in "
                      r"(\S+)\. Visit https://platform\.openai\.com/account/rate-limits", message)
    assert found, message
    assert int(found.group(2)) == 700 + 50
    assert DURATION.match(found.group(3))
    headers = error.response.headers
    assert "retry-after" not in headers and "retry-after-ms" not in headers
    assert [h for h in RATE_HEADERS if h not in headers] == []
    assert int(headers["x-ratelimit-remaining-tokens"]) < int(found.group(2))
    assert standin.rate_limited("openai") == 1


def test_the_budget_refills_in_the_time_the_429_names(standin_env, standin):
    standin.set_account("openai", tokens_per_minute=1_000)
    client = _openai(standin)
    big = "word " * 720  # 900 tokens
    _ask(client, big)
    message = str(_refused(client, text=big).message)
    wait = re.search(r"try again in (\S+)\.", message)
    assert wait, message
    seconds = _seconds(wait.group(1))
    assert seconds > 10  # 900 tokens of 1,000 a minute: tens of seconds, not a blink
    _refused(client, text=big)  # asking again at once changes nothing
    standin.advance_limits(seconds + 0.01)
    assert _ask(client, big).parse().choices[0].message.content
    assert standin.rate_limited("openai") == 2


@pytest.mark.parametrize("style", ["seconds", "ms"])
def test_retry_after_headers_only_when_asked_for_as_azure_sends_them(standin_env, standin, style):
    standin.set_account("openai", requests_per_minute=1, retry_after=style)
    client = _openai(standin)
    ok = _ask(client)
    assert "retry-after" not in ok.headers  # only a refusal carries them
    error = _refused(client)
    body = error.body if isinstance(error.body, dict) else {}
    assert body.get("type") == "requests" and "requests per min (RPM)" in str(body.get("message"))
    headers = error.response.headers
    assert 55 <= int(headers["retry-after"]) <= 60  # a minute for the next request, give or take
    if style == "ms":
        assert 55_000 <= int(headers["retry-after-ms"]) <= 60_000
    else:
        assert "retry-after-ms" not in headers


def test_a_request_larger_than_the_whole_minute_is_too_large_not_rate_limited(standin_env, standin):
    standin.set_account("openai", tokens_per_minute=1_000)
    error = _refused(_openai(standin), text="word " * 1_000)
    message = str((error.body or {}).get("message") if isinstance(error.body, dict) else "")
    assert message.startswith("Request too large for gpt-4.1 in organization")
    assert "Limit 1000, Requested 1250" in message and "try again" not in message
    standin.advance_limits(3_600)
    _refused(_openai(standin), text="word " * 1_000)  # an hour later: still too large


def test_the_answer_settles_to_the_tokens_used_not_max_tokens(standin_env, standin):
    standin.set_account("openai", tokens_per_minute=10_000)
    client = _openai(standin)
    first = _ask(client, max_tokens=5_000)
    used = first.parse().usage
    assert used is not None and used.completion_tokens < 1_000
    second = _ask(client, max_tokens=100)
    remaining = int(second.headers["x-ratelimit-remaining-tokens"])
    prompt = len("Say hello.") // 4
    # the first request keeps only what it used; had it kept its max_tokens, 4,900 would be left
    assert remaining >= 10_000 - (prompt + used.completion_tokens) - (prompt + 100)
    assert remaining > 10_000 - (prompt + 5_000) - (prompt + 100)


def test_a_daily_request_quota_is_per_day(standin_env, standin):
    standin.set_account("openai", requests_per_minute=500, requests_per_day=2)
    client = _openai(standin)
    _ask(client)
    _ask(client)
    message = str(_refused(client).message)
    assert "on requests per day (RPD): Limit 2, Used 2, Requested 1" in message
    standin.advance_limits(120)  # a minute's budget back, not the day's
    _refused(client)


def test_spent_credit_answers_insufficient_quota_for_good(standin_env, standin):
    standin.set_account("openai", quota_requests=1)
    client = _openai(standin)
    _ask(client)
    for _ in range(2):
        error = _refused(client)
        assert isinstance(error.body, dict) and error.body.get("code") == "insufficient_quota"
        standin.advance_limits(86_400)


def test_a_free_tier_of_ten_requests_a_minute_refuses_the_eleventh(standin_env, standin):
    standin.set_account("openai", requests_per_minute=10)
    client = _openai(standin)
    for _ in range(10):
        assert _ask(client).headers["x-ratelimit-limit-requests"] == "10"
    error = _refused(client)
    assert "Limit 10, Used 10, Requested 1" in str(error.message)
    assert "x-ratelimit-limit-tokens" not in error.response.headers  # no token limit set


def test_each_model_and_each_key_has_its_own_books(standin_env, standin):
    standin.set_account("openai", requests_per_minute=1)
    client = _openai(standin)
    _ask(client)
    _refused(client)
    _ask(client, model="gpt-4.1-mini")
    other = openai.OpenAI(base_url=f"{standin.base_url}/v1", api_key="sk-test-other", max_retries=0)
    _ask(other)


def test_a_model_can_have_limits_of_its_own(standin_env, standin):
    standin.set_account("openai", requests_per_minute=1)
    standin.set_account("openai", requests_per_minute=3, model="gpt-4.1-mini")
    client = _openai(standin)
    assert _ask(client, model="gpt-4.1-mini").headers["x-ratelimit-limit-requests"] == "3"
    assert _ask(client).headers["x-ratelimit-limit-requests"] == "1"
    _refused(client)
    _ask(client, model="gpt-4.1-mini")


def test_reset_lifts_every_limit(standin_env, standin):
    standin.set_account("openai", requests_per_minute=1)
    _ask(_openai(standin))
    standin.reset()
    answer = _ask(_openai(standin))
    assert "x-ratelimit-limit-requests" not in answer.headers


# --- Gemini ---------------------------------------------------------------------------------

def test_gemini_per_minute_quota_is_resource_exhausted_with_retry_info(standin_env, standin):
    standin.set_account("gemini", requests_per_minute=10, free_tier=True)
    client = _gemini(standin)
    for _ in range(10):
        client.models.generate_content(model=GEMINI_MODEL, contents="Say hello.")
    error = _gemini_refusal(client)
    assert error.code == 429 and error.status == "RESOURCE_EXHAUSTED"
    violation = _detail(error, "QuotaFailure")["violations"][0]
    assert violation["quotaId"] == "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"
    assert violation["quotaValue"] == "10"
    assert violation["quotaDimensions"]["model"] == GEMINI_MODEL
    delay = _detail(error, "RetryInfo")["retryDelay"]
    assert re.fullmatch(r"\d+s", delay) and 1 <= int(delay[:-1]) <= 6  # a tenth of a minute
    assert "Please retry in" in str(error.message)
    standin.advance_limits(int(delay[:-1]))
    client.models.generate_content(model=GEMINI_MODEL, contents="Say hello.")


def test_gemini_sends_no_rate_limit_headers(standin_env, standin):
    standin.set_account("gemini", requests_per_minute=10)
    response = httpx.post(f"{standin.base_url}/v1beta/models/{GEMINI_MODEL}:generateContent",
                          headers={"x-goog-api-key": GEMINI_KEY},
                          json={"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]})
    assert response.status_code == 200
    assert [h for h in response.headers if h.startswith("x-ratelimit")] == []


def test_gemini_daily_quota_names_the_day(standin_env, standin):
    standin.set_account("gemini", requests_per_minute=10, requests_per_day=1)
    client = _gemini(standin)
    client.models.generate_content(model=GEMINI_MODEL, contents="Say hello.")
    error = _gemini_refusal(client)
    quota_id = _detail(error, "QuotaFailure")["violations"][0]["quotaId"]
    assert quota_id == "GenerateRequestsPerDayPerProjectPerModel"


def test_gemini_counts_input_tokens_per_minute(standin_env, standin):
    standin.set_account("gemini", tokens_per_minute=100)
    client = _gemini(standin)
    client.models.generate_content(model=GEMINI_MODEL, contents="word " * 60)  # 75 tokens
    with pytest.raises(genai_errors.APIError) as caught:
        client.models.generate_content(model=GEMINI_MODEL, contents="word " * 60)
    error = caught.value
    violation = _detail(error, "QuotaFailure")["violations"][0]
    assert violation["quotaId"] == "GenerateContentInputTokensPerModelPerMinute"
    client.models.generate_content(model=GEMINI_MODEL, contents="Hi")  # a small one still fits


# --- search APIs ----------------------------------------------------------------------------

def test_arxiv_refuses_a_second_request_within_three_seconds(standin_env, standin):
    standin.set_search_limit("arxiv", min_interval=3.0, status=503)
    url = f"{standin.base_url}/arxiv/api/query"
    assert httpx.get(url, params={"search_query": "all:coffee"}).status_code == 200
    early = httpx.get(url, params={"search_query": "all:tea"})
    assert early.status_code == 503 and early.text == "Rate exceeded."
    standin.advance_limits(3.0)
    assert httpx.get(url, params={"search_query": "all:tea"}).status_code == 200
    log = standin.requests_for("arxiv")
    assert [r.get("rate_limited", False) for r in log] == [False, True, False]
    gaps = standin.gaps("arxiv")
    assert len(gaps) == 2 and all(g >= 0 for g in gaps)  # times, for tests of the pacing
    assert standin.rate_limited("arxiv") == 1


def test_semantic_scholar_keyless_pool_answers_429(standin_env, standin):
    standin.set_search_limit("semanticscholar", min_interval=1.0)
    url = f"{standin.base_url}/s2/graph/v1/paper/search"
    assert httpx.get(url, params={"query": "coffee"}).status_code == 200
    refused = httpx.get(url, params={"query": "tea"})
    assert refused.status_code == 429 and "Too Many Requests" in refused.json()["message"]


def test_tavily_answers_429_past_its_requests_per_minute(standin_env, standin):
    standin.set_search_limit("tavily", requests_per_minute=2)
    url = f"{standin.base_url}/search"
    headers = {"Authorization": "Bearer tvly-test"}
    codes = [httpx.post(url, json={"query": f"q{i}"}, headers=headers).status_code for i in range(3)]
    assert codes == [200, 200, 429]


def test_one_connection_at_a_time(standin_env, standin):
    standin.set_search_limit("arxiv", connections=1, status=429)
    standin.set_latency(search=0.5)
    url = f"{standin.base_url}/arxiv/api/query"
    codes: list[int] = []
    threads = [threading.Thread(target=lambda q=q: codes.append(
        httpx.get(url, params={"search_query": q}, timeout=10).status_code)) for q in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(codes) == [200, 429]
    assert standin.most_at_once("arxiv") == 2  # the second came while the first was under way


# --- local model servers -------------------------------------------------------------------

def _local(standin: StandinServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{standin.base_url}/v1", api_key="unused", max_retries=0,
                         timeout=60)


def _at_once(standin: StandinServer, n: int, stagger: float = 0.0) -> list[Any]:
    client = _local(standin)
    answers: list[Any] = []
    threads = [threading.Thread(target=lambda i=i: answers.append(client.chat.completions.create(
        model="llama3.1:8b", messages=[{"role": "user", "content": f"Say hello {i}."}])))
        for i in range(n)]
    for t in threads:
        t.start()
        time.sleep(stagger)
    for t in threads:
        t.join()
    return answers


@pytest.mark.parametrize("parallel", [1, 2])
def test_a_local_server_answers_parallel_requests_at_a_time_and_queues_the_rest(
        standin_env, standin, parallel):
    # Sent 50 ms apart, so that which came first is not a race of threads within a
    # millisecond; an answer takes about a second at 250 tokens/s, so the later ones queue
    # (at 100 the four answers one at a time held a test worker for 11 s).
    standin.set_local_server("ollama", parallel=parallel, tokens_per_second=250)
    assert len(_at_once(standin, 4, stagger=0.05)) == 4
    log = standin.requests_for("openai")
    assert len(log) == 4 and all("started" in r and "answered" in r for r in log)
    assert standin.most_at_once("openai", "started", "answered") == parallel
    assert standin.most_at_once("openai") > parallel  # some were under way, waiting their turn
    # first come, first served
    assert [r["time"] for r in sorted(log, key=lambda r: r["started"])] == sorted(r["time"] for r in log)


def test_a_queued_request_whose_client_gave_up_is_dropped_unanswered(standin_env, standin):
    # The first answer takes about 2 s: the second request gives up (0.5 s) while it waits.
    standin.set_local_server("ollama", tokens_per_second=150)
    first = threading.Thread(target=_at_once, args=(standin, 1))
    first.start()
    while not any("started" in r for r in standin.requests_for("openai")):
        threading.Event().wait(0.01)
    impatient = openai.OpenAI(base_url=f"{standin.base_url}/v1", api_key="unused", max_retries=0,
                              timeout=0.5)
    with pytest.raises(openai.APITimeoutError):
        impatient.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi"}])
    first.join()
    for _ in range(100):  # the server notices at its next look at the waiting line
        dropped = standin.requests_for("openai")[1]
        if dropped.get("client_gone"):
            break
        threading.Event().wait(0.05)
    assert dropped.get("client_gone") and "started" not in dropped and "status" not in dropped


def test_past_its_waiting_line_ollama_answers_server_busy(standin_env, standin):
    # An answer takes about a second: long enough for all three to arrive while it is written.
    standin.set_local_server("ollama", tokens_per_second=250, max_queue=1)
    client = _local(standin)
    codes: list[int] = []

    def ask(i: int) -> None:
        try:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": f"Hi {i}"}])
            codes.append(200)
        except openai.APIStatusError as error:
            codes.append(error.status_code)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(codes) == [200, 200, 503]  # one answered, one waited, one turned away


def test_search_requests_log_when_they_were_done_with(standin_env, standin):
    httpx.get(f"{standin.base_url}/arxiv/api/query", params={"search_query": "all:coffee"})
    entry = standin.requests_for("arxiv")[0]
    for _ in range(200):  # set once the handler is through, a moment after the client has read
        if "ended" in entry:
            break
        threading.Event().wait(0.01)
    assert entry["ended"] >= entry["time"]


def test_ollama_cuts_a_long_prompt_silently_and_says_its_window(standin_env, standin):
    standin.set_local_server("ollama", context_tokens=200, tokens_per_second=1_000)
    answer = _local(standin).chat.completions.create(
        model="llama3.1:8b", messages=[{"role": "user", "content": "word " * 2_000}])
    assert answer.usage is not None and answer.usage.prompt_tokens <= 200  # 2,500 were sent
    base = standin.base_url
    shown = httpx.post(f"{base}/api/show", json={"model": "llama3.1:8b"}).json()
    assert re.search(r"^num_ctx\s+200$", shown["parameters"], re.M)
    assert shown["model_info"]["llama.context_length"] > 200  # what the model could, not what is set
    assert httpx.get(f"{base}/api/version").json()["version"]
    assert httpx.get(f"{base}/api/ps").json()["models"][0]["context_length"] == 200
    assert httpx.get(f"{base}/props").status_code == 404


def test_llamacpp_refuses_a_prompt_over_its_window(standin_env, standin):
    standin.set_local_server("llamacpp", parallel=2, context_tokens=200, tokens_per_second=1_000)
    props = httpx.get(f"{standin.base_url}/props").json()
    assert props["default_generation_settings"]["n_ctx"] == 200 and props["total_slots"] == 2
    with pytest.raises(openai.BadRequestError) as caught:
        _local(standin).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "word " * 2_000}])
    body = caught.value.body if isinstance(caught.value.body, dict) else {}
    assert body.get("type") == "exceed_context_size_error" and body.get("n_ctx") == 200
    _local(standin).chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi"}])


def test_vllm_refuses_prompt_and_max_tokens_over_max_model_len(standin_env, standin):
    standin.set_local_server("vllm", context_tokens=300, model="Qwen/Qwen2.5-7B-Instruct", tokens_per_second=1_000)
    models = httpx.get(f"{standin.base_url}/v1/models").json()
    assert models["data"][0]["max_model_len"] == 300
    client = _local(standin)
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="m", max_tokens=250,
                                       messages=[{"role": "user", "content": "word " * 80}])
    assert "maximum context length is 300 tokens" in str(caught.value.message)
    client.chat.completions.create(model="m", max_tokens=100,
                                   messages=[{"role": "user", "content": "word " * 80}])


def test_durations_are_written_as_openai_writes_them():
    assert [duration(s) for s in (0.02, 1.9, 6.0, 360.0, 0.0004)] == ["20ms", "1.9s", "6s", "6m0s", "1ms"]
    assert [_seconds(duration(s)) for s in (0.02, 1.9, 63.777, 3_700)] == [0.02, 1.9, 63.777, 3_700]


def test_openai_itself_lists_models_without_a_context_length(standin_env, standin):
    listed = _openai(standin).models.list()
    assert listed.data and all(getattr(m, "max_model_len", None) is None for m in listed.data)
    assert httpx.get(f"{standin.base_url}/v1/models").status_code == 401  # needs the key
    assert httpx.get(f"{standin.base_url}/api/version").status_code == 404  # not Ollama
