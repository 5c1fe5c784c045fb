"""`python -m research serve` (the HTTP API) and `python -m research token create|list|revoke`."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import sys
from pathlib import Path

from research.core.errors import ConfigError, redact
from research.core.settings import command_owner, effective_env
from storage import (
    DatabaseUnavailableError,
    DatabaseValueError,
    Store,
    chosen_db,
    default_db_path,
)
from storage import tokens as tokenstore

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
DEFAULT_PORT = 8000


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m research",
                                description="The HTTP API server and its tokens.")
    sub = p.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve the HTTP API (docs at /docs)")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to listen on (default 127.0.0.1: this computer only)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help="default 8000")
    serve.add_argument("--allow-remote", action="store_true",
                       help="listen beyond this computer: only with TLS terminated in front "
                            "(a proxy; see the README), also DEEP_RESEARCH_API_ALLOW_REMOTE=1")
    serve.add_argument("--db", help="database file or postgresql:// URL")
    token = sub.add_parser("token", help="make, list and revoke API tokens")
    actions = token.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", help="make a token (shown once)")
    create.add_argument("--name", default="", help="what it is for, e.g. 'nightly script'")
    listing = actions.add_parser("list", help="your tokens (never their text)")
    revoke = actions.add_parser("revoke", help="revoke a token by its id")
    revoke.add_argument("token_id")
    for each in (create, listing, revoke):
        each.add_argument("--owner", metavar="PERSON",
                          help="whose token (their e-mail, as the dashboard's sign-in names "
                               "them; default DEEP_RESEARCH_OWNER; unset: no sign-in, every run)")
        each.add_argument("--db", help="database file or postgresql:// URL")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    env = effective_env()
    try:
        target = chosen_db(args.db, env)
        store = Store(target)
    except (DatabaseValueError, DatabaseUnavailableError, ConfigError) as exc:
        return _fail(str(exc), EXIT_USAGE)
    folder = Path(target).parent if store.path is not None else default_db_path(env).parent
    if args.command == "serve":
        return serve(args, env, store, target, folder)
    owner = command_owner(args.owner, env)
    return token_command(args, env, store, folder, owner)


def is_loopback(host: str) -> bool:
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve(args: argparse.Namespace, env: dict[str, str], store: Store, target: Path | str,
          folder: Path) -> int:
    import uvicorn

    from research.api.app import create_app
    from research.api.auth import Authenticator, RateLimiter
    from research.api.context import ApiContext
    from research.api.door import RunDoor
    from research.api.mounts import mounted_apps
    from research.api.settings import ApiSettings
    from research.core.config import Credentials

    try:
        settings = ApiSettings.from_env(env)
    except ConfigError as exc:
        return _fail(str(exc), EXIT_USAGE)
    if not is_loopback(args.host) and not (args.allow_remote or settings.allow_remote):
        return _fail(f"Refusing to listen on {args.host}: the API would be reachable from "
                     "other computers without TLS. Put it behind a proxy that terminates "
                     "TLS (see the README, 'From other programs') and start it with "
                     "--allow-remote (or DEEP_RESEARCH_API_ALLOW_REMOTE=1), or listen on "
                     "127.0.0.1.", EXIT_USAGE)
    if not 1 <= args.port <= 65535:
        return _fail(f"--port takes a port number from 1 to 65535 (got {args.port}).",
                     EXIT_USAGE)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    door = RunDoor(target, store, credentials=lambda: Credentials.from_env(effective_env()))
    ctx = ApiContext(store=store, door=door, settings=settings,
                     authenticator=Authenticator(store, RateLimiter(settings.requests_per_minute)),
                     secret_folder=folder, db=str(target))
    try:
        mounted = mounted_apps(ctx)
    except ConfigError as exc:
        return _fail(str(exc), EXIT_FAILED)
    app = create_app(ctx, mounted=mounted)
    print(f"Deep Research Studio API on http://{args.host}:{args.port} (documentation: "
          f"http://{args.host}:{args.port}/docs)", file=sys.stderr, flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning",
                proxy_headers=True, server_header=False)
    return EXIT_OK


def token_command(args: argparse.Namespace, env: dict[str, str], store: Store, folder: Path,
                  owner: str | None) -> int:
    from research.api.tokens import create_token

    if args.action == "create":
        made = create_token(store, env, folder, person=owner, name=args.name)
        print(f"Token {made.token.id} for {owner or 'everyone (no sign-in)'} made. It is "
              "shown only now: keep it like a password.", file=sys.stderr)
        print(f"token: {made.text}")
        print(f"signing secret: {made.signing_secret}")
        print(f"id: {made.token.id}")
        return EXIT_OK
    if args.action == "list":
        found = tokenstore.list_tokens(store, person=owner)
        if not found:
            print("No tokens.", file=sys.stderr)
        for t in found:
            state = f"revoked {t.revoked_at}" if t.revoked_at else (
                f"last used {t.last_used_at}" if t.last_used_at else "never used")
            print(f"{t.id}\t{t.name or '-'}\t{t.person or '(no sign-in)'}\tmade {t.created_at}"
                  f"\t{state}")
        return EXIT_OK
    if tokenstore.revoke_token(store, args.token_id, person=owner):
        print(f"Token {args.token_id} is revoked: requests with it are refused from now on.",
              file=sys.stderr)
        return EXIT_OK
    return _fail(f"There is no live token {args.token_id!r}" +
                 (f" of {owner}." if owner else "."), EXIT_FAILED)


def _fail(message: str, code: int) -> int:
    print(f"error: {redact(message)}", file=sys.stderr)
    return code
