"""What an account or a model server allows: the facts the run paces itself by (issue 31).

One `Account` is one provider account as the provider counts it: provider, base URL, a hash of
the key (never the key) and model, since OpenAI and Gemini meter each model apart. Its
`AccountLimits` are learned as the run goes (rate-limit headers, 429 bodies, a local server's
own settings) and are shared by every role and every run of the process, and through the store
by every process on the same key (`AccountBooks`). A field left None is not known yet: nothing
is assumed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, Protocol


@dataclass(frozen=True)
class Account:
    provider: str   # "openai", "gemini", ...
    base_url: str   # as configured ("" for the provider's default)
    key_hash: str   # key_hash(key): the key itself never leaves the credentials
    model: str

    @classmethod
    def of(cls, provider: str, base_url: str | None, key: str | None, model: str) -> Account:
        """The account a provider's client with these settings talks to: the one way to name
        it, so the chat models, the estimate and the store's books all find the same one
        (for the configured ones: `provider`, `config.<provider>_base_url`,
        `credentials.get(provider)` and the role's model)."""
        return cls(provider, base_url or "", key_hash(key), model)

    @property
    def id(self) -> str:
        """One stable text naming the account, fit for a store key or a log line."""
        return f"{self.provider}|{self.base_url}|{self.key_hash}|{self.model}"


def key_hash(key: str | None) -> str:
    """A short, one-way name for an API key (empty for none): enough to tell accounts apart,
    useless for calling the provider."""
    if not key:
        return ""
    return hashlib.sha256(key.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class AccountLimits:
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    requests_per_day: int | None = None
    parallel: int | None = None          # answers the server generates at once (local servers)
    context_tokens: int | None = None    # the model's context window, prompt and answer together
    tokens_per_second: float | None = None  # how fast one answer is written (local servers)
    source: str = ""                     # where these came from, in plain words

    def merged(self, newer: AccountLimits) -> AccountLimits:
        """These limits with every field `newer` knows taken from it."""
        known = {k: v for k, v in vars(newer).items() if v not in (None, "")}
        return replace(self, **known)

    @property
    def known(self) -> bool:
        return any(v is not None for k, v in vars(self).items() if k != "source")


@dataclass(frozen=True)
class RateReport:
    """What one answer (or one refusal) said about the account: its limits and, where the
    provider tells them (OpenAI's `x-ratelimit-*` headers), how much of each is left and in
    how many seconds it is whole again."""

    limits: AccountLimits = AccountLimits()
    remaining_requests: int | None = None
    remaining_tokens: int | None = None
    reset_requests_s: float | None = None
    reset_tokens_s: float | None = None

    @property
    def empty(self) -> bool:
        return not self.limits.known and self.remaining_requests is None \
            and self.remaining_tokens is None


class AccountBooks(Protocol):
    """The store's shared books of the accounts (storage.accounts.AccountsStore); Unix time."""

    def account_limits(self, account_id: str) -> dict[str, Any] | None: ...

    def learn_account(self, account_id: str, limits: Mapping[str, int | None], source: str = "",
                      *, remaining_requests: float | None = None,
                      remaining_tokens: float | None = None, now: float) -> None: ...

    def take_account_turn(self, account_id: str, tokens: int, now: float
                          ) -> tuple[float, str]: ...

    def give_back_tokens(self, account_id: str, tokens: float, now: float) -> None: ...

    def pause_account(self, account_id: str, until: float, *, now: float,
                      drain: str | None = None) -> None: ...


def limit_values(limits: AccountLimits) -> dict[str, int | None]:
    """The limit fields of `limits`, as the books take them."""
    return {f.name: getattr(limits, f.name) for f in fields(AccountLimits) if f.name != "source"}


def limits_of(row: Mapping[str, Any]) -> AccountLimits:
    """AccountLimits from the books' row (its limit fields and `source`)."""
    values = {f.name: row.get(f.name) for f in fields(AccountLimits) if f.name in row}
    return AccountLimits(**{k: v for k, v in values.items() if v is not None})
