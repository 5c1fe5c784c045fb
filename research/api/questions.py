"""Ask the report over HTTP (issue 35, point 5): a finished run's questions and answers.

    GET  /v1/runs/{id}/questions                  the run's questions and checked answers
    POST /v1/runs/{id}/questions                  ask one (answered in seconds, then kept)
    POST /v1/runs/{id}/questions/{n}/research     a follow-up run built on this one, the
                                                  question as its brief

As every route: another person's run is "not found". An answer is written only from the run's
own sources, cites them with the report's numbers and is checked (research.ask).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from research.api.auth import Caller, caller
from research.api.context import ApiContext, api_context
from research.api.errors import ApiError
from research.api.models import Links, Started
from research.api.runs import ERRORS, own_run
from research.ask import Answer, AskError, ask, conversation, research_it
from research.core.errors import ConfigError
from research.phases.start.preflight import check_configuration

router = APIRouter(prefix="/v1", responses=ERRORS)
Who = Annotated[Caller, Depends(caller)]
Ctx = Annotated[ApiContext, Depends(api_context)]


class Question(BaseModel):
    question: str = Field(min_length=1, max_length=1000,
                          description="Your follow-up question about the run's report.")


class CitedSource(BaseModel):
    number: int = Field(description="The source's number in the report (and in the answer).")
    title: str
    url: str


class AnswerOut(BaseModel):
    id: int
    question: str
    answer: str = Field(description="Markdown; citations [n] use the report's own numbers.")
    answered: bool = Field(description="False: the run's sources don't say (what they say "
                                       "nearby follows); POST .../research researches it.")
    checks: str = Field(description="How many of the answer's claims were checked, and how.")
    sources: list[CitedSource]


class AnswerList(BaseModel):
    questions: list[AnswerOut]


def _out(answer: Answer) -> AnswerOut:
    return AnswerOut(id=answer.turn_id, question=answer.question, answer=answer.text,
                     answered=answer.answered, checks=answer.check_line,
                     sources=[CitedSource(number=s.number, title=s.title, url=s.url)
                              for s in answer.sources])


@router.get("/runs/{run_id}/questions", response_model=AnswerList,
            summary="A finished run's questions and answers")
def questions(run_id: str, who: Who, ctx: Ctx) -> AnswerList:
    own_run(ctx, who, run_id)
    return AnswerList(questions=[_out(a) for a in conversation(ctx.store, run_id,
                                                               person=who.person)])


@router.post("/runs/{run_id}/questions", status_code=201, response_model=AnswerOut,
             summary="Ask a finished run's report a question")
def ask_question(run_id: str, body: Question, who: Who, ctx: Ctx) -> AnswerOut:
    """Answered only from the run's own sources, cited with the report's numbers, checked
    like the report and kept with the run; a few model calls, counted in the run's cost."""
    run = own_run(ctx, who, run_id)
    if run.status != "completed" or ctx.store.get_report(run_id) is None:
        raise ApiError(409, "no_report", "This run has no finished report to ask about yet.")
    try:
        answer = ask(ctx.store, run_id, body.question, credentials=ctx.credentials(),
                     person=who.person, prices=ctx.prices())
    except ConfigError as exc:
        raise ApiError(422, "invalid", str(exc)) from None
    except AskError as exc:
        raise ApiError(409, "not_answered", str(exc)) from None
    return _out(answer)


@router.post("/runs/{run_id}/questions/{question_id}/research", status_code=201,
             response_model=Started, summary="Research a question the sources could not answer")
def research_question(run_id: str, question_id: int, who: Who, ctx: Ctx) -> Started:
    run = own_run(ctx, who, run_id)
    credentials = ctx.credentials()
    try:
        if ctx.door.executes_here:  # external workers check their own keys
            from research.core.config import ResearchConfig

            check_configuration(ResearchConfig(**run.config), credentials)
        child = research_it(ctx.door, ctx.store, run_id, question_id, credentials=credentials,
                            person=who.person, prices=ctx.prices())
    except ConfigError as exc:
        raise ApiError(422, "invalid", str(exc)) from None
    except AskError as exc:
        raise ApiError(404, "not_found", str(exc)) from None
    base = f"/v1/runs/{child}"
    return Started(run_id=child, status="queued", links=Links(
        status=base, events=f"{base}/events", report=f"{base}/report?format=md"))
