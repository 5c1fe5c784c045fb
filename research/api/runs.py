"""The routes of a run's life and results: start, list, status, control, answers, report,
sources and evidence. Every read passes the caller's person: another's run is "not found"."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi.responses import Response

from research import answer_clarification, answer_steering, approve_plan
from research.api.auth import Caller, caller
from research.api.callbacks import check_callback_url
from research.api.context import ApiContext, api_context
from research.api.errors import ApiError, not_found
from research.api.models import (
    ClarificationAnswers,
    ErrorBody,
    EvidenceList,
    EvidenceOut,
    FormatName,
    Links,
    Me,
    PlanApproval,
    RunList,
    RunStatus,
    SourceList,
    SourceOut,
    Started,
    StartRun,
    SteeringChoice,
)
from research.api.status import run_status, summary
from research.cli import follow_up_question, run_config
from research.core.errors import ConfigError
from research.core.records import Run, Subtopic
from research.documents.choice import with_sources
from research.export.evidence import evidence_rows
from research.export.formats import FORMATS, ExportFailed, export_run, file_stem
from research.export.run_document import build_document_for_run
from research.phases.start.preflight import check_configuration
from research.pipeline import validate_question
from research.search.documents import check_scope
from research.untrusted.urls import domain_of
from storage import RUN_STATUSES
from storage import tokens as tokenstore

ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": words} for status, words in (
        (401, "No token, or an unknown or revoked one."),
        (404, "No such run of yours."),
        (409, "The run is not in a state that allows this."),
        (413, "The request body is larger than the server accepts."),
        (422, "Bad input: the message names the setting and its bounds."),
        (429, "Too many requests from this token: see Retry-After."),
    )
}
# Errors are JSON on every route; on the event stream's route FastAPI would document a
# model under text/event-stream, so there they are named by reference.
JSON_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"description": spec["description"], "content": {"application/json": {
        "schema": {"$ref": "#/components/schemas/ErrorBody"}}}}
    for status, spec in ERRORS.items()}
router = APIRouter(prefix="/v1", responses=ERRORS)
Who = Annotated[Caller, Depends(caller)]
Ctx = Annotated[ApiContext, Depends(api_context)]


def own_run(ctx: ApiContext, who: Caller, run_id: str) -> Run:
    """The caller's run, or 404 (another person's run is not there for them)."""
    run = ctx.store.get_run(run_id, person=who.person) if len(run_id) <= 64 else None
    if run is None:
        raise not_found()
    return run


@router.get("/me", response_model=Me, summary="Who this token acts as")
def me(who: Who) -> Me:
    return Me(token_id=who.token_id, person=who.person)


@router.post("/runs", status_code=201, response_model=Started, summary="Start a run")
def start_run(options: StartRun, who: Who, ctx: Ctx) -> Started:
    """Queue a new run with the CLI's options; its id comes back at once. The person's
    fair share and limit of runs at once apply, as in the dashboard."""
    store, env = ctx.store, ctx.env()
    parent, section, question = options.build_on, None, options.question
    if options.dig_deeper:
        parent, section = options.dig_deeper.run_id, options.dig_deeper.section
    if parent and store.get_run(parent, person=who.person) is None:
        raise ApiError(404, "not_found", "There is no earlier run of yours with that id.")
    if parent and section is not None:
        question = follow_up_question(store, parent, section, who.person)
    question = validate_question(question)
    config = run_config(
        env, preset=options.preset, subtopics=options.subtopics, sources=options.sources,
        reviews=options.reviews, breadth=options.breadth, depth=options.depth,
        schedule=options.schedule, clarify=options.clarify, language=options.language,
        max_cost=options.max_cost, review_plan=options.review_plan, engine=options.engine,
        section=section, done_when=options.done_when, want=options.want, steer=options.steer)
    if options.documents or options.collection or options.no_web:
        config = with_sources(config, "documents" if options.no_web else "both",
                              collection=options.collection or "",
                              document_ids=[] if options.collection else options.documents or [])
        check_scope(store, config)
    url = check_callback_url(ctx.settings, options.callback_url) if options.callback_url else None
    credentials = ctx.credentials()
    if ctx.door.executes_here:  # external workers check their own keys
        check_configuration(config, credentials)
    run_id = ctx.door.start(question, config, credentials, prices=ctx.prices(),
                            parent_run_id=parent, person=who.person)
    if url:
        tokenstore.watch_run(store, run_id, token_id=who.token_id, url=url)
    base = f"/v1/runs/{run_id}"
    return Started(run_id=run_id, status="queued", links=Links(
        status=base, events=f"{base}/events", report=f"{base}/report?format=md"))


@router.get("/runs", response_model=RunList, summary="List and search your runs")
def list_runs(who: Who, ctx: Ctx,
              search: Annotated[str | None, Query(max_length=200, description=
                                                  "Words in the question.")] = None,
              status: Annotated[str | None, Query(description="Only runs with this status.",
                                                  json_schema_extra={
                                                      "enum": sorted(RUN_STATUSES)})] = None,
              limit: Annotated[int, Query(ge=1, le=100)] = 20,
              offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0) -> RunList:
    if status is not None and status not in RUN_STATUSES:
        raise ApiError(422, "invalid_request", f"status: choose one of "
                       f"{', '.join(sorted(RUN_STATUSES))}.")
    found = ctx.store.list_runs(search=search or None, status=status, limit=limit,
                                offset=offset, person=who.person)
    total = ctx.store.count_runs(search or None, status=status, person=who.person)
    return RunList(runs=[summary(run, ctx.door.status(run)) for run in found], total=total)


@router.get("/runs/{run_id}", response_model=RunStatus, summary="A run's status")
def get_run(run_id: str, who: Who, ctx: Ctx) -> RunStatus:
    """Progress, the step it is on, its place in the queue, totals, warnings, and what it
    waits for (when it waits for you)."""
    return run_status(ctx, own_run(ctx, who, run_id))


@router.post("/runs/{run_id}/pause", response_model=RunStatus, summary="Pause a running run")
def pause_run(run_id: str, who: Who, ctx: Ctx) -> RunStatus:
    own_run(ctx, who, run_id)
    _control(lambda: ctx.door.pause(run_id, person=who.person))
    return run_status(ctx, own_run(ctx, who, run_id))


@router.post("/runs/{run_id}/resume", response_model=RunStatus,
             summary="Continue a paused, waiting, interrupted or failed run")
def resume_run(run_id: str, who: Who, ctx: Ctx) -> RunStatus:
    run = own_run(ctx, who, run_id)
    if (run.status == "paused" or run.control == "pause") and ctx.door.is_alive(run_id):
        _control(lambda: ctx.door.unpause(run_id, person=who.person))
    else:
        _continue(ctx, who, run_id)
    return run_status(ctx, own_run(ctx, who, run_id))


@router.post("/runs/{run_id}/cancel", response_model=RunStatus, summary="Cancel a run")
def cancel_run(run_id: str, who: Who, ctx: Ctx) -> RunStatus:
    """Everything gathered so far is kept."""
    own_run(ctx, who, run_id)
    _control(lambda: ctx.door.cancel(run_id, person=who.person))
    return run_status(ctx, own_run(ctx, who, run_id))


@router.post("/runs/{run_id}/write-up", response_model=RunStatus,
             summary="Stop researching and write the report from what was gathered")
def write_up_run(run_id: str, who: Who, ctx: Ctx) -> RunStatus:
    """Research ends at its next checkpoint (what is under way is kept); the report is then
    written and verified as usual, without further review cycles. Instead of cancelling."""
    own_run(ctx, who, run_id)
    _control(lambda: ctx.door.wrap_up(run_id, person=who.person))
    return run_status(ctx, own_run(ctx, who, run_id))


@router.post("/runs/{run_id}/clarification", response_model=RunStatus,
             summary="Answer a run's clarifying questions")
def answer_questions(run_id: str, answers: ClarificationAnswers, who: Who, ctx: Ctx) -> RunStatus:
    _waiting(ctx, who, run_id, "clarification")
    _control(lambda: answer_clarification(ctx.store, run_id, list(answers.answers)))
    _continue(ctx, who, run_id)
    return run_status(ctx, own_run(ctx, who, run_id))


@router.post("/runs/{run_id}/plan", response_model=RunStatus,
             summary="Approve a run's plan (as it is, or as you edited it)")
def approve(run_id: str, approval: PlanApproval, who: Who, ctx: Ctx) -> RunStatus:
    _waiting(ctx, who, run_id, "plan")
    edited = None if approval.subtopics is None else [
        Subtopic(id=s.id, title=s.title, description=s.description, questions=tuple(s.questions))
        for s in approval.subtopics]
    _control(lambda: approve_plan(ctx.store, run_id, edited))
    _continue(ctx, who, run_id)
    return run_status(ctx, own_run(ctx, who, run_id))


@router.post("/runs/{run_id}/steering", response_model=RunStatus,
             summary="Choose what a run explores next")
def steer(run_id: str, choice: SteeringChoice, who: Who, ctx: Ctx) -> RunStatus:
    _waiting(ctx, who, run_id, "steering")
    _control(lambda: answer_steering(ctx.store, run_id, follow=list(choice.follow),
                                     add=list(choice.add), enough=choice.enough))
    _continue(ctx, who, run_id)
    return run_status(ctx, own_run(ctx, who, run_id))


@router.get("/runs/{run_id}/report", response_class=Response, summary="Download the report",
            responses={200: {"description": "The file.", "content": {
                f.mime: {"schema": {"type": "string", "format": "binary"}}
                for f in FORMATS.values()}}})
def report(run_id: str, who: Who, ctx: Ctx, format: FormatName = "md") -> Response:  # noqa: A002
    """md or pdf: the report; docx: Word; bib or ris: the cited sources; csv or xlsx: the
    claim evidence table."""
    _finished(ctx, who, run_id)
    try:
        data = export_run(ctx.store, run_id, format)
    except ExportFailed as exc:
        raise ApiError(500, "export_failed", str(exc)) from None
    kind = FORMATS[format]
    run, stored = ctx.store.get_run(run_id), ctx.store.get_report(run_id)
    stem = file_stem(run.question if run else "", stored.created_at if stored else "")
    return Response(data, media_type=kind.mime, headers={
        "Content-Disposition": f'attachment; filename="{stem}.{kind.key}"'})


@router.get("/runs/{run_id}/sources", response_model=SourceList,
            summary="The run's sources, numbered as the report cites them")
def sources(run_id: str, who: Who, ctx: Ctx) -> SourceList:
    own_run(ctx, who, run_id)
    numbers: dict[str, int] = {}
    kinds: dict[str, str] = {}
    if ctx.store.get_report(run_id) is not None:
        for cited in build_document_for_run(ctx.store, run_id).sources:
            numbers[cited.source_id] = cited.number
            kinds[cited.source_id] = cited.kind
    return SourceList(sources=[SourceOut(
        id=s.id, number=numbers.get(s.id), url=s.url, title=s.title, domain=domain_of(s.url),
        published=s.published, relevance=s.relevance, subtopic_id=s.subtopic_id,
        provider=s.provider, kind=kinds.get(s.id, s.source_kind), cited_in=list(s.cited_in))
        for s in ctx.store.get_sources(run_id, with_text=False)])


@router.get("/runs/{run_id}/evidence", response_model=EvidenceList,
            summary="The claim evidence table: each checked claim, its verdict and passage")
def evidence(run_id: str, who: Who, ctx: Ctx) -> EvidenceList:
    _finished(ctx, who, run_id)
    doc = build_document_for_run(ctx.store, run_id)
    rows = evidence_rows(ctx.store.get_verifications(run_id), doc,
                         ctx.store.get_sources(run_id, with_text=False))
    return EvidenceList(rows=[EvidenceOut(claim=r.claim, verdict=r.verdict, passage=r.passage,
                                          source=r.source, source_url=r.source_url,
                                          section=r.section) for r in rows])


def _control(action: Callable[[], object]) -> None:
    """Run a control action; the engine's refusal (plain words) is a 409."""
    try:
        action()
    except LookupError:
        raise not_found() from None
    except ConfigError as exc:
        raise ApiError(409, "conflict", str(exc)) from None


