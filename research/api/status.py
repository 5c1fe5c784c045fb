"""A run's status as the API shows it (also the body of its callback POST)."""

from __future__ import annotations

from research import pending_clarification, pending_steering, voice
from research.api.context import ApiContext
from research.api.models import QueueInfo, RunStatus, RunSummary, Totals, Waiting
from research.core.progress import percent
from research.core.records import Run


def summary(run: Run, status: str) -> RunSummary:
    return RunSummary(id=run.id, question=run.question, status=status,
                      status_text=voice.run_label(run, status),
                      created_at=run.created_at, finished_at=run.finished_at,
                      preset=run.preset, engine=run.engine, parent_run_id=run.parent_run_id)


def run_status(ctx: ApiContext, run: Run) -> RunStatus:
    """Everything a program following the run needs, from one look at the store."""
    store = ctx.store
    status = ctx.door.status(run)
    steps = store.get_steps(run.id)
    running = [s for s in steps if s.status in ("running", "retrying")]
    place = ctx.door.queue_place(run.id) if status == "queued" else None
    totals = run.totals
    return RunStatus(
        **summary(run, status).model_dump(),
        status_line=voice.status_line(run, status),
        progress=percent(run, steps),
        step=running[-1].label or running[-1].key if running else None,
        queue=QueueInfo(place=place.place, ahead=place.ahead, text=place.describe())
        if place else None,
        totals=Totals(sources=totals.sources, queries=totals.queries, tokens=totals.tokens,
                      cost_usd=totals.cost_usd, calls=totals.calls, rounds=totals.rounds,
                      stop_reason=voice.plain_words(totals.stop_reason)),
        warnings=[voice.plain_error(w) for w in run.warnings],
        error=voice.plain_error(run.error) if run.error else None, started_at=run.started_at,
        duration_s=run.duration_s,
        waiting_for=waiting_for(ctx, run) if status == "waiting" else None,
        settings=dict(run.config),
    )


def waiting_for(ctx: ApiContext, run: Run) -> Waiting:
    """What a waiting run waits for: its questions, its plan, or its next round's choice."""
    store, base = ctx.store, f"/v1/runs/{run.id}"
    asked = pending_clarification(store, run.id)
    if asked:
        return Waiting(kind="clarification", questions=list(asked["questions"]),
                       answer_at=f"{base}/clarification")
    if run.config.get("review_plan") and store.get_step(run.id, "plan_review") is None:
        plan = store.get_plan(run.id)
        if plan:
            return Waiting(kind="plan", answer_at=f"{base}/plan", plan=[
                {"id": s.id, "title": s.title, "description": s.description,
                 "questions": list(s.questions)} for s in plan])
    proposals = pending_steering(store, run.id)
    if proposals is not None:
        return Waiting(kind="steering", round=int(proposals.get("round") or 0),
                       proposals=list(proposals.get("proposals") or []),
                       answer_at=f"{base}/steering")
    return Waiting(kind="nothing", answer_at=f"{base}/resume")
