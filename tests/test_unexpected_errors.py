"""An unexpected error costs a piece, not the run (issue 32).

A programming error inside one section's writing, revising or shortening, one batch of page
scores, one batch of claim checks or one export format keeps what was there before (the part
is left out or kept as it was, the pages are skipped, the claims stay unchecked, the other
formats work), and the run completes with a warning in plain words; the traceback is in the
warning event's data, and no message names an exception. In the test suite the same error
fails the run (tests/conftest.py turns `raise_unexpected` on), so bugs are still found: each
test checks both.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from research.core import errors
from research.export import formats
from research.phases.gather import scoring
from research.phases.verify import judge
from research.phases.writing import sections_job
from storage import Store
from tests.real_outputs import EXCEPTION_WORDS
from tests.runs import Runner
from tests.standin import StandinServer

BUG = "BUG-MARKER-7f3a"
CONFIG: dict[str, Any] = {"preset": "quick", "review_cycles": 1, "include_academic_sources": False,
                          "search_other_side": False, "searches_per_subtopic": 1}


@pytest.fixture
def contained() -> Iterator[None]:
    """A real run's behaviour: the suite's switch off for this test."""
    errors.raise_unexpected(False)
    try:
        yield
    finally:
        errors.raise_unexpected(True)


def _bug_in_clean_part(monkeypatch: pytest.MonkeyPatch) -> None:
    """`clean_part` fails as the old crash did, for an answer carrying the marker."""
    real = sections_job.clean_part

    def clean_part(text: str, *args: Any) -> Any:
        if BUG in text:
            raise IndexError("list index out of range")
        return real(text, *args)

    monkeypatch.setattr(sections_job, "clean_part", clean_part)


def _mark_writer(standin: StandinServer, wanted: Callable[[str], bool], times: int = 1) -> list[int]:
    """The stand-in's writer answer, with the marker, for the first `times` prompts `wanted`."""
    from tests.standin import brain

    left = [times]

    def script(system: str, user: str, schema: dict | None) -> str | None:
        if schema is not None or not wanted(user) or left[0] <= 0:
            return None
        left[0] -= 1
        return brain.respond(system, user, None) + f"\n\n{BUG}\n"

    standin.script = script
    return left


def _said(store: Store, run_id: str) -> str:
    run = store.get_run(run_id)
    assert run is not None
    events = " ".join(e.message for e in store.get_events(run_id))
    return f"{run.error or ''} {' '.join(run.warnings)} {events}"


def _completed_with(store: Store, run_id: str, warning: str) -> None:
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", run and run.error
    assert any(warning.lower() in w.lower() for w in run.warnings), run.warnings
    assert store.get_report(run_id) is not None
    assert not EXCEPTION_WORDS.search(_said(store, run_id)), EXCEPTION_WORDS.search(_said(store, run_id))
    details = [e.data.get("detail", "") for e in store.get_events(run_id) if e.type == "warning"]
    assert any("Traceback" in d for d in details), details  # for the log, not the person


def _failed_plainly(store: Store, run_id: str) -> None:
    run = store.get_run(run_id)
    assert run is not None and run.status == "failed"
    assert not EXCEPTION_WORDS.search(run.error or ""), run.error


@pytest.mark.parametrize(("prompt", "warning"), [
    (lambda user: user.lstrip().startswith("The report below has"),
     "could not be shortened and is longer than asked"),
    (lambda user: "CURRENT TEXT OF YOUR PART" in user and "YOUR PART: the key findings" in user,
     "could not be revised and is kept as it was"),
    (lambda user: "YOUR PART: the comparison" in user, "could not be written and is left out"),
], ids=["shortening", "revision", "section"])
def test_a_bug_in_one_part_costs_that_part_and_the_run_completes_with_a_plain_warning(
    standin: StandinServer, runs: Runner, monkeypatch: pytest.MonkeyPatch, contained: None,
    prompt: Callable[[str], bool], warning: str,
) -> None:
    _bug_in_clean_part(monkeypatch)
    left = _mark_writer(standin, prompt)
    store, run_id = runs(**CONFIG, report_max_words=300)
    assert left == [0]  # the bug was met
    _completed_with(store, run_id, warning)
    report = store.get_report(run_id)
    assert report is not None and BUG not in report.markdown


def test_in_the_test_suite_the_same_bug_fails_the_run(
    standin: StandinServer, runs: Runner, monkeypatch: pytest.MonkeyPatch,
) -> None:
    _bug_in_clean_part(monkeypatch)
    _mark_writer(standin, lambda user: user.lstrip().startswith("The report below has"))
    store, run_id = runs(**CONFIG, report_max_words=300)
    _failed_plainly(store, run_id)


def _bug_once(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[int]:
    real = getattr(owner, name)
    calls = [0]

    def buggy(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == 1:
            raise KeyError("source_id")
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, buggy)
    return calls


def test_a_bug_in_one_scoring_batch_skips_its_pages_and_the_run_completes(
    runs: Runner, monkeypatch: pytest.MonkeyPatch, contained: None,
) -> None:
    calls = _bug_once(monkeypatch, scoring, "_ask")
    store, run_id = runs(**CONFIG)
    assert calls[0] > 1
    _completed_with(store, run_id, "could not be scored and were skipped")


def test_a_bug_in_one_claim_check_costs_those_checks_and_the_run_completes(
    runs: Runner, monkeypatch: pytest.MonkeyPatch, contained: None,
) -> None:
    calls = _bug_once(monkeypatch, judge, "_judge_batch")
    store, run_id = runs(**{**CONFIG, "review_cycles": 0})
    assert calls[0] > 1
    _completed_with(store, run_id, "some claim checks could not be made")
    rows = [r for r in store.get_verifications(run_id) if r.source_ids]
    assert any(not r.verifier_verdict or not r.auditor_verdict for r in rows)


def test_a_bug_in_the_claim_checks_fails_the_run_in_the_test_suite(
    runs: Runner, monkeypatch: pytest.MonkeyPatch,
) -> None:
    _bug_once(monkeypatch, judge, "_judge_batch")
    store, run_id = runs(**{**CONFIG, "review_cycles": 0})
    _failed_plainly(store, run_id)


def test_a_bug_in_one_export_format_is_said_plainly_and_the_others_still_work(
    runs: Runner, monkeypatch: pytest.MonkeyPatch, contained: None,
) -> None:
    store, run_id, _ = runs.completed(**{**CONFIG, "review_cycles": 0})
    monkeypatch.setitem(formats._BUILDERS, "ris", lambda *_: [][0])
    with pytest.raises(formats.ExportFailed) as failed:
        formats.export_run(store, run_id, "ris")
    assert "RIS file could not be made" in str(failed.value)
    assert not EXCEPTION_WORDS.search(str(failed.value))
    assert formats.export_run(store, run_id, "bib").strip()
    errors.raise_unexpected(True)  # the suite's switch: the bug itself
    with pytest.raises(IndexError):
        formats.export_run(store, run_id, "ris")


def test_a_run_that_crashes_outside_any_piece_names_no_exception(
    runs: Runner, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from research.phases.writing import deliver

    monkeypatch.setattr(deliver, "run_record", lambda ctx: {}["missing"])
    store, run_id = runs(**{**CONFIG, "review_cycles": 0})
    _failed_plainly(store, run_id)
    assert re.search(r"problem in the program itself", store.get_run(run_id).error or "")  # type: ignore[union-attr]
