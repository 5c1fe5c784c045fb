"""The FastAPI application: routes under /v1, the OpenAPI document at /openapi.json and its
interactive page at /docs, one error shape, a bound on request size, mounted apps."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager

from fastapi import FastAPI, HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from research.api import documents, errors, events, questions, runs, updates
from research.api.auth import TokenRequired
from research.api.callbacks import CallbackWatcher
from research.api.context import ApiContext
from research.api.mounts import Mounted

UPLOAD_PATHS = frozenset({"/v1/documents"})
DESCRIPTION = """Research a question on the web (and in your documents) and get a cited
report, from any program. Every request under /v1 carries `Authorization: Bearer <token>`
(make one in Settings or with `python -m research token create`); a token sees only its
person's runs. Errors are `{"error": {"code": ..., "message": ...}}`."""


def create_app(ctx: ApiContext, *, mounted: Sequence[Mounted] = (),
               watch_callbacks: bool = True) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        watcher = CallbackWatcher(ctx) if watch_callbacks else None
        if watcher:
            watcher.start()
        try:
            async with AsyncExitStack() as stack:
                for extra in mounted:
                    if extra.lifespan is not None:
                        await stack.enter_async_context(extra.lifespan())
                yield
        finally:
            if watcher:
                watcher.stop()

    app = FastAPI(title="Deep Research Studio API", version="1", description=DESCRIPTION,
                  lifespan=lifespan, docs_url="/docs", openapi_url="/openapi.json",
                  redoc_url=None)
    app.state.api = ctx
    app.state.authenticator = ctx.authenticator
    errors.install(app)

    @app.get("/v1/health", summary="Whether the server answers (no token needed)",
             tags=["server"])
    def health() -> dict[str, str]:
        return {"status": "ok"}

    app.include_router(runs.router, tags=["runs"])
    app.include_router(events.router, tags=["runs"])
    app.include_router(updates.router, tags=["runs"])  # a report's new version (issue 36)
    app.include_router(questions.router, tags=["runs"])  # ask the report (research.ask)
    app.include_router(documents.router, tags=["documents"])
    for extra in mounted:
        app.mount(extra.path, TokenRequired(extra.app, ctx.authenticator)
                  if extra.token_required else extra.app)
    app.add_middleware(BodyLimit, max_body=ctx.settings.max_body_bytes,
                       max_upload=ctx.settings.max_upload_bytes)
    return app


class BodyLimit:
    """Refuse a request body past the bound (413) before it is read whole: a declared
    Content-Length at once, a streamed body when it passes the bound."""

    def __init__(self, app: ASGIApp, *, max_body: int, max_upload: int) -> None:
        self.app = app
        self.max_body = max_body
        self.max_upload = max_upload

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_upload if scope["path"] in UPLOAD_PATHS else self.max_body
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            await _refuse(send, limit)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:  # FastAPI passes an HTTPException from here on as it is
                    raise HTTPException(status_code=413, detail=_too_large(limit))
            return message

        await self.app(scope, counted, send)


def _too_large(limit: int) -> str:
    return f"The request body is larger than the {limit} bytes this server accepts."


async def _refuse(send: Send, limit: int) -> None:
    payload = json.dumps(errors.body("too_large", _too_large(limit))).encode("utf-8")
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(payload)).encode("ascii"))]})
    await send({"type": "http.response.body", "body": payload})
