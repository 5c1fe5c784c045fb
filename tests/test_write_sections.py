"""The draft written section by section at the same time, revised only where the review flagged
it (issue 11). Full runs through the in-process fakes (tests/fakes.py); the order of events is read
from the stand-in's request log (when each writer call arrived and was answered), never from timing
thresholds."""

from __future__ import annotations

import re
from typing import Any

import pytest

from research.phases.writing.sections_job import matching
from research.phases.writing.write_sections import FRAME, KEY_FINDINGS, assemble, split_frame
from storage import Store
from tests.runs import Runner
from tests.standin import StandinServer

PART = re.compile(r"<section>(.*?)</section>")


def _run(runs: Runner, **overrides: Any) -> tuple[Store, str]:
    return runs(subtopic_count=3, max_rounds=1, **overrides)


def _writer_calls(standin: StandinServer) -> list[dict[str, Any]]:
    """The writer's calls (no schema), each with its parts and whether it revises."""
    out = []
    for r in standin.requests_for("openai"):
        body = r["json"] or {}
        if body.get("response_format"):
            continue
        user = "\n".join(str(m.get("content")) for m in body.get("messages", []) if m.get("role") == "user")
        if "<section>" not in user:
            continue
        out.append({"sent": r["time"], "answered": r.get("answered", r["time"]),
                    "parts": PART.findall(user), "revision": "REVIEW FEEDBACK ON YOUR PART" in user})
    return out


def _most_in_flight(calls: list[dict[str, Any]]) -> int:
    edges = sorted([(c["sent"], 1) for c in calls] + [(c["answered"], -1) for c in calls],
                   key=lambda e: (e[0], e[1]))
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


def test_sections_are_written_at_the_same_time_then_framed(
    standin: StandinServer, runs: Runner
) -> None:
    standin.add_fault("openai", "hang", times=50, task="writer", seconds=0.3)  # each call takes a while
    store, run_id = _run(runs)
    assert store.get_run(run_id).status == "completed"  # type: ignore[union-attr]
    calls = _writer_calls(standin)
    first = [c for c in calls if not c["revision"]]
    frame = [c for c in first if "## Executive summary" in c["parts"]]
    sections = [c for c in first if c not in frame]
    plan = store.get_plan(run_id) or []
    # one call per subtopic, key findings, comparison, the closing sections in two; then one frame
    assert len(sections) == len(plan) + 4 and len(frame) == 1
    assert _most_in_flight(sections) >= 2  # they overlapped in time
    assert frame[0]["sent"] >= max(c["answered"] for c in sections)  # the frame comes last
    draft = next(d for d in store.get_drafts(run_id) if d.kind == "draft")
    text = draft.text
    headings = [line for line in text.splitlines() if line.startswith("#")]
    assert headings[0].startswith("# ") and headings[1] == "## Executive summary"
    assert headings[2] == "## Key findings" and "## Analysis by subtopic" in headings
    for sub in plan:
        assert f"### {sub.title}" in headings
    assert headings.index("## Analysis by subtopic") < headings.index("## Comparison")
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", text)}
    assert cited and cited <= set(draft.numbering)  # one global numbering


def test_revision_resends_only_the_flagged_sections(
    standin: StandinServer, runs: Runner
) -> None:
    store, run_id = _run(runs, review_cycles=2)
    review = store.get_reviews(run_id)[0]
    named = {i.section for i in review.issues}
    assert not review.approved and named  # the stand-in's first review flags sections
    revised = [c for c in _writer_calls(standin) if c["revision"]]
    sent = {h for c in revised for h in c["parts"]}
    assert {"## Key findings", "## Executive summary"} <= sent
    assert not any(h.startswith("### ") for h in sent)  # the subtopics were not flagged
    assert "## Comparison" not in sent
    steps = {s.key: s.result for s in store.get_steps(run_id)}
    assert set(steps["revise:1"]["revised"]) == {FRAME, KEY_FINDINGS}
    before, after = steps["write"]["sections"], steps["revise:1"]["sections"]
    for key in before:
        if key not in (FRAME, KEY_FINDINGS):
            assert after[key] == before[key]  # untouched sections stay word for word
    drafts = {d.kind: d for d in store.get_drafts(run_id)}
    assert drafts["revision"].text != drafts["draft"].text


def test_partial_drafts_are_stored_as_sections_finish(
    standin: StandinServer, runs: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved: list[tuple[int, str, int]] = []
    original = Store.save_draft

    def spy(self: Store, run_id: str, version: int, kind: str, text: str, numbering: Any,
            words: int) -> None:
        saved.append((version, kind, words))
        original(self, run_id, version, kind, text, numbering, words)

    monkeypatch.setattr(Store, "save_draft", spy)
    store, run_id = _run(runs, review_cycles=0)
    partial = [s for s in saved if s[1] == "partial"]
    plan = store.get_plan(run_id) or []
    assert len(partial) == len(plan) + 4  # one save as each section finishes
    assert all(v == 1 for v, _, _ in partial)
    words = [w for _, _, w in partial]
    assert words == sorted(words) and words[0] < words[-1]  # the draft grows
    assert saved.index(partial[-1]) < saved.index(next(s for s in saved if s[1] == "draft"))
    assert "partial" not in {d.kind for d in store.get_drafts(run_id)}  # replaced by the draft


def test_review_issues_route_to_the_sections_they_name() -> None:
    names = {"key_findings": ["key findings"], "sub:t1": ["heat pump costs"],
             "comparison": ["comparison"], FRAME: ["title", "executive summary"]}
    order = ["key_findings", "sub:t1", "comparison"]
    assert matching("Key findings", names, order) == ["key_findings"]
    assert matching("Executive Summary", names, order) == [FRAME]
    assert matching("### Heat pump costs", names, order) == ["sub:t1"]
    assert matching("Analysis by subtopic", names, order) == ["sub:t1"]
    assert matching("general", names, order) == []


def test_parts_assemble_in_outline_order() -> None:
    frame = "# Title\n\n## Executive summary\n\nThe answer [1].\n\n## Analysis by subtopic\n\nLead-in."
    head, lead = split_frame(frame)
    assert head.endswith("The answer [1].") and lead.startswith("## Analysis by subtopic")
    texts = {FRAME: frame, "key_findings": "## Key findings\n\n- A [1].", "sub:a": "### A\n\nX [2].",
             "comparison": "## Comparison\n\nY [1]."}
    report = assemble(texts, ["key_findings", "sub:a", "comparison"])
    order = [line for line in report.splitlines() if line.startswith("#")]
    assert order == ["# Title", "## Executive summary", "## Key findings", "## Analysis by subtopic",
                     "### A", "## Comparison"]
