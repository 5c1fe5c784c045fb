"""`POST /v1/runs/{run_id}/update`: update a finished run's report with what is new.

The update is a run of its own (research/living/), started through the API's door like any
run, with the earlier version's question and settings; its id comes back at once and it is
followed like any run (status, events, report, whose "What changed since" opens it).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from research.api.auth import Caller, caller
from research.api.context import ApiContext, api_context
from research.api.errors import ApiError
from research.api.models import Links, Started
from research.api.runs import ERRORS, own_run
from research.core.errors import ConfigError
from research.living.settings import update_request
from research.phases.start.preflight import check_configuration

router = APIRouter(prefix="/v1", responses=ERRORS)
Who = Annotated[Caller, Depends(caller)]
Ctx = Annotated[ApiContext, Depends(api_context)]


@router.post("/runs/{run_id}/update", status_code=201, response_model=Started,
             summary="Update a finished run's report with what is new")
def update_run(run_id: str, who: Who, ctx: Ctx,
               max_cost: Annotated[float | None, Query(
                   ge=0, le=10_000, description="Cost cap of the update in US dollars "
                   "(default: the earlier run's)")] = None) -> Started:
    """Searches again with the earlier run's plan, only for what was published since it
    finished, reads only pages it has not read, and writes a new version whose report opens
    with "What changed since <date>". 409 when the run has not finished."""
    own_run(ctx, who, run_id)
    try:
        earlier, config = update_request(ctx.store, run_id, person=who.person, cost_cap=max_cost)
    except ConfigError as exc:
        raise ApiError(409, "conflict", str(exc)) from None
    credentials = ctx.credentials()
    if ctx.door.executes_here:  # external workers check their own keys
        check_configuration(config, credentials)
    new = ctx.door.start(earlier.question, config, credentials, prices=ctx.prices(),
                         parent_run_id=earlier.id, person=who.person)
    base = f"/v1/runs/{new}"
    return Started(run_id=new, status="queued", links=Links(
        status=base, events=f"{base}/events", report=f"{base}/report?format=md"))
