"""The scale benchmark's figures (bench/scale.py): percentiles, stored times and the count of
steps executed twice, worked out from a run's events. No timing here: the section measures."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bench.scale import percentile, steps_redone, steps_run_twice, when
from research.core.records import EventRow, Step


def test_percentile_is_nearest_rank_and_empty_is_zero() -> None:
    values = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert percentile(values, 50) == 3.0
    assert percentile(values, 95) == 5.0
    assert percentile(values, 0) == 1.0
    assert percentile(range(1, 101), 95) == 95
    assert percentile([], 95) == 0.0


def test_stored_utc_times_read_as_epoch_seconds() -> None:
    assert when("1970-01-01T00:01:00.500Z") == pytest.approx(60.5)
    assert when("2026-11-23T09:00:02.000Z") - when("2026-11-23T09:00:00.250Z") == pytest.approx(1.75)


def _event(kind: str, step: str | None, attempt: int = 1) -> EventRow:
    return EventRow(id=0, run_id="r", ts="", type=kind, step=step, data={"attempt": attempt})


def test_a_retry_is_not_a_step_run_twice_but_a_restart_at_the_same_attempt_is() -> None:
    events = [
        _event("step_started", "plan"), _event("step_completed", "plan"),
        _event("step_started", "research:a"), _event("step_started", "research:a", attempt=2),
        _event("step_completed", "research:a"),
        _event("step_started", "research:b"),  # in flight when its worker was killed
        _event("step_started", "research:b"), _event("step_completed", "research:b"),
        _event("progress", None),
    ]
    assert steps_run_twice(events) == (["research:b"], [])


def test_a_step_completed_twice_is_reported() -> None:
    events = [_event("step_started", "draft"), _event("step_started", "draft"),
              _event("step_completed", "draft"), _event("step_completed", "draft")]
    assert steps_run_twice(events) == (["draft"], ["draft"])


def _step(key: str, status: str, started_at: str, finished_at: str | None) -> Step:
    return Step(id=0, run_id="r", key=key, status=status, started_at=started_at,
                finished_at=finished_at)


def test_steps_redone_reads_restarts_and_finished_steps_executed_again_from_the_steps_table() -> None:
    before = {s.key: s for s in [
        _step("plan", "done", "t0", "t1"),
        _step("research:a", "running", "t2", None),
        _step("research:b", "done", "t2", "t3"),
    ]}
    carried_on = [
        _step("plan", "done", "t0", "t1"),
        _step("research:a", "done", "t5", "t6"),
        _step("research:b", "done", "t2", "t3"),
        _step("draft", "done", "t7", "t8"),
    ]
    assert steps_redone(before, carried_on) == (["research:a"], [])
    executed_again = [*carried_on[:2], replace(carried_on[2], started_at="t5", finished_at="t9")]
    assert steps_redone(before, executed_again) == (["research:a", "research:b"], ["research:b"])
