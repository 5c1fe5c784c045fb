"""Research rounds (SPEC step 4): assess coverage, triage follow-up questions, go on or stop.

After each round the lead judges every subtopic (answered, open, conflicting) and triages
the workers' follow-up questions: filtered (irrelevant or redundant, with the reason),
answered inline by a quick lookup of 1-3 searches, or escalated to a new subtopic for the
next round. Research stops when no new, relevant, non-redundant question remains or
MAX_ROUNDS is reached; the reason is stored. The "breadth x depth" schedule is the same
loop with breadth (new subtopics) and searches halving at each level.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from pydantic import BaseModel, Field

from research.core.context import RunContext
from research.core.counts import note_short
from research.core.errors import BudgetStop, ResearchError, SchemaError
from research.core.events import RoundCompleted
from research.core.prompts import clean_untrusted, system
from research.core.records import JsonObject, ResearchResult, Subtopic
from research.llm.messages import Message
from research.phases.decide import goal, steer
from research.phases.gather import research

MAX_QUESTIONS = 12
LOOKUP_SOURCES = 5  # a quick lookup keeps at most this many sources
REDUNDANT_OVERLAP = 0.7

LEAD_ROLE = (
    "You are the lead of a research team. After each research round you decide what is "
    "still missing and which follow-up questions are worth the effort."
)

ASSESS_PROMPT = """Research round {round} of at most {max_rounds} has finished for the question:
<question>{question}</question>

SUBTOPICS AND WHAT WAS FOUND:
{coverage}

FOLLOW-UP QUESTIONS FROM THE WORKERS:
{questions}

1. For every subtopic, judge coverage: "answered" (the findings answer its questions),
   "open" (important questions unanswered) or "conflicting" (sources disagree).
2. For every follow-up question decide one action, with a short reason:
   - "filter": irrelevant to the question, or redundant with what is known or planned;
   - "answer": a quick lookup of 1-3 web searches would settle it (say how many);
   - "escalate": broad and important enough to become a new subtopic next round.
   {escalate_rule}"""


class SubtopicCoverage(BaseModel):
    subtopic_id: str
    status: Literal["answered", "open", "conflicting"]
    note: str = ""


class TriageDecision(BaseModel):
    question_id: str
    action: Literal["filter", "answer", "escalate"]
    reason: str = ""
    searches: int = Field(default=2, ge=1, le=3)


class RoundAssessment(BaseModel):
    coverage: list[SubtopicCoverage]
    decisions: list[TriageDecision]


Action = Literal["filter", "answer", "escalate"]


@dataclass(frozen=True, slots=True)
class FollowUp:
    """A worker's follow-up question of this round (Q1, Q2...) and, once triaged, what the
    lead decided. Stored in the triage step's result, which the dashboard shows."""

    id: str
    question: str
    subtopic_id: str
    action: Action | None = None  # None: not triaged yet
    reason: str = ""
    searches: int | None = None  # a quick lookup's searches (set when the lead triaged it)

    @classmethod
    def from_row(cls, row: JsonObject) -> FollowUp:
        """One of a stored triage result's decisions (the step's JSON column, as `row` wrote
        it)."""
        return cls(id=str(row["id"]), question=str(row["question"]),
                   subtopic_id=str(row["subtopic_id"]), action=row.get("action"),
                   reason=str(row.get("reason") or ""), searches=row.get("searches"))

    def row(self) -> dict[str, str | int | None]:
        """As the triage step's result stores it (JSON), which the dashboard reads."""
        out: dict[str, str | int | None] = {
            "id": self.id, "question": self.question, "subtopic_id": self.subtopic_id,
            "action": self.action, "reason": self.reason}
        if self.searches is not None:
            out["searches"] = self.searches
        return out


