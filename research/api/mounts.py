"""Apps the API server serves beside its routes, on the same port and behind the same tokens.

The MCP server's streamable HTTP transport (issue 34, point 4) mounts itself here: add a
`Mounted` to what `mounted_apps` returns. Its `app` is wrapped in `auth.TokenRequired` (the
same tokens and rate limit as the routes; the `Caller` is in `scope["state"]["caller"]`)
unless `token_required` is False, and its `lifespan` (for example the MCP SDK's session
manager, `session_manager.run()`) is entered when the server starts: Starlette does not
run a mounted app's own lifespan.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

from starlette.types import ASGIApp

from research.api.context import ApiContext

MCP_PATH = "/mcp"  # where the MCP server's streamable HTTP is expected


@dataclass(frozen=True)
class Mounted:
    path: str
    app: ASGIApp
    lifespan: Callable[[], AbstractAsyncContextManager[None]] | None = None
    token_required: bool = True


def mounted_apps(ctx: ApiContext) -> list[Mounted]:
    """What `python -m research serve` mounts beside /v1: the MCP server at /mcp, on this
    process's one job manager (`research.mcpserver.http.api_mount`)."""
    from research.mcpserver.door import Runs
    from research.mcpserver.http import api_mount
    from research.mcpserver.service import open_service

    service = open_service(ctx.environ, db=ctx.db or None, runs=Runs(ctx.door.job_manager))
    app, lifespan = api_mount(service)
    return [Mounted(MCP_PATH, app, lifespan)]
