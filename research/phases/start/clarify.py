"""Clarify (SPEC step 1): 1-3 short questions before planning, when asked for or needed.

With REQUIRE_CLARIFICATION on, or when the lead judges the question vague, the run waits
(status "waiting") until the person answers; the answers become part of the brief.
The questions and answers are stored as the result of the "clarify" step.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from research.core.context import RunContext
from research.core.counts import note_short
from research.core.errors import ConfigError, NeedsInput
from research.core.prompts import clean_untrusted, system
from research.core.records import JsonObject
from research.llm.messages import Message
from storage import Store

LEAD_ROLE = "You are the lead of a research team. You make sure you research the right thing."

CLARIFY_PROMPT = """Before researching the question below, decide whether it is too vague to
research well (unclear purpose, scope or period). {rule}
Ask at most 3 short questions, e.g. about purpose (to decide, to learn, to write), scope
(region, sector, audience) and period. Do not ask what the question already says.

<question>{question}</question>"""


class ClarifyingQuestions(BaseModel):
    vague: bool
    questions: list[str] = Field(default_factory=list)


def run(ctx: RunContext) -> None:
    """Ask once; raise NeedsInput while answers are missing."""
    done = ctx.stored_result("clarify")
    if done is None:
        required = ctx.config.require_clarification
        rule = ("The person asked to be asked: always ask 1 to 3 questions." if required else
                "Only if it is vague, ask 1 to 3 questions; otherwise ask none.")
        messages = [
            system(LEAD_ROLE, ctx.today),
            Message("user", CLARIFY_PROMPT.format(rule=rule, question=clean_untrusted(ctx.question))),
        ]
        answer = ctx.lead.llm.structured(messages, ClarifyingQuestions, deadline=ctx.step_deadline())
        questions = [" ".join(q.split())[:300] for q in answer.questions if q.strip()][:3]
        if not (required or answer.vague):
            questions = []
        elif not questions:  # asked to ask, but none came: go on rather than wait for nothing
            note_short(ctx, "clarify", "clarifying questions", 0, 1,
                       "the research went on without asking", asked_again=False)
        done = {"questions": questions, "answers": None if questions else []}
        ctx.store.start_step(ctx.run_id, "clarify", kind="clarify", label="Clarifying the question")
        ctx.store.finish_step(ctx.run_id, "clarify", result=done)
    if done.get("answers") is None:
        raise NeedsInput("Waiting for your answers to the clarifying questions.")


def questions(store: Store, run_id: str) -> list[str]:
    step = store.get_step(run_id, "clarify")
    return list((step.result.get("questions") if step else None) or [])


def answer(store: Store, run_id: str, answers: list[str]) -> None:
    """Store the person's answers; the run continues when resumed."""
    asked = questions(store, run_id)
    if not asked:
        raise ConfigError("This run has no clarifying questions to answer.")
    cleaned = [" ".join(str(a).split())[:1000] for a in answers][: len(asked)]
    cleaned += [""] * (len(asked) - len(cleaned))
    store.finish_step(run_id, "clarify", result={"questions": asked, "answers": cleaned})


def pending(store: Store, run_id: str) -> JsonObject | None:
    """The unanswered questions of a waiting run, if that is what it waits for."""
    step = store.get_step(run_id, "clarify")
    result = step.result if step else {}
    if result.get("questions") and result.get("answers") is None:
        return {"questions": result["questions"]}
    return None