def run(ctx: RunContext, first: ResearchResult) -> ResearchResult:
    """Further rounds after the first (which gathered `first`); returns what the run has
    gathered in the end, with the subtopics that did not finish.

    A round's quick lookups and the next round's new subtopics run side by side: they
    depend only on the triage, not on each other.
    """
    round_no = 1
    researched = False
    while not ctx.budget_reason():
        try:
            if _goal_met(ctx, round_no):
                break
            key = f"triage:{round_no}"
            before = ctx.stored_result(key)
            outcome = ctx.run_step(
                key, "triage", f"Assessing round {round_no}",
                lambda r=round_no, b=before: _assess(ctx, r, b),  # type: ignore[misc]
                still_good=lambda done, r=round_no: not _untriaged(ctx, r, done),  # type: ignore[misc]
            )
        except BudgetStop:
            break  # the cap refused the lead's call: what was gathered is written up
        decided = [FollowUp.from_row(d) for d in outcome["decisions"]]
        units = [
            (f"followup:{round_no}:{i}", f"Quick lookup: {d.question[:100]}", _lookup_unit(d, round_no))
            for i, d in enumerate(decided, start=1) if d.action == "answer"
        ]
        stop = outcome.get("stop_reason")
        if ctx.config.steer and (not stop or round_no < ctx.config.rounds_limit()):
            # Asked also when the lead proposes nothing more: the person may add a branch.
            if steer.wait(ctx, round_no):
                stop = "enough"  # the person said: write the report
            elif stop and steer.next_round(ctx.store, ctx.run_id, round_no):
                stop = None  # the person's own branches: research goes on
                ctx.store.update_totals(ctx.run_id, stop_reason="")
        if not stop:
            units += research.units(steer.next_round(ctx.store, ctx.run_id, round_no))
        researched = researched or bool(units)
        research.run_units(ctx, units)
        if stop or ctx.budget_reason():
            break
        round_no += 1
    reason = ctx.budget_reason()
    if reason:
        ctx.store.update_totals(ctx.run_id, stop_reason=f"Research stopped because {reason}.")
    return research.gathered(ctx) if researched else first


def _goal_met(ctx: RunContext, round_no: int) -> bool:
    """True when the person's exit case ("Done when ...") is met after this round: research
    stops here and the reason is recorded. A judgement that fails leaves the rounds to go on
    as they would without a goal (the step shows the failure)."""
    try:
        result = goal.check(ctx, round_no)
    except ResearchError:
        return False
    if not result or not result["met"]:
        return False
    reason = goal.stop_reason(result)
    ctx.store.update_totals(ctx.run_id, rounds=round_no, stop_reason=reason)
    ctx.emit(RoundCompleted(ctx.run_id, f"Round {round_no}: research stops. {reason}",
                            step=f"goal:{round_no}", round=round_no, stop_reason=reason))
    return True


def _untriaged(ctx: RunContext, round_no: int, done: JsonObject) -> bool:
    """True when this round has follow-up questions its stored triage never saw: the triage
    ran while some of the round's research had failed, and a resume has since re-run it."""
    plan = tuple(ctx.store.get_plan(ctx.run_id) or ())
    seen = _seen(done)
    return any(q.question not in seen for q in _new_questions(ctx, plan, round_no))


def _seen(done: JsonObject) -> set[str]:
    """The questions a stored triage looked at (older results list only their decisions)."""
    return set(done.get("seen") or [d["question"] for d in done.get("decisions", [])])