def _continue(ctx: ApiContext, who: Caller, run_id: str) -> None:
    _control(lambda: ctx.door.resume(run_id, ctx.credentials(), prices=ctx.prices(),
                                     person=who.person))


def _waiting(ctx: ApiContext, who: Caller, run_id: str, kind: str) -> None:
    run = own_run(ctx, who, run_id)
    status = run_status(ctx, run)
    if status.waiting_for is None or status.waiting_for.kind != kind:
        now = status.waiting_for.kind if status.waiting_for else status.status
        raise ApiError(409, "not_waiting", f"This run is not waiting for {_WAITS[kind]} "
                       f"(it is {_NOW.get(now, now)}).")


_WAITS = {"clarification": "answers to its questions", "plan": "its plan's approval",
          "steering": "a choice of what to explore next"}
_NOW = {"clarification": "waiting for answers to its questions",
        "plan": "waiting for its plan's approval", "nothing": "waiting",
        "steering": "waiting for a choice of what to explore next"}


def _finished(ctx: ApiContext, who: Caller, run_id: str) -> None:
    run = own_run(ctx, who, run_id)
    if ctx.store.get_report(run_id) is None:
        raise ApiError(409, "no_report", f"This run has no report yet (it is "
                       f"{ctx.door.status(run)}).")
