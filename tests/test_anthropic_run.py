"""A complete research run with Claude for every role: the real `anthropic` SDK talks to the
stand-in's Messages API, under an account's rate limits, through an overload and a refused key
that echo the key (which reaches no event, row or export), and the run is priced."""

from __future__ import annotations

from research.core.config import ROLES
from research.export import to_markdown
from research.export.run_document import build_document_for_run
from tests.runs import Runner
from tests.standin import ANTHROPIC_KEY, StandinServer, anthropic_error
from tests.standin.server import _task_of


def test_a_run_with_claude_for_every_role_completes_with_a_cited_report(
    standin: StandinServer, http_runs: Runner
) -> None:
    # The writer on a model of its own; every other role on the lead's.
    http_runs.with_env(DEEP_RESEARCH_PROVIDER="anthropic", DEEP_RESEARCH_MODEL="claude-haiku-4-5",
                       DEEP_RESEARCH_WRITER_MODEL="claude-sonnet-5-5",
                       DEEP_RESEARCH_SEARCH="tavily")
    standin.set_account("anthropic", requests_per_minute=1000, tokens_per_minute=2_000_000)
    # Two errors that echo the key, on calls the run survives: Claude overloaded (retried),
    # and a key refused on one scoring call.
    standin.add_fault("anthropic", "status", status=529, task="SearchQueries", body=anthropic_error(
        "overloaded_error", f"Overloaded (key {ANTHROPIC_KEY})"))
    standin.add_fault("anthropic", "status", status=401, task="RelevanceScores",
                      body=anthropic_error("authentication_error",
                                           f"invalid x-api-key: {ANTHROPIC_KEY}"))
    store, run_id, run = http_runs.completed(preset="quick", SOURCES_PER_SUBTOPIC=5,
                                             SEARCHES_PER_SUBTOPIC=1)

    assert run.config["provider"] == "anthropic"
    assert {run.config.get("role_models", {}).get(r, {}).get("provider", "anthropic")
            for r in ROLES} == {"anthropic"}
    # Every model call went to the Messages API, none elsewhere, and none was refused.
    entries = standin.requests_for("anthropic")
    assert len(entries) > 5
    assert standin.count("openai") == 0 and standin.count("gemini") == 0
    assert sorted(e["status"] for e in entries if e["status"] != 200) == [401, 529]
    assert not any("contract_error" in e for e in entries)
    assert standin.rate_limited("anthropic") == 0  # paced by the headers of every answer
    by_model = {e["json"]["model"] for e in entries}
    assert by_model == {"claude-haiku-4-5", "claude-sonnet-5-5"}
    writer_calls = [e for e in entries if _task_of("anthropic", e["json"]) == "writer"]
    assert writer_calls and all(e["json"]["model"] == "claude-sonnet-5-5" for e in writer_calls)
    assert any("output_config" in e["json"] for e in entries)  # structured answers
    assert not standin.unknown_tasks  # every schema reached the brain whole

    report = store.get_report(run_id)
    assert report is not None and "[1]" in report.markdown
    assert store.get_sources(run_id)
    events = store.get_events(run_id)
    assert "retrying" in {e.type for e in events}
    assert "[redacted]" in " ".join(e.message for e in events)
    for where in (repr(events), repr(store.get_run(run_id)), repr(store.get_steps(run_id)),
                  to_markdown(build_document_for_run(store, run_id))):
        assert ANTHROPIC_KEY not in where
    # Claude's tokens are priced (both models are in the price table).
    assert run.totals.tokens > 0 and run.totals.cost_usd > 0


def test_a_refused_claude_key_stops_the_run_at_pre_flight_in_plain_words(
    standin: StandinServer, http_runs: Runner
) -> None:
    standin.add_fault("anthropic", "status", times=10, status=401, task="Ping")
    http_runs.with_env(DEEP_RESEARCH_PROVIDER="anthropic", DEEP_RESEARCH_SEARCH="tavily",
                       DEEP_RESEARCH_INCLUDE_ACADEMIC_SOURCES="0")
    store, run_id = http_runs(preset="quick")
    run = store.get_run(run_id)
    assert run is not None and run.status == "failed"
    assert run.error.startswith("Anthropic did not accept the API key"), run.error
    assert "ANTHROPIC_API_KEY" in run.error and ANTHROPIC_KEY not in run.error