def _assess(ctx: RunContext, round_no: int, before: JsonObject | None = None) -> JsonObject:
    """Judge coverage and triage this round's follow-ups. With `before` (a stored triage that
    missed questions found since), its decisions stand, in their order (the lookups and new
    subtopics they started keep their keys), and the lead is asked about the new questions only.
    """
    cfg = ctx.config
    plan = tuple(ctx.store.get_plan(ctx.run_id) or ())
    questions = _new_questions(ctx, plan, round_no)
    seen = [q.question for q in questions]
    if cfg.rounds_limit() <= 1:
        return _stop(ctx, round_no, [], [], f"{_limit_name(cfg.schedule)} is 1: a single research "
                                            "round was asked for.", seen=seen)
    kept = [FollowUp.from_row(d) for d in (before or {}).get("decisions", [])]
    if before:
        questions = [q for q in questions if q.question not in _seen(before)]
    filtered = [q for q in questions if q.action == "filter"]
    open_qs = [q for q in questions if q.action is None][:MAX_QUESTIONS]
    last_round = round_no >= cfg.rounds_limit()
    limit = _breadth(cfg.subtopic_count, round_no, cfg.schedule, cfg.breadth)
    decisions: list[FollowUp] = []
    coverage: list[SubtopicCoverage] = []
    if open_qs:
        escalate_rule = (
            "No new subtopics are possible: this was the last round. Use only filter or answer."
            if last_round else f"Escalate at most {limit} questions."
        )
        messages = [
            system(LEAD_ROLE, ctx.today),
            Message("user", ASSESS_PROMPT.format(
                round=round_no, max_rounds=cfg.rounds_limit(), question=clean_untrusted(ctx.brief),
                coverage=_coverage_text(ctx, plan),
                questions="\n".join(f"{q.id}: {q.question}" for q in open_qs),
                escalate_rule=escalate_rule,
            )),
        ]
        answer = ctx.lead.llm.structured(messages, RoundAssessment, deadline=ctx.step_deadline())
        known = {s.id for s in plan}
        coverage = [c for c in answer.coverage if c.subtopic_id in known]
        by_id = _decisions(ctx, messages, answer, open_qs, round_no)
        escalated = sum(d.action == "escalate" for d in kept)
        for q in open_qs:
            d = by_id.get(q.id)
            action: Action
            action, reason = (d.action, d.reason) if d else ("filter", "no decision from the lead researcher")
            if action == "escalate" and (last_round or escalated >= limit):
                action, reason = "answer", (reason + "; answered by a quick lookup instead: "
                                            + ("last round" if last_round else "round is full"))
            escalated += action == "escalate"
            decisions.append(replace(q, action=action, reason=reason,
                                     searches=d.searches if d else 1))
    if before and not open_qs:
        coverage = [SubtopicCoverage.model_validate(c) for c in before.get("coverage", [])]
    decisions = kept + filtered + decisions
    new = _escalate(ctx, plan, decisions, round_no)
    stop = None
    if not new:
        stop = (f"{_limit_name(cfg.schedule)} reached." if last_round
                else "No new, relevant, non-redundant question remains.")
    return _stop(ctx, round_no, coverage, decisions, stop, added=len(new),
                 seen=[*(_seen(before) if before else ()), *seen])


def _stop(
    ctx: RunContext, round_no: int, coverage: Sequence[SubtopicCoverage],
    decisions: list[FollowUp], stop_reason: str | None, *, added: int = 0,
    seen: Sequence[str] = (),
) -> JsonObject:
    counts = {a: sum(1 for d in decisions if d.action == a) for a in ("filter", "answer", "escalate")}
    message = (f"Round {round_no}: {counts['filter']} follow-ups filtered, {counts['answer']} "
               f"answered by quick lookups, {counts['escalate']} escalated")
    message += f". Research stops: {stop_reason}" if stop_reason else f"; round {round_no + 1} starts."
    ctx.emit(RoundCompleted(ctx.run_id, message, step=f"triage:{round_no}", round=round_no,
                            filter=counts["filter"], answer=counts["answer"],
                            escalate=counts["escalate"], stop_reason=stop_reason))
    if stop_reason:
        ctx.store.update_totals(ctx.run_id, rounds=round_no, stop_reason=stop_reason)
    return {"round": round_no, "coverage": [c.model_dump() for c in coverage], "decisions": [d.row() for d in decisions],
            "stop_reason": stop_reason, "new_subtopics": added, "seen": list(dict.fromkeys(seen))}


def _breadth(subtopics: int, round_no: int, schedule: str, breadth: int) -> int:
    """How many subtopics the next round may add: BREADTH halving at each level under the
    breadth x depth schedule, half the plan's subtopics otherwise."""
    if schedule == "breadth_depth":
        return max(1, math.ceil(breadth / 2.0 ** (round_no - 1)))
    return max(1, subtopics // 2)


def _limit_name(schedule: str) -> str:
    """The setting that caps the rounds, named in the stop reason."""
    return "DEPTH" if schedule == "breadth_depth" else "MAX_ROUNDS"


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2}


def _overlap(a: str, b: str) -> float:
    wa, wb = _words(a), _words(b)
    return len(wa & wb) / len(wa | wb) if wa and wb else 0.0


