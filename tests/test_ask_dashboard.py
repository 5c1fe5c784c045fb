"""Ask the report on the Run page (issue 35, point 1): the box under a finished report, the link
to it near the top, answers shown with their citations and checks, kept when the run is opened
again, and "Research it" for a question the sources cannot answer. The answers come from the
stand-in over real HTTP through the real OpenAI SDK (tests/standin/brain_ask.py); the run they
ask about is made through the in-process fakes.
"""

from __future__ import annotations

import pytest

from dashboard import views
from research.export.markdown import safe_link_url
from research.export.run_document import build_document_for_run
from storage import Store
from storage.conversations import turns
from tests.dashboard_fixtures import (  # noqa: F401 - fixtures
    FakeExecutor,
    dash_env_fixture,
    fake_jobs_fixture,
    open_run_page,
)
from tests.runs import Runner


def _markdown(at: object) -> list[str]:
    return [m.value for m in at.markdown]  # type: ignore[attr-defined]


def test_a_question_under_the_report_is_answered_cited_kept_and_can_be_researched(
    dash_env: Store, fake_jobs: FakeExecutor, runs: Runner, monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in runs.env.items():  # the page's answers: the real SDK to the stand-in
        monkeypatch.setenv(name, value)
    # The run itself through the in-process fakes (the same stand-in answers and pages): the
    # page and its answers are what this test is about.
    store, run_id, _ = runs.use_store(dash_env).completed(
        preset="quick", SUBTOPIC_COUNT=3, SOURCES_PER_SUBTOPIC=5, SEARCHES_PER_SUBTOPIC=1)

    at = open_run_page(run_id)
    assert not at.exception
    assert any("#ask-the-report" in m for m in _markdown(at))  # the link near the top
    assert any(s.value == "Ask the report" for s in at.subheader)
    at.text_area(key=f"ask_q_{run_id}").input("What was the average cost per unit?")
    next(b for b in at.button if b.label == "Ask").click().run()
    assert not at.exception and not [e.value for e in at.error]
    kept = turns(store, run_id)
    assert len(kept) == 1 and kept[0].status == "answered"
    shown = "\n".join(_markdown(at))
    assert "average cost fell" in shown
    # A citation in the answer opens the same source as the same number in the report.
    cited = kept[0].details["sources"][0]
    link = f"[[{cited['number']}]]({safe_link_url(cited['url'])})"
    report = views.report_markdown(build_document_for_run(store, run_id))
    if link not in report:  # a gathered source the report does not cite: numbered after it
        assert cited["number"] > max(s.number for s in build_document_for_run(store, run_id).sources)
    assert link in shown
    assert "checked against their sources" in "\n".join(c.value for c in at.caption)

    at = open_run_page(run_id)  # opened again: the conversation is there
    assert "average cost fell" in "\n".join(_markdown(at))
    at.text_area(key=f"ask_q_{run_id}").input("What colour were the new installations in Mongolia?")
    next(b for b in at.button if b.label == "Ask").click().run()
    assert not at.exception and not [e.value for e in at.error]
    assert "The sources of this report don't say" in "\n".join(_markdown(at))
    next(b for b in at.button if b.label == "Research it").click().run()
    assert not at.exception and not [e.value for e in at.error]
    child = next(r for r in dash_env.list_runs() if r.id != run_id)
    assert child.parent_run_id == run_id
    assert child.question == "What colour were the new installations in Mongolia?"
    assert child.config == dash_env.get_run(run_id).config  # type: ignore[union-attr]
    assert at.query_params.get("run") in (child.id, [child.id])  # its Run page opened
