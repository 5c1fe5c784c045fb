"""Plan: the lead splits the question into SUBTOPIC_COUNT non-overlapping subtopics."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from research.context import RunContext
from research.errors import SchemaError
from research.events import PlanCreated
from research.llm.base import Message
from research.prompts import clean_untrusted, system

LEAD_ROLE = (
    "You are the lead of a research team. You plan research so that a team of workers "
    "can search the web for each part independently."
)

PLAN_PROMPT = """Split the research question below into exactly {count} subtopics.

Rules:
- The subtopics must not overlap, and together they must cover the question.
- Each subtopic has a short title, a one-sentence description and 2 to 4 concrete
  research questions that web searches can answer.
- When the question is about recent events, prices, laws or technology, focus on the
  latest information as of today.

<question>{question}</question>"""


class Subtopic(BaseModel):
    title: str = Field(description="Short title of the subtopic")
    description: str = Field(description="One sentence on what this subtopic covers")
    questions: list[str] = Field(description="2 to 4 research questions")


class ResearchPlan(BaseModel):
    subtopics: list[Subtopic]


def run(ctx: RunContext) -> list[dict[str, Any]]:
    """Return the plan (stored), reusing a stored one when resuming."""
    stored = ctx.store.get_plan(ctx.run_id)
    if stored and ctx.stored_result("plan") is not None:
        return stored

    def make() -> dict[str, Any]:
        count = ctx.config.subtopic_count
        messages = [
            system(LEAD_ROLE, ctx.today),
            Message("user", PLAN_PROMPT.format(count=count, question=clean_untrusted(ctx.question))),
        ]
        plan = ctx.lead.llm.structured(messages, ResearchPlan, deadline=ctx.step_deadline())
        subtopics = _normalise(plan, count)
        if len(subtopics) < count:
            messages += [
                Message("assistant", plan.model_dump_json()),
                Message("user", f"That plan has {len(subtopics)} distinct subtopics; "
                                f"exactly {count} subtopics are needed. Reply with the full plan."),
            ]
            plan = ctx.lead.llm.structured(messages, ResearchPlan, deadline=ctx.step_deadline())
            subtopics = _normalise(plan, count)
        if len(subtopics) < count:
            raise SchemaError(
                f"The lead planned only {len(subtopics)} distinct subtopics where {count} "
                "were asked for."
            )
        ctx.store.save_plan(ctx.run_id, subtopics)
        ctx.emit(PlanCreated(
            ctx.run_id, f"Plan: {len(subtopics)} subtopics", step="plan",
            data={"subtopics": [s["title"] for s in subtopics]},
        ))
        return {"subtopics": len(subtopics)}

    ctx.run_step("plan", "plan", "Planning the research", make)
    return ctx.store.get_plan(ctx.run_id) or []


def _normalise(plan: ResearchPlan, count: int) -> list[dict[str, Any]]:
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    for sub in plan.subtopics:
        title = " ".join(sub.title.split())[:200]
        questions = [" ".join(q.split())[:500] for q in sub.questions if q.strip()][:4]
        if not title or title.lower() in seen:
            continue
        seen.add(title.lower())
        out.append({
            "id": f"t{len(out) + 1}",
            "title": title,
            "description": " ".join(sub.description.split())[:500],
            "questions": questions or [title],
            "round": 1,
        })
    return out[:count]