def _new_questions(ctx: RunContext, plan: Sequence[Subtopic], round_no: int) -> list[FollowUp]:
    """This round's follow-up questions, with exact and near duplicates filtered up front."""
    this_round = {s.id for s in plan if s.round == round_no}
    earlier: list[str] = [q for s in plan for q in [s.title, *s.questions]]
    for r in range(1, round_no):
        earlier += [d["question"] for d in (ctx.stored_result(f"triage:{r}") or {}).get("decisions", [])]
    out: list[FollowUp] = []
    for finding in ctx.store.get_findings(ctx.run_id):
        if finding.kind != "follow_up" or finding.subtopic_id not in this_round:
            continue
        if (finding.step_key or "").startswith("followup:"):
            continue  # a quick lookup's own follow-ups: lookups end a branch, never triaged
        text = " ".join(clean_untrusted(finding.claim).split())[:300]
        entry = FollowUp(f"Q{len(out) + 1}", text, str(finding.subtopic_id))
        twin = max(earlier, key=lambda e: _overlap(text, e), default="")
        if twin and _overlap(text, twin) >= REDUNDANT_OVERLAP:
            entry = replace(entry, action="filter", reason=f"redundant with: {twin[:120]}")
        earlier.append(text)
        out.append(entry)
    return out


def _decisions(
    ctx: RunContext, messages: list[Message], answer: RoundAssessment,
    open_qs: list[FollowUp], round_no: int,
) -> dict[str, TriageDecision]:
    """The lead's decision per question id. Questions it skipped are asked about once more
    (those only); still undecided ones are set aside as "not triaged" and the run log and
    report say so. Decisions about ids that were not asked are ignored."""
    asked = {q.id for q in open_qs}
    by_id = {d.question_id: d for d in answer.decisions if d.question_id in asked}
    missing = [q for q in open_qs if q.id not in by_id]
    if not missing:
        return by_id
    repair = [*messages, Message("assistant", answer.model_dump_json()), Message(
        "user", "You gave no decision for these follow-up questions: "
                + "; ".join(f"{q.id}: {q.question}" for q in missing)
                + ". Reply with the same format, with a decision for each of them.")]
    try:
        more = ctx.lead.llm.structured(repair, RoundAssessment, deadline=ctx.step_deadline())
    except SchemaError:
        more = RoundAssessment(coverage=[], decisions=[])
    by_id.update({d.question_id: d for d in more.decisions
                  if d.question_id in asked and d.question_id not in by_id})
    if len(by_id) < len(asked):
        note_short(ctx, f"triage:{round_no}", "decisions on follow-up questions", len(by_id),
                   len(asked), f"{len(asked) - len(by_id)} follow-up questions were set aside "
                   "undecided")
    return by_id


def _coverage_text(ctx: RunContext, plan: Sequence[Subtopic]) -> str:
    found = ctx.store.get_findings(ctx.run_id)
    parts = []
    for sub in plan:
        mine = [f for f in found if f.subtopic_id == sub.id]
        facts = [f.claim for f in mine if f.kind == "finding"][:6]
        gaps = [f.claim for f in mine if f.kind == "gap"][:3]
        lines = [f'<subtopic_summary id="{sub.id}" title="{sub.title}">']
        lines += [f"- finding: {clean_untrusted(t)[:300]}" for t in facts] or ["- no findings"]
        lines += [f"- gap: {clean_untrusted(t)[:200]}" for t in gaps]
        lines.append("</subtopic_summary>")
        parts.append("\n".join(lines))
    return "\n".join(parts)


def _escalate(
    ctx: RunContext, plan: Sequence[Subtopic], decisions: list[FollowUp], round_no: int
) -> list[Subtopic]:
    chosen = [d for d in decisions if d.action == "escalate"]
    if not chosen:
        return []
    searches = ctx.config.searches_per_subtopic
    if ctx.config.schedule == "breadth_depth":
        searches = max(1, math.ceil(searches / 2 ** round_no))
    new = [Subtopic(
        id=f"r{round_no + 1}t{i}", title=d.question[:150],
        description=d.reason[:300], questions=(d.question,),
        round=round_no + 1, parent=d.subtopic_id, searches=searches,
    ) for i, d in enumerate(chosen, start=1)]
    known = {s.id for s in plan}  # a redone triage's earlier escalations are planned already
    if any(s.id not in known for s in new):
        ctx.store.save_plan(ctx.run_id, [*plan, *(s for s in new if s.id not in known)],
                            kind="round")
    return new


def _lookup_unit(decision: FollowUp, round_no: int) -> Subtopic:
    """A quick lookup, researched like a small subtopic; what it finds attaches to the
    subtopic the question came from."""
    return Subtopic(id=decision.subtopic_id, title=decision.question[:150],
                    description="A quick lookup to answer a follow-up question.",
                    questions=(decision.question,), searches=decision.searches or 1,
                    max_sources=LOOKUP_SOURCES, round=round_no, lookup=True)
