"""Making and naming API tokens: the text shown once, its hash stored, its signing secret.

A token is `drs_` and 43 URL-safe characters (32 random bytes); the store keeps only its
SHA-256 (`storage.tokens`). Its callback signing secret is derived, not stored: an HMAC of
the token's id under the server's own secret (`DEEP_RESEARCH_API_SECRET`, else a random
one kept in `api-secret` beside the database, mode 600), so the database holds nothing that
can sign or authenticate. Several API servers on one PostgreSQL store share the setting.
Used by `python -m research token`, the Settings page and the API server alike.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from storage import Store
from storage import tokens as tokenstore
from storage.tokens import ApiToken

TOKEN_PREFIX = "drs_"
SECRET_FILE = "api-secret"


@dataclass(frozen=True)
class NewToken:
    """A token just made: its text and signing secret are shown once and never again."""

    token: ApiToken
    text: str
    signing_secret: str


def token_hash(text: str) -> str:
    return hashlib.sha256(text.strip().encode("utf-8")).hexdigest()


def create_token(store: Store, env: Mapping[str, str], folder: Path, *, person: str | None,
                 name: str = "") -> NewToken:
    """Make a token for `person` (None: an install without sign-in; it sees every run)."""
    text = TOKEN_PREFIX + secrets.token_urlsafe(32)
    record = tokenstore.add_token(store, token_hash=token_hash(text), person=person, name=name)
    return NewToken(record, text, signing_secret(env, folder, record.id))


def signing_secret(env: Mapping[str, str], folder: Path, token_id: str) -> str:
    """The secret a callback of `token_id`'s runs is signed with (HMAC-SHA256 of the body)."""
    key = server_secret(env, folder)
    return "whsec_" + hmac.new(key, token_id.encode("utf-8"), hashlib.sha256).hexdigest()


def server_secret(env: Mapping[str, str], folder: Path) -> bytes:
    """`DEEP_RESEARCH_API_SECRET`, else the random secret in `folder/api-secret` (made once,
    readable by this user only)."""
    configured = (env.get("DEEP_RESEARCH_API_SECRET") or "").strip()
    if configured:
        return configured.encode("utf-8")
    path = folder / SECRET_FILE
    try:
        return path.read_bytes().strip()
    except FileNotFoundError:
        pass
    folder.mkdir(parents=True, exist_ok=True)
    fresh = secrets.token_hex(32).encode("ascii")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first: use theirs
        return path.read_bytes().strip()
    with os.fdopen(fd, "wb") as handle:
        handle.write(fresh)
    return fresh
