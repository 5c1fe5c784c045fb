"""A worker's findings: its kept sources in small groups, all asked at once, and one call for
the gaps and follow-up questions beside them (research/phases/gather/findings.py, issue 11)."""

from __future__ import annotations

import re
from typing import Any

from research.phases.gather.findings import FINDINGS_GROUP, OPEN_QUESTIONS_CHARS
from tests.runs import Runner
from tests.standin import StandinServer
from tests.standin.server import _task_of

_BLOCK = re.compile(r'<untrusted_source id="([^"]+)"[^>]*>\n(.*?)\n</untrusted_source', re.S)


def _prompt(request: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in request["json"].get("messages") or [])


def test_every_kept_source_is_read_for_findings_in_small_groups_beside_one_gaps_call(
    standin: StandinServer, runs: Runner,
) -> None:
    store, run_id = runs(preset="quick", SOURCES_PER_SUBTOPIC=5, max_rounds=1)
    assert store.get_run(run_id).status == "completed"  # type: ignore[union-attr]
    calls: dict[str | None, list[str]] = {}
    for r in standin.requests_for("openai"):
        calls.setdefault(_task_of("openai", r["json"]), []).append(_prompt(r))
    kept = {s.id: s for s in store.get_sources(run_id)}
    findings = store.get_findings(run_id)
    for sub in [s for s in store.get_plan(run_id) or [] if not s.inherited]:
        mine = {sid for sid, s in kept.items() if s.subtopic_id == sub.id}
        tag = f"<subtopic>{sub.title}</subtopic>"
        groups = [_BLOCK.findall(p) for p in calls["SubtopicFindings"] if tag in p]
        # Every kept source in exactly one findings call, a few per call.
        assert sorted(sid for g in groups for sid, _ in g) == sorted(mine)
        assert all(1 <= len(g) <= FINDINGS_GROUP for g in groups)
        # One gaps call, reading a passage of every kept source: a line each, in one block.
        gaps = [_BLOCK.findall(p) for p in calls["OpenQuestions"] if tag in p]
        assert len(gaps) == 1 and len(gaps[0]) == 1
        lines = gaps[0][0][1].splitlines()
        assert len(lines) == len(mine)
        for sid in mine:
            title = " ".join((kept[sid].title or "").split())
            line = next(x for x in lines if x.startswith(f"- {title}: "))
            assert len(line) <= len(f"- {title}: ") + OPEN_QUESTIONS_CHARS
        # The findings of every group are kept, with the gaps and follow-ups after them.
        rows = [f for f in findings if f.subtopic_id == sub.id]
        cited = {sid for f in rows if f.kind == "finding" for sid in f.source_ids}
        assert cited == mine  # the stand-in writes one finding per source it is given
        kinds = [f.kind for f in rows]
        assert kinds.count("gap") == 1 and kinds.count("follow_up") == 1
        assert kinds.index("gap") > max(i for i, k in enumerate(kinds) if k == "finding")
