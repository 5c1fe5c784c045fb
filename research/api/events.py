"""A run's event log as Server-Sent Events, resumable from `Last-Event-ID`.

Each event of the run's log (`research.core.events`, stored by the store) is one SSE event: `id`
is its id in the log, `event` its type (step_started, source_found, completed, ...), `data`
the stored row as JSON. A client that reconnects with `Last-Event-ID: <id>` (browsers'
EventSource do by themselves) gets every event after that one and nothing twice; `?after=`
does the same for clients that cannot set headers. The stream ends with an `end` event (no
id, the run's status as data) once the run has stopped or waits for its person with nothing
executing it; keep-alive comments go out while nothing happens
(https://fastapi.tiangolo.com/tutorial/server-sent-events/).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

import anyio
from fastapi import APIRouter, Depends, Header, Query
from fastapi.sse import EventSourceResponse, ServerSentEvent

from research.api.auth import Caller, caller
from research.api.context import ApiContext, api_context
from research.api.errors import ApiError
from research.api.runs import JSON_ERRORS, own_run
from research.api.status import run_status
from research.core.records import Run
from storage import TERMINAL_STATUSES, Store
from storage.run_records import EventRow

POLL_S = 0.5
BATCH = 200
RETRY_MS = 2000

router = APIRouter(prefix="/v1", responses=JSON_ERRORS)


def _start_after(last_event_id: Annotated[str | None, Header(
                     description="Resume after this event id (what the stream last sent).")] = None,
                 after: Annotated[int | None, Query(ge=0, le=2**62, description=
                                                    "Resume after this event id.")] = None) -> int:
    if last_event_id is not None and last_event_id.strip():
        text = last_event_id.strip()
        if not text.isdigit() or len(text) > 18:
            raise ApiError(422, "invalid_request", "Last-Event-ID: must be the id of an event "
                           "this stream sent (a whole number).")
        return int(text)
    return after or 0


def _owned(run_id: str, who: Annotated[Caller, Depends(caller)],
           ctx: Annotated[ApiContext, Depends(api_context)]) -> Run:
    return own_run(ctx, who, run_id)  # before the stream starts: a 404 is still a 404


@router.get("/runs/{run_id}/events", response_class=EventSourceResponse,
            summary="Follow a run: its events as Server-Sent Events")
async def follow(run: Annotated[Run, Depends(_owned)],
                 start: Annotated[int, Depends(_start_after)],
                 ctx: Annotated[ApiContext, Depends(api_context)]) -> AsyncIterator[ServerSentEvent]:
    cursor, run_id, store = start, run.id, ctx.store
    yield ServerSentEvent(comment="following run " + run_id, retry=RETRY_MS)
    while True:
        rows = await anyio.to_thread.run_sync(_events_after, store, run_id, cursor, BATCH)
        for row in rows:
            yield ServerSentEvent(id=str(row.id), event=row.type, data={
                "id": row.id, "type": row.type, "ts": row.ts, "step": row.step,
                "message": row.message, "data": dict(row.data)})
            cursor = row.id
        if len(rows) == BATCH:
            continue
        ended = await anyio.to_thread.run_sync(_ended, ctx, run_id)
        if ended is not None:
            more = await anyio.to_thread.run_sync(_events_after, store, run_id, cursor, 1)
            if not more:  # nothing was logged between the last read and the end
                yield ServerSentEvent(event="end", data=ended)
                return
            continue
        await anyio.sleep(POLL_S)


def _events_after(store: Store, run_id: str, cursor: int, limit: int) -> list[EventRow]:
    return store.get_events(run_id, after_id=cursor, limit=limit)


def _ended(ctx: ApiContext, run_id: str) -> dict[str, object] | None:
    """The run's status once following it has nothing more to show, else None."""
    run = ctx.store.get_run(run_id)
    if run is None:
        return {"id": run_id, "status": "deleted"}
    status = ctx.door.status(run)
    if status in TERMINAL_STATUSES or (status in ("waiting", "interrupted")
                                       and not ctx.door.is_alive(run_id)):
        return run_status(ctx, run).model_dump(mode="json")
    return None
