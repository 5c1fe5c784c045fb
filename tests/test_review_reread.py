"""The second review reads what the revision changed (issue 31: fewer tokens for the same
checks): the revised sections whole, the sections left as they were by their headings and first
lines, and the issues of the review before it. The stand-in's first review flags the key
findings and the summary; its second approves."""

from __future__ import annotations

from typing import Any

from research.phases.writing.review import UNCHANGED_MARK, unchanged
from research.phases.writing.write_sections import FRAME, KEY_FINDINGS
from tests.runs import Runner
from tests.standin import StandinServer
from tests.standin.server import _task_of


def _review_prompts(standin: StandinServer) -> list[str]:
    out = []
    for r in standin.requests_for("openai"):
        body: dict[str, Any] = r["json"] or {}
        if _task_of("openai", body) == "ReviewResult":
            out.append(next(m["content"] for m in body["messages"] if m["role"] == "user"))
    return out


def test_the_second_review_reads_the_revised_sections_whole_and_the_rest_by_their_openings(
    standin: StandinServer, runs: Runner,
) -> None:
    store, run_id = runs("How is heat pump adoption changing in Europe?", subtopic_count=3,
                         max_rounds=1, review_cycles=2, source_max_age_days=3650)
    assert store.get_run(run_id).status == "completed"  # type: ignore[union-attr]
    first, second = _review_prompts(standin)
    revised = store.get_step(run_id, "revise:1").result
    assert set(revised["revised"]) >= {KEY_FINDINGS, FRAME}
    sections = revised["sections"]
    # The first review read the whole draft; nothing in it is marked unchanged.
    assert UNCHANGED_MARK not in first
    draft = second.split("REPORT:\n", 1)[1]
    # The revised parts whole; every other part by its headings and first lines only.
    for key, text in sections.items():
        if key in revised["revised"]:
            if key != FRAME:  # (the frame's lead-in sits apart from its head in the report)
                assert text.strip() in draft
        else:
            assert text.strip() not in draft
            assert unchanged(text) in draft
            assert all(line in draft for line in text.splitlines() if line.startswith("#"))
    # The last review's issues come with it, so the reviewer can tell whether they are fixed.
    issues = store.get_reviews(run_id)[0].issues
    assert issues and all(i.issue in second for i in issues)
    revision = next(d for d in store.get_drafts(run_id) if d.kind == "revision")
    assert len(draft) < len(revision.text)


def test_an_unchanged_part_keeps_each_heading_and_the_line_under_it() -> None:
    text = ("## Comparison\n\nHeat pumps lead [1]. More detail follows [2].\n\n| a | b |\n"
            "### Costs\nCosts fell [3].\nAnd rose again [4].")
    assert unchanged(text).splitlines() == [
        "## Comparison",
        f"Heat pumps lead [1]. More detail follows [2]. \u2026 {UNCHANGED_MARK}",
        "### Costs",
        f"Costs fell [3]. \u2026 {UNCHANGED_MARK}",
    ]
