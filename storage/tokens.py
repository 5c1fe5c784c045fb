"""The HTTP API's bearer tokens and its runs' callbacks (issue 34; `research.api`).

Why it looks like this:
- a token is stored only as the SHA-256 of its text: a token is 32 random bytes, so a fast
  hash is as safe as a slow one (GitHub does the same) and the per-request check is one
  indexed read. The text is shown once, when it is made, and never again;
- a token acts as its person (`api_tokens.person`, the same identity as `runs.person`;
  NULL: an install without sign-in, where one person sees every run, as in the dashboard);
- revoking keeps the row (marked), so `token list` can say when; a revoked token never
  authenticates again;
- a run started with a callback address gets a row in `api_callbacks` that the API server's
  watcher reads, so a restarted server still sends the POSTs it owes.

Functions take a `storage.Store` and use its connections, like `storage.documents`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import bindparam, insert, select, update

from storage.migrations import utc_now
from storage.rows import Row
from storage.schema import api_callbacks, api_tokens
from storage.store import Store

_T = api_tokens.c
_C = api_callbacks.c
_BY_HASH = select(api_tokens).where(_T.token_hash == bindparam("token_hash"),
                                    _T.revoked_at.is_(None))
MAX_NAME = 80


@dataclass(frozen=True, slots=True)
class ApiToken:
    """A token as stored: never its text, only whose it is and when it was used."""

    id: str
    person: str | None
    name: str = ""
    created_at: str = ""
    last_used_at: str | None = None
    revoked_at: str | None = None


@dataclass(frozen=True, slots=True)
class Callback:
    """A run whose person asked for a POST when it ends or waits for them."""

    run_id: str
    token_id: str
    url: str
    notified: str = ""
    attempts: int = 0
    last_error: str | None = None


def _token(row: Row) -> ApiToken:
    return ApiToken(id=row["id"], person=row["person"] or None, name=row["name"] or "",
                    created_at=row["created_at"], last_used_at=row["last_used_at"],
                    revoked_at=row["revoked_at"])


def add_token(store: Store, *, token_hash: str, person: str | None, name: str = "") -> ApiToken:
    """Store a new token's hash for `person`; returns the record (its id names it later)."""
    token_id = "tok_" + uuid.uuid4().hex[:10]
    now = utc_now()
    clean = " ".join(store.clean_content(name or "").split())[:MAX_NAME]
    with store.transaction() as tx:
        tx.execute(insert(api_tokens).values(
            id=token_id, token_hash=token_hash, person=person or None, name=clean,
            created_at=now))
    return ApiToken(id=token_id, person=person or None, name=clean, created_at=now)


def find_token(store: Store, token_hash: str) -> ApiToken | None:
    """The live (not revoked) token with this hash, or None."""
    row = store.query_one(_BY_HASH, {"token_hash": token_hash})
    return _token(row) if row else None


def get_token(store: Store, token_id: str) -> ApiToken | None:
    """The token with this id, revoked or not."""
    row = store.query_one(select(api_tokens).where(_T.id == token_id))
    return _token(row) if row else None


def list_tokens(store: Store, *, person: str | None = None) -> list[ApiToken]:
    """Tokens newest first; with `person`, only theirs (None: every token)."""
    query = select(api_tokens).order_by(_T.created_at.desc(), _T.id)
    if person is not None:
        query = query.where(_T.person == person)
    return [_token(row) for row in store.query(query)]


def revoke_token(store: Store, token_id: str, *, person: str | None = None) -> bool:
    """Revoke a token (of `person`, when given). False: no such live token of theirs."""
    clauses = [_T.id == token_id, _T.revoked_at.is_(None)]
    if person is not None:
        clauses.append(_T.person == person)
    with store.transaction() as tx:
        gone = tx.execute(update(api_tokens).where(*clauses).values(revoked_at=utc_now())
                          .returning(_T.id)).first()
    return gone is not None


def mark_token_used(store: Store, token_id: str) -> None:
    with store.transaction() as tx:
        tx.execute(update(api_tokens).where(_T.id == token_id).values(last_used_at=utc_now()))


# -- callbacks ---------------------------------------------------------------------------

def watch_run(store: Store, run_id: str, *, token_id: str, url: str) -> None:
    """Remember that `run_id`'s person wants a POST at `url` (signed for `token_id`)."""
    with store.transaction() as tx:
        tx.execute(insert(api_callbacks).values(run_id=run_id, token_id=token_id, url=url,
                                                updated_at=utc_now()))


def watched_runs(store: Store) -> list[Callback]:
    """Every run whose callbacks are not finished yet."""
    rows = store.query(select(api_callbacks).where(_C.done == 0).order_by(_C.updated_at))
    return [Callback(run_id=r["run_id"], token_id=r["token_id"], url=r["url"],
                     notified=r["notified"] or "", attempts=int(r["attempts"] or 0),
                     last_error=r["last_error"]) for r in rows]


def claim_callback(store: Store, run_id: str, *, seen: str, state: str) -> bool:
    """Take the POST for `state` (the run's last notified state still `seen`): True for the
    one process that gets it, so several API servers on one store send it once."""
    with store.transaction() as tx:
        won = tx.execute(update(api_callbacks)
                         .where(_C.run_id == run_id, _C.notified == seen, _C.done == 0)
                         .values(notified=state, updated_at=utc_now())
                         .returning(_C.run_id)).first()
    return won is not None


def record_callback(store: Store, run_id: str, *, notified: str, done: bool,
                    attempts: int, error: str | None = None) -> None:
    """What the watcher did for the run: the state it POSTed (or gave up on) last."""
    with store.transaction() as tx:
        tx.execute(update(api_callbacks).where(_C.run_id == run_id).values(
            notified=notified, done=1 if done else 0, attempts=attempts,
            last_error=store.redacted(error), updated_at=utc_now()))
