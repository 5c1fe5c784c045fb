"""Dig deeper and build on earlier research: a linked run reuses its parent's sources."""

from __future__ import annotations

from pathlib import Path

from research import create_run, execute
from research.related import dig_deeper_question, report_sections, section_text, similar_runs, similarity
from storage import Store
from tests.runs import Runner
from tests.standin import StandinServer

QUESTION = "How is heat pump adoption changing in Europe?"


def test_similar_questions_are_found_and_unrelated_ones_are_not(tmp_db: Path) -> None:
    store = Store(tmp_db)
    for q in (QUESTION, "Heat pump adoption in European homes since 2020", "Best sourdough recipes"):
        run_id = store.create_run(q, {})
        store.set_run_status(run_id, "running")
        store.set_run_status(run_id, "completed")
    found = similar_runs(store, "Is heat pump adoption in Europe growing?")
    assert {r.run.question for r in found} == {QUESTION, "Heat pump adoption in European homes since 2020"}
    assert all(0.3 <= r.similarity <= 1 for r in found)
    assert similarity("heat pumps", "sourdough bread") == 0.0


def test_dig_deeper_run_reuses_the_parents_sources_without_fetching_them_again(
    standin: StandinServer, runs: Runner
) -> None:
    config = runs.config(preset="quick")
    store, parent = runs.with_config(config)
    parent_urls = {s.canonical_url for s in store.get_sources(parent)}
    report = store.get_report(parent).markdown  # type: ignore[union-attr]
    sections = report_sections(report)
    assert "Key findings" in sections and "Sources" not in sections

    assert section_text(report, "Key findings")
    question = dig_deeper_question(QUESTION, "Key findings")
    child = create_run(store, question, config.model_copy(update={"dig_deeper_section": "Key findings"}),
                       parent_run_id=parent)
    standin.reset()
    run = execute(child, store=store, credentials=runs.credentials, **runs.deps(config))
    assert run.status == "completed", run.error
    assert run.parent_run_id == parent

    child_sources = store.get_sources(child)
    inherited = {s.canonical_url for s in child_sources if s.subtopic_id == "p0"}
    assert inherited == parent_urls
    assert len({s.canonical_url for s in child_sources}) == len(child_sources)  # no duplicates
    fetched = {r["path"] for r in standin.requests_for("pages")}
    assert not any(url.endswith(path) for url in parent_urls for path in fetched)
    plan = store.get_plan(child) or []
    assert plan[0].inherited and plan[0].id == "p0"
    assert store.get_step(child, "research:p0") is None  # not researched again
    writer_prompts = [str(r["json"]) for r in standin.requests_for("openai")
                      if not r["json"].get("response_format") and "FINDINGS" in str(r["json"])]
    assert writer_prompts and any("### Subtopic: Earlier research" in p for p in writer_prompts)
