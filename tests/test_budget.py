"""Budget caps: reaching a cost, token or source cap stops research, and a report is
still written from what was gathered, labelled as stopped by the budget."""

from __future__ import annotations

from typing import Any

import pytest

from research import ConfigError, build_config
from storage import Store
from tests.runs import Runner


def _run(runs: Runner, **caps: Any) -> tuple[Store, str]:
    return runs(MAX_PARALLEL_WORKERS=1, **caps)


@pytest.mark.parametrize(("caps", "words"), [
    ({"max_cost_usd": 0.01}, "cost cap of $0.01"),
    ({"max_tokens": 20_000}, "token cap of 20,000"),
    ({"max_sources": 25}, "source cap of 25"),
])
def test_a_cap_stops_research_and_still_writes_a_labelled_report(
    runs: Runner, caps: dict[str, Any], words: str
) -> None:
    store, run_id = _run(runs, **caps)
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", run and run.error
    steps = store.get_steps(run_id)
    research = [s for s in steps if s.kind == "research"]
    assert any(s.status == "done" for s in research)
    assert len([s for s in research if s.status == "done"]) < 6  # stopped early
    report = store.get_report(run_id)
    assert report is not None
    assert "Stopped by the budget" in report.markdown and words in report.markdown
    assert "## Sources" in report.markdown
    assert not store.get_reviews(run_id)  # no further spending after the cap
    assert words in run.totals.stop_reason


def test_caps_are_validated() -> None:
    with pytest.raises(ConfigError, match="cost cap"):
        build_config(env={}, max_cost_usd=-1)
    with pytest.raises(ConfigError, match="cannot be negative"):
        build_config(env={}, max_sources=-5)


def test_a_token_cap_is_checked_before_each_call_and_keeps_what_was_gathered(
    runs: Runner
) -> None:
    # Margin: research never starts a call whose estimate would pass the cap, so everything
    # before the write-up stays within 6,000 tokens; after the stop only the write-up runs
    # (one draft call, no review or verification). Before this check: 25,549 tokens (4.3x).
    store, run_id = _run(runs, max_tokens=6_000)
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", run and run.error
    usage = store.get_usage(run_id)
    writer = [u for u in usage if u.role == "writer"]
    before_write_up = sum(u.input_tokens + u.output_tokens for u in usage
                          if u.role != "writer")
    assert before_write_up <= 6_000
    assert len(writer) == 1 and writer[0].calls == 1
    assert run.totals.tokens <= 6_000 * 1.5  # the cap plus one draft call
    assert store.count_sources(run_id) > 0
    stopped = [s for s in store.get_steps(run_id) if s.result.get("stopped_by_budget")]
    assert all(s.status == "done" for s in stopped)  # the unit in progress kept its sources
    report = store.get_report(run_id)
    assert report is not None and "token cap of 6,000" in report.markdown
    assert any("stopped by the budget" in w for w in run.warnings)
