"""The MCP server over streamable HTTP, for the API server: every request acts as the person
its bearer token belongs to.

`streamable_http_app(person_of)` is the seam: `person_of(request)` gives the request's person
(None: an install without sign-in, where one person sees every run, as in the dashboard) or
raises `Refused`, and the request gets 401 with a plain JSON message and never reaches the
MCP session. The person rides to the tools in a context variable, which the SDK carries from
the HTTP request into the handler of each message (its context streams, as its own bearer
auth does). The tools' resolver fails closed: a request nobody resolved sees no runs.

On the API server (research/api/mounts.py), whose `TokenRequired` wrapper has already checked
the token and put the `Caller` in `scope["state"]["caller"]`, `person_of` is `caller_person`
and the app is mounted with `path="/"`: `api_mount(service)` gives both.
The returned Starlette app has its own lifespan (the SDK's session manager). Served alone
(uvicorn), that just works; mounted inside another app, that app's lifespan must enter it:
`mcp_app.router.lifespan_context(mcp_app)`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from contextvars import ContextVar

import anyio
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from research.core.errors import ResearchError
from research.mcpserver.server import build_server
from research.mcpserver.service import Service, open_service

PersonOf = Callable[[Request], str | None]
REFUSED = ("A valid bearer token is needed: make one in Settings or with "
           "python -m research token create.")

# (person,) once the request's person is known; None: nobody resolved this request.
_person: ContextVar[tuple[str | None] | None] = ContextVar("research_mcp_person", default=None)


class Refused(Exception):  # noqa: N818 - a refusal, answered 401, not an error of ours
    """Raised by a `person_of` for a request that may not ask at all (no valid token)."""

    def __init__(self, message: str = REFUSED) -> None:
        super().__init__(message)
        self.message = message


def streamable_http_app(person_of: PersonOf, *, service: Service | None = None,
                        path: str = "/mcp", allowed_hosts: list[str] | None = None) -> Starlette:
    """The MCP endpoint at `path`. `allowed_hosts`: the Host header values it answers
    ("127.0.0.1:*", "research.example.org"), the SDK's guard against DNS rebinding; None (the
    default) answers any, as behind the team's proxy: every request needs a token anyway, which
    a web page that rebinds a name to this server cannot send."""
    server = build_server(service or open_service(), _asking_person)
    names = allowed_hosts or []
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=allowed_hosts is not None, allowed_hosts=names,
        allowed_origins=[f"{scheme}://{n}" for n in names for scheme in ("https", "http")])
    app = server.streamable_http_app(streamable_http_path=path, transport_security=security)
    app.add_middleware(_AsPerson, person_of=person_of)
    return app


def caller_person(request: Request) -> str | None:
    """The person of the API server's `Caller` (research/api/auth.py puts it in the scope's
    state after checking the token); Refused when there is none, so this app answers nobody
    if it is ever mounted without that check."""
    caller = getattr(request.state, "caller", None)
    if caller is None:
        raise Refused()
    person: str | None = caller.person
    return person


def api_mount(service: Service) -> tuple[Starlette, Callable[[], AbstractAsyncContextManager[None]]]:
    """The app and lifespan to mount at /mcp on the API server, behind its token check."""
    app = streamable_http_app(caller_person, service=service, path="/")

    @asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:  # the SDK's session manager
        async with app.router.lifespan_context(app):
            yield

    return app, lifespan


def _asking_person() -> str | None:
    resolved = _person.get()
    if resolved is None:
        raise ResearchError("This request carries no valid token.")
    return resolved[0]


class _AsPerson:
    """Pure ASGI middleware: resolve the request's person, refuse without one, and run the
    rest of the request as that person."""

    def __init__(self, app: ASGIApp, person_of: PersonOf) -> None:
        self.app = app
        self.person_of = person_of

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # the lifespan: the SDK's session manager
            await self.app(scope, receive, send)
            return
        try:
            person = await anyio.to_thread.run_sync(self.person_of, Request(scope))
        except Refused as exc:
            refused = JSONResponse({"error": {"code": "unauthorized", "message": exc.message}},
                                   status_code=401, headers={"WWW-Authenticate": "Bearer"})
            await refused(scope, receive, send)
            return
        token = _person.set((person,))
        try:
            await self.app(scope, receive, send)
        finally:
            _person.reset(token)
