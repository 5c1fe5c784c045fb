"""Who is calling: a bearer token, the person it acts as, and its requests per minute.

Every request under /v1 carries `Authorization: Bearer <token>`. The token is looked up by
its hash (`storage.tokens`); a missing, unknown or revoked token is a 401, and a token past
its requests per minute a 429 with `Retry-After`. The caller then acts as the token's person
exactly as that person does in the dashboard: every run read passes `person=`, so another
person's run id is "not found".

For routes: the dependency `caller`. For an ASGI app mounted on the API server (the MCP
server's streamable HTTP, `research.api.mounts`): wrap it in `TokenRequired`, which checks
the same way and puts the `Caller` in `scope["state"]["caller"]`.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Annotated

import anyio
from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.types import ASGIApp, Receive, Scope, Send

from research.api.errors import ApiError, body
from research.api.tokens import token_hash
from storage import Store
from storage import tokens as tokenstore

WINDOW_S = 60.0
USED_EVERY_S = 300.0  # how often a token's "last used" is written: not on every request

bearer = HTTPBearer(auto_error=False, description="A token from Settings or "
                    "`python -m research token create`.")


@dataclass(frozen=True)
class Caller:
    """The token a request came with, and whose runs it may see (None: every run, an
    install without sign-in)."""

    token_id: str
    person: str | None


class RateLimiter:
    """At most `per_minute` requests per key in any 60 s (a sliding window, in memory: each
    server process counts its own)."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._seen: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def wait_s(self, key: str, now: float | None = None) -> float:
        """0 and the request counted, or the seconds until the key may ask again."""
        now = time.monotonic() if now is None else now
        with self._lock:
            seen = self._seen.setdefault(key, deque())
            while seen and seen[0] <= now - WINDOW_S:
                seen.popleft()
            if len(seen) >= self.per_minute:
                return seen[0] + WINDOW_S - now
            seen.append(now)
            return 0.0


class Authenticator:
    """Turns an Authorization header into a Caller, or refuses it (ApiError)."""

    def __init__(self, store: Store, limiter: RateLimiter) -> None:
        self.store = store
        self.limiter = limiter
        self._used: dict[str, float] = {}

    def authenticate(self, authorization: str | None) -> Caller:
        scheme, _, text = (authorization or "").strip().partition(" ")
        if scheme.lower() != "bearer" or not text.strip():
            raise ApiError(401, "unauthorized", "Send your API token as "
                           "'Authorization: Bearer <token>' (make one in Settings or with "
                           "python -m research token create).",
                           {"WWW-Authenticate": "Bearer"})
        found = tokenstore.find_token(self.store, token_hash(text))
        if found is None:
            raise ApiError(401, "unauthorized", "This API token is not known or was revoked.",
                           {"WWW-Authenticate": 'Bearer error="invalid_token"'})
        wait = self.limiter.wait_s(found.id)
        if wait > 0:
            seconds = max(1, math.ceil(wait))
            raise ApiError(429, "rate_limited", f"This token made more than "
                           f"{self.limiter.per_minute} requests in a minute; try again in "
                           f"{seconds} s.", {"Retry-After": str(seconds)})
        self._note_use(found.id)
        return Caller(token_id=found.id, person=found.person)

    def _note_use(self, token_id: str) -> None:
        now = time.monotonic()
        if now - self._used.get(token_id, -USED_EVERY_S) >= USED_EVERY_S:
            self._used[token_id] = now
            tokenstore.mark_token_used(self.store, token_id)


def caller(request: Request,
           credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> Caller:
    """The route dependency: the request's Caller (401 / 429 otherwise)."""
    authenticator: Authenticator = request.app.state.authenticator
    header = f"Bearer {credentials.credentials}" if credentials else None
    return authenticator.authenticate(header)


class TokenRequired:
    """ASGI wrapper: an app mounted on the API server answers only requests with a valid
    token (same check, same rate limit); the Caller is in `scope["state"]["caller"]`."""

    def __init__(self, app: ASGIApp, authenticator: Authenticator) -> None:
        self.app = app
        self.authenticator = authenticator

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        try:
            found = await anyio.to_thread.run_sync(self.authenticator.authenticate,
                                                   headers.get("authorization"))
        except ApiError as exc:
            payload = json.dumps(body(exc.code, exc.message)).encode("utf-8")
            extra = [(k.lower().encode("latin-1"), v.encode("latin-1"))
                     for k, v in exc.headers.items()]
            await send({"type": "http.response.start", "status": exc.status,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(payload)).encode()), *extra]})
            await send({"type": "http.response.body", "body": payload})
            return
        scope.setdefault("state", {})["caller"] = found
        await self.app(scope, receive, send)
