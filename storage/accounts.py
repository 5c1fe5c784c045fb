"""The model accounts' books: one row per account, shared by every process on the key (issue 31).

Workers and dashboards that use one key share its limits: what the account allows (learned
from the provider's answers by any of them) and how much of its minute is spoken for. Each
process's pacer (`research.llm.pacing`) takes its turn here in one short transaction: read the
row (locked: `FOR UPDATE` on PostgreSQL, where SQLAlchemy's SQLite dialect leaves it out and
`BEGIN IMMEDIATE` already holds the write lock), refill the buckets to now, and either reserve
the request or say how long to wait. The key itself is never stored: the row is named by
`research.llm.limits.Account.id`, which holds only a hash of it. Times are Unix time, the one
clock the processes share.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import bindparam, select, update

from storage.base import StoreBase
from storage.dialects import insert_for
from storage.migrations import utc_now
from storage.schema import account_books

MINUTE_S = 60.0
LIMIT_FIELDS = ("requests_per_minute", "tokens_per_minute", "requests_per_day", "parallel",
                "context_tokens")
_BOOK = account_books.c
_LOCKED = select(account_books).where(_BOOK.account_id == bindparam("account_id")).with_for_update()
_READ = select(account_books).where(_BOOK.account_id == bindparam("account_id"))


class AccountsStore(StoreBase):
    """The accounts' shared books (see the module docstring)."""

    def account_limits(self, account_id: str) -> dict[str, Any] | None:
        """What the books know the account allows (LIMIT_FIELDS and `source`), or None."""
        row = self.query_one(_READ, {"account_id": account_id})
        if row is None:
            return None
        return {name: row[name] for name in (*LIMIT_FIELDS, "source")}

    def learn_account(self, account_id: str, limits: Mapping[str, int | None], source: str = "",
                      *, remaining_requests: float | None = None,
                      remaining_tokens: float | None = None, now: float) -> None:
        """Record what is known of the account's limits (a field None: unchanged) and, where
        the provider said it, how much of each is left (the books never hold more)."""
        known = {k: v for k, v in limits.items() if k in LIMIT_FIELDS and v is not None}
        with self.transaction() as tx:
            row = tx.execute(_LOCKED, {"account_id": account_id}).mappings().first()
            if row is None:
                fresh = {"account_id": account_id, **known, "source": source,
                         "requests_level": float(known.get("requests_per_minute") or 0),
                         "tokens_level": float(known.get("tokens_per_minute") or 0),
                         "stamp": now, "paused_until": 0.0, "updated_at": utc_now()}
                tx.execute(insert_for(self.dialect, account_books).values(fresh)
                           .on_conflict_do_nothing())
                row = tx.execute(_LOCKED, {"account_id": account_id}).mappings().first()
                if row is None:
                    return
            merged = {**{k: row[k] for k in LIMIT_FIELDS}, **known}
            requests, tokens = _refilled(row, now)
            rpm, tpm = merged["requests_per_minute"], merged["tokens_per_minute"]
            if rpm and row["requests_per_minute"] is None:
                requests = float(rpm)
            if tpm and row["tokens_per_minute"] is None:
                tokens = float(tpm)
            if remaining_requests is not None:
                requests = min(requests, remaining_requests)
            if remaining_tokens is not None:
                tokens = min(tokens, remaining_tokens)
            tx.execute(update(account_books).where(_BOOK.account_id == account_id).values(
                **known, source=source or row["source"],
                requests_level=min(requests, float(rpm or requests)),
                tokens_level=min(tokens, float(tpm or tokens)), stamp=now,
                updated_at=utc_now()))

    def take_account_turn(self, account_id: str, tokens: int, now: float) -> tuple[float, str]:
        """Reserve one request of `tokens` if the account's minute has room: (0, ""); else the
        seconds until it may and the limit that holds it ("tokens", "requests", "refused").
        An account the books know nothing of holds nothing back."""
        with self.transaction() as tx:
            row = tx.execute(_LOCKED, {"account_id": account_id}).mappings().first()
            if row is None:
                return 0.0, ""
            requests, tokens_left = _refilled(row, now)
            rpm, tpm = row["requests_per_minute"], row["tokens_per_minute"]
            wait, reason = 0.0, ""
            if row["paused_until"] > now:
                wait, reason = row["paused_until"] - now, "refused"
            elif rpm and requests < 1:
                wait, reason = (1 - requests) * MINUTE_S / rpm, "requests"
            elif tpm and tokens_left < min(tokens, tpm):
                wait, reason = (min(tokens, tpm) - tokens_left) * MINUTE_S / tpm, "tokens"
            else:
                requests -= 1
                tokens_left -= tokens
            tx.execute(update(account_books).where(_BOOK.account_id == account_id).values(
                requests_level=requests, tokens_level=tokens_left, stamp=now))
            return wait, reason

    def give_back_tokens(self, account_id: str, tokens: float, now: float) -> None:
        """An answer used `tokens` fewer than its turn reserved (more, if negative)."""
        with self.transaction() as tx:
            row = tx.execute(_LOCKED, {"account_id": account_id}).mappings().first()
            if row is None:
                return
            requests, tokens_left = _refilled(row, now)
            tpm = row["tokens_per_minute"]
            tokens_left += tokens
            tx.execute(update(account_books).where(_BOOK.account_id == account_id).values(
                requests_level=requests,
                tokens_level=min(tokens_left, float(tpm)) if tpm else tokens_left, stamp=now))

    def pause_account(self, account_id: str, until: float, *, now: float,
                      drain: str | None = None) -> None:
        """The provider refused a request: no process sends before `until`, and the bucket it
        named ("tokens", "requests"; None: both) is spent."""
        with self.transaction() as tx:
            row = tx.execute(_LOCKED, {"account_id": account_id}).mappings().first()
            if row is None:
                return
            requests, tokens_left = _refilled(row, now)
            if drain in (None, "requests"):  # spent until `until`, when the next one fits
                rpm = row["requests_per_minute"]
                requests = min(requests, 1.0 - (until - now) * rpm / MINUTE_S if rpm else 0.0)
            if drain in (None, "tokens"):
                tokens_left = min(tokens_left, 0.0)
            tx.execute(update(account_books).where(_BOOK.account_id == account_id).values(
                requests_level=requests, tokens_level=tokens_left, stamp=now,
                paused_until=max(float(row["paused_until"]), until)))


def _refilled(row: Mapping[str, Any], now: float) -> tuple[float, float]:
    """The row's request and token levels refilled from its stamp to `now` (each bucket
    refills continuously at its per-minute limit, up to it)."""
    elapsed = max(0.0, now - float(row["stamp"]))
    levels = []
    for level, limit in ((row["requests_level"], row["requests_per_minute"]),
                         (row["tokens_level"], row["tokens_per_minute"])):
        levels.append(min(float(limit), float(level) + elapsed * limit / MINUTE_S)
                      if limit else float(level))
    return levels[0], levels[1]
