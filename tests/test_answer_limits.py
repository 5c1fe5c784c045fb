"""A model answer cannot add more than the step asked for: lists are capped (the excess dropped and
logged), and a huge free-text answer fails in words about the model's answer."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from research.core.errors import ProviderError
from research.llm.answer_limits import MAX_ANSWER_CHARS, cap_lists, check_answer_size, margin
from research.phases.gather.findings import FINDINGS_GROUP, FINDINGS_PER_SOURCE, OPEN_QUESTIONS_CAPS
from tests.runs import Runner
from tests.standin import brain

QUESTION = "How do heat pumps perform in cold climates?"
FLOOD = 3_000  # hundreds of times what any step asks for (at most 10); short items, so the answer stays under
# the size limit and is capped rather than refused


def test_cap_lists_cuts_every_list_and_counts_what_it_dropped() -> None:
    answer = {"findings": [{"claim": "c", "source_ids": ["a"] * 50}] * 30, "gaps": ["g"] * 7}
    capped, dropped = cap_lists(answer, {"findings": 10, "source_ids": 3, "gaps": 20})
    assert len(capped["findings"]) == margin(10) == 12
    assert all(len(f["source_ids"]) == margin(3) for f in capped["findings"])
    assert len(capped["gaps"]) == 7
    assert dropped == (30 - 12) + 12 * (50 - 5)
    with pytest.raises(ProviderError, match="The writer model .* returned an answer of 20.0 million"):
        check_answer_size("x" * 20_000_000, "The writer model (openai/x)")
    check_answer_size("x" * MAX_ANSWER_CHARS, "fine")


def test_a_flood_of_findings_is_capped_and_logged(
    runs: Runner, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    plain = brain._BUILDERS["SubtopicFindings"]

    def flood(user: str) -> dict[str, Any]:
        answer = plain(user)
        sid = answer["findings"][0]["source_ids"][0]
        answer["findings"] = [{"claim": f"c{i}", "source_ids": [sid]} for i in range(FLOOD)]
        return answer

    def flood_gaps(user: str) -> dict[str, Any]:
        return {"gaps": [f"gap {i}" for i in range(FLOOD)], "follow_up_questions": []}

    monkeypatch.setitem(brain._BUILDERS, "SubtopicFindings", flood)
    monkeypatch.setitem(brain._BUILDERS, "OpenQuestions", flood_gaps)
    with caplog.at_level(logging.WARNING, logger="research.llm.answer_limits"):
        store, run_id = runs(QUESTION, preset="quick", SOURCES_PER_SUBTOPIC=5)
    assert store.get_run(run_id).status == "completed", store.get_run(run_id).error  # type: ignore[union-attr]
    rows = store.get_findings(run_id)
    per_subtopic: dict[str, int] = {}
    for row in rows:
        if row.kind == "finding":
            per_subtopic[row.subtopic_id] = per_subtopic.get(row.subtopic_id, 0) + 1
    # Each findings call is capped by the sources it was given (a group of the at most 5 a
    # subtopic keeps).
    sizes = [min(FINDINGS_GROUP, 5 - i) for i in range(0, 5, FINDINGS_GROUP)]
    limit = sum(margin(FINDINGS_PER_SOURCE * n) for n in sizes)
    assert per_subtopic and max(per_subtopic.values()) <= limit
    gaps = sum(1 for r in rows if r.kind == "gap")
    assert 0 < gaps <= len(per_subtopic) * margin(OPEN_QUESTIONS_CAPS["gaps"])
    assert any("beyond what the step asked for were dropped" in r.getMessage() for r in caplog.records)
    assert runs.db.stat().st_size < 5_000_000


def test_a_20_mb_report_fails_with_words_about_the_models_answer(
    runs: Runner, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(brain, "write_report", lambda user, **kw: "word " * 4_000_000)
    store, run_id = runs(QUESTION, preset="quick", SOURCES_PER_SUBTOPIC=5)
    run = store.get_run(run_id)
    assert run.status == "failed"
    error = run.error or ""
    assert "model" in error and "answer of 20.0 million characters" in error
    assert "sources" not in error.split("answer of")[0]
    assert store.get_sources(run_id)  # what was gathered is kept
