"""A writer that cites nothing in its text (issue 32, point 3): the review asks for in-text
citations, the revision is checked for them, and when none come the run completes with a plain
warning, the report says so and its claims are marked rather than cut.

The writer here is the stand-in's, with its citations taken out of the text and its sources put
in an end list of links instead (the way some real systems write): in-process fakes.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from research.phases.verify.apply import NO_SOURCE
from research.phases.writing.review import CITE_IN_TEXT, UNCITED_NOTE, UNCITED_WARNING
from tests import fakes
from tests.runs import Runner
from tests.standin import StandinServer
from tests.standin.brain_behaviours import is_writer_call, listed_sources

_CITATIONS = re.compile(r"[ \t]*(?:\[\d+\])+")
FIGURE = "Installations in the region rose by 40 percent in 2023."  # a claim with a figure


def _end_list_writer(monkeypatch: pytest.MonkeyPatch, *, until_asked: bool) -> None:
    """Every writer answer cites only in a "Key Citations" list at its end; with `until_asked`,
    only until a revision prompt asks for citations in the text."""
    answer = fakes.llm_answer

    def end_list_only(standin: StandinServer, fault: Any, system: str, user: str,
                      schema: dict | None) -> tuple[str, Any, str]:
        text, special, finish = answer(standin, fault, system, user, schema)
        if not is_writer_call(schema, user) or (until_asked and CITE_IN_TEXT.suggestion in user):
            return text, special, finish
        listed = listed_sources(user).values()
        for title, _ in listed:  # naming a source by its title would cite it: "a source" does not
            text = re.sub(re.escape(title), "a source", text, flags=re.IGNORECASE)
        links = "\n".join(f"- [{title}]({url})" for title, url in listed)
        return (_CITATIONS.sub("", text) + f"\n\n{FIGURE}\n\n### Key Citations\n" + links + "\n",
                special, finish)

    monkeypatch.setattr(fakes, "llm_answer", end_list_only)


def test_a_writer_that_never_cites_in_its_text_is_asked_and_the_run_warns(
        standin: StandinServer, runs: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    _end_list_writer(monkeypatch, until_asked=False)
    store, run_id = runs(preset="quick", review_cycles=1)

    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", run
    assert UNCITED_WARNING in run.warnings
    assert not any("cites no sources" in w for w in run.warnings)  # one warning, the real cause
    review = store.get_reviews(run_id)[0]
    assert CITE_IN_TEXT.issue in [i.issue for i in review.issues] and not review.approved
    report = store.get_report(run_id)
    assert report is not None
    assert UNCITED_NOTE in report.markdown
    assert "Key Citations" not in report.markdown
    verdicts = store.get_verifications(run_id)
    assert verdicts and {v.status for v in verdicts} == {"uncited"}
    assert f"{FIGURE[:-1]} {NO_SOURCE}." in report.markdown  # marked, not cut


def test_a_writer_that_cites_once_asked_gives_a_cited_report_without_that_warning(
        standin: StandinServer, runs: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    _end_list_writer(monkeypatch, until_asked=True)
    store, run_id = runs(preset="quick", review_cycles=1)

    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", run
    assert UNCITED_WARNING not in run.warnings
    assert CITE_IN_TEXT.issue in [i.issue for i in store.get_reviews(run_id)[0].issues]
    report = store.get_report(run_id)
    assert report is not None and UNCITED_NOTE not in report.markdown
    assert report.meta["cited_sources"] >= 1
