"""The research map: the question at the root, its subtopics, and the branches that grew from
them (escalated subtopics, quick lookups, follow-up questions still open or dropped), each with
its state, its sources and how well the lead judged it covered.

Built only from what the run stored (plan, steps, triage results, findings, sources), so the
same map is drawn live, for a finished run and for a build-on run (the earlier run's research
is one branch). `branches` is the data; `figure` draws it as a plotly sunburst.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from dashboard.views import label_text
from research.core.records import Finding, Source, Step, Subtopic

ROOT = "question"
INHERITED = "p0"  # research.phases.start.inherit.SUBTOPIC_ID (not imported: keeps the page light)
STATE_COLOURS = {"explored": "#2e7d32", "running": "#1565c0", "open": "#f9a825",
                 "left": "#cfd8dc",
                 "dropped": "#9e9e9e", "root": "#ffffff"}
_STEP_STATE = {"done": "explored", "running": "running", "failed": "dropped",
               "skipped": "dropped", "cancelled": "dropped"}


@dataclass(frozen=True)
class Branch:
    id: str
    parent: str             # "" for the root
    label: str              # untrusted text (a question, a title): made inert when drawn
    kind: str               # question, subtopic, escalation, quick lookup, follow-up, earlier run
    state: str              # explored, running, open, dropped (or "root")
    reason: str = ""        # why dropped, or the lead's coverage note
    sources: int = 0
    coverage: str = ""      # answered / open / conflicting, as the lead judged it
    subtopic_id: str = ""   # whose findings and sources the branch shows


def _step_state(step: Step | None) -> tuple[str, str]:
    if step is None:
        return "open", ""
    state = _STEP_STATE.get(step.status, "running")
    return state, (step.error or "") if state == "dropped" else ""


def _coverage(steps: Sequence[Step]) -> dict[str, Mapping[str, Any]]:
    """The latest coverage judgement per subtopic, from the triage steps in order."""
    out: dict[str, Mapping[str, Any]] = {}
    for step in steps:
        if step.kind == "triage":
            out.update({c["subtopic_id"]: c for c in step.result.get("coverage") or []
                        if isinstance(c, dict) and "subtopic_id" in c})
    return out


def _subtopics(plan: Sequence[Subtopic], steps: Mapping[str, Step],
               counts: Counter[str], coverage: Mapping[str, Mapping[str, Any]]) -> list[Branch]:
    known = {s.id for s in plan}
    out = []
    for sub in plan:
        sid = sub.id
        parent = sub.parent or ""
        state, reason = _step_state(steps.get(f"research:{sid}"))
        judged = coverage.get(sid) or {}
        out.append(Branch(
            id=sid, parent=parent if parent in known else ROOT, label=sub.title or sid,
            kind="escalation" if parent else "subtopic", state=state,
            reason=reason or str(judged.get("note") or ""), sources=counts[sid],
            coverage=str(judged.get("status") or ""), subtopic_id=sid))
    return out


def _decisions(steps: Sequence[Step], by_key: Mapping[str, Step],
               known: set[str]) -> tuple[list[Branch], set[tuple[str, str]]]:
    """Follow-up questions the lead triaged: dropped ones and quick lookups (escalated ones are
    subtopics of their own). Also returns the (subtopic, question) pairs triaged."""
    out, triaged = [], set()
    for step in steps:
        result = step.result
        if step.kind != "triage":
            continue
        round_no = result.get("round")
        for i, d in enumerate(result.get("decisions") or [], start=1):
            parent = str(d.get("subtopic_id") or "")
            triaged.add((parent, str(d.get("question") or "")))
            parent = parent if parent in known else ROOT
            node_id = f"{step.key}:{i}"
            if d.get("action") == "filter":
                out.append(Branch(node_id, parent, str(d.get("question") or ""), "follow-up",
                                  "dropped", str(d.get("reason") or ""), subtopic_id=parent))
            elif d.get("action") == "answer":
                state, error = _step_state(by_key.get(f"followup:{round_no}:{i}"))
                out.append(Branch(node_id, parent, str(d.get("question") or ""), "quick lookup",
                                  state, error or str(d.get("reason") or ""), subtopic_id=parent))
    return out, triaged


def _not_chosen(steps: Sequence[Step], known: set[str]) -> list[Branch]:
    """Proposals the person did not follow when asked between rounds (research.phases.decide.steer),
    or all of them when they said enough: dropped, with that reason."""
    out = []
    for step in steps:
        result = step.result
        if step.kind != "steer":
            continue
        answer = result.get("answer")
        if not isinstance(answer, dict):
            continue
        reason = ("you asked for the report instead" if answer.get("enough")
                  else "you chose not to follow it")
        followed = set() if answer.get("enough") else set(answer.get("follow") or [])
        for p in result.get("proposals") or []:
            if p.get("n") in followed or str(p.get("id")) in known:
                continue
            parent = str(p.get("parent") or "")
            out.append(Branch(f"{step.key}:{p.get('n')}", parent if parent in known else ROOT,
                              str(p.get("title") or ""), "proposal", "dropped", reason))
    return out


def branches(question: str, plan: Sequence[Subtopic],
             steps: Sequence[Step], sources: Sequence[Source],
             findings: Sequence[Finding], *, finished: bool = False) -> list[Branch]:
    """Every branch of the map, the root first; parents always come before their children.
    In a `finished` run, a follow-up question nobody took up is not "open": it was left for
    later (the research ended before it, or a single round was asked for)."""
    by_key = {s.key: s for s in steps}
    counts = Counter(s.subtopic_id or "" for s in sources)
    root_state = "root"
    out = [Branch(ROOT, "", question, "question", root_state, sources=len(sources))]
    if counts[INHERITED]:
        out.append(Branch(INHERITED, ROOT, "Earlier research (build-on)", "earlier run",
                          "explored", sources=counts[INHERITED], subtopic_id=INHERITED))
    subs = _subtopics([s for s in plan if s.id != INHERITED], by_key, counts,
                      _coverage(steps))
    out += sorted(subs, key=lambda b: b.parent != ROOT)  # round-1 subtopics before escalations
    known = {b.id for b in out}
    decided, triaged = _decisions(steps, by_key, known)
    out += decided + _not_chosen(steps, known)
    seen = set(triaged)
    for f in findings:
        pair = (f.subtopic_id or "", f.claim)
        if f.kind != "follow_up" or pair in seen or pair[0] not in known:
            continue
        seen.add(pair)
        if finished:
            out.append(Branch(f"open:{len(out)}", pair[0], pair[1], "follow-up", "left",
                              "the research ended before this question was taken up",
                              subtopic_id=pair[0]))
        else:
            out.append(Branch(f"open:{len(out)}", pair[0], pair[1], "follow-up", "open",
                              "the planner has not looked at it yet", subtopic_id=pair[0]))
    return out


def _hover(branch: Branch) -> str:
    state = "left for later" if branch.state == "left" else branch.state
    parts = [f"{branch.kind.capitalize()}: {state}", f"{branch.sources} sources"]
    if branch.coverage:
        parts.append(f"coverage: {branch.coverage}")
    if branch.reason:
        parts.append(label_text(branch.reason, 160))
    return "<br>".join(parts)


def figure(tree: Sequence[Branch]) -> go.Figure:
    """A sunburst: the question in the middle, branches outward, coloured by state."""
    fig = go.Figure(go.Sunburst(
        ids=[b.id for b in tree], parents=[b.parent for b in tree],
        labels=[label_text(b.label, 28) for b in tree],
        insidetextorientation="horizontal",
        values=[max(1, b.sources) if b.parent else 0 for b in tree], branchvalues="remainder",
        marker={"colors": [STATE_COLOURS.get(b.state, "#9e9e9e") for b in tree]},
        hovertext=[_hover(b) for b in tree], hoverinfo="label+text", maxdepth=3,
    ))
    # Labels too small to read are hidden (the wedge still shows on hover and on click)
    # rather than shrunk into an unreadable smear.
    fig.update_layout(margin={"t": 10, "l": 10, "r": 10, "b": 10}, height=520,
                      uniformtext={"minsize": 11, "mode": "hide"})
    return fig


def legend() -> str:
    """Plain words for the colours (the chart's own legend does not show them)."""
    names = {"explored": "green", "running": "blue", "open": "amber", "dropped": "grey",
             "left for later": "light grey"}
    return " · ".join(f"{colour}: {state}" for state, colour in names.items())
