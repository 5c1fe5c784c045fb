"""Waiting for the model accounts (issue 31; the pacers are research.llm.pacing): how a wait is
told (`Wait`, `wait_text`) and one run's side of it (`RunWaits`).

A pacer is shared by every run of the process; what a wait means to one run is kept here: the
line the person sees once per wait episode per account (in the terminal, the Run page and the
log), the stop that ends a wait (the run's cancellation and total time limit, nothing else),
how long the run's requests were held, which a step's time limit does not count, and the run's
store, through which the processes on one key share it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import urlsplit

from research.core.errors import BudgetExceeded, RunCancelled
from research.llm.limits import Account, AccountBooks, AccountLimits

log = logging.getLogger(__name__)

Clock = Callable[[], float]
_NAMES = {"openai": "OpenAI", "gemini": "Gemini", "anthropic": "Anthropic"}


@dataclass(frozen=True)
class Wait:
    """One wait episode of one account, as the person is told about it."""

    account: Account
    episode: int
    seconds: float
    text: str


def wait_text(account: Account, limits: AccountLimits, seconds: float, reason: str) -> str:
    """The line a wait episode is told in: whose limit (`reason`: "tokens", "requests",
    "refused"), on which model, and for about how long."""
    who, model = provider_name(account), account.model
    if reason == "tokens" or (reason == "refused" and limits.tokens_per_minute):
        what = f"limit of {limits.tokens_per_minute:,} tokens a minute"
    elif reason == "requests" or (reason == "refused" and limits.requests_per_minute):
        what = f"limit of {limits.requests_per_minute:,} requests a minute"
    else:
        what = "rate limit"
    if who.startswith("the "):  # a server of their own: "the limit ... of the model server"
        return f"Waiting for the {what} of {who} ({model}): {about(seconds)}"
    return f"Waiting for {who}'s {what} on {model}: {about(seconds)}"


def provider_name(account: Account) -> str:
    """The provider as the person knows it: its name, or the host of a server of their own."""
    host = urlsplit(account.base_url).hostname or ""
    if account.provider == "openai" and host.endswith(".openai.azure.com"):
        return "Azure OpenAI"
    if account.provider == "openai" and host and host != "api.openai.com":
        return f"the model server at {host}"
    return _NAMES.get(account.provider, account.provider)


def about(seconds: float) -> str:
    if seconds < 90:
        return f"about {max(1, round(seconds))} s"
    return f"about {round(seconds / 60)} min"




class RunWaits:
    """One run's side of waiting for accounts: the line said once per wait episode per account
    (`say`), the stop check (`cancel`, `until`: the run's total time limit as monotonic time),
    how long the run's requests were held, which `shifted` adds to a step's time limit, and
    the run's store (`books`), through which its pacers share the key with other processes."""

    def __init__(self, say: Callable[[Wait], None] | None = None, *,
                 cancel: threading.Event | None = None, until: Callable[[], float] | None = None,
                 clock: Clock = time.monotonic, books: AccountBooks | None = None) -> None:
        self.books = books  # the store's books, shared by the processes on a key
        self._say = say
        self._cancel = cancel
        self._until = until
        self._clock = clock
        self._lock = threading.Lock()
        self._seen: set[tuple[str, int]] = set()
        self._holding = 0
        self._since = 0.0
        self._held = 0.0
        self._first_seen: dict[float, float] = {}  # a step's deadline -> held time when first seen
        self.lines = 0

    @property
    def bounded(self) -> bool:
        """True inside a run, whose total time limit ends any wait."""
        return self._until is not None

    def notice(self, wait: Wait) -> None:
        with self._lock:
            key = (wait.account.id, wait.episode)
            if key in self._seen:
                return
            self._seen.add(key)
            self.lines += 1
        log.info("%s", wait.text)  # the process's log: one line per wait episode, as shown
        if self._say is not None:
            self._say(wait)

    def check(self) -> None:
        """End a wait: the run was cancelled, or its total time limit has come."""
        if self._cancel is not None and self._cancel.is_set():
            raise RunCancelled("The run was cancelled.")
        if self._until is not None and self._clock() >= self._until():
            raise BudgetExceeded(
                "The run reached its total time limit (TOTAL_TIMEOUT_MS) while it waited for "
                "the model account's rate limit. Everything gathered so far is saved; you can "
                "resume it.")

    @contextmanager
    def holding(self) -> Iterator[None]:
        """A request of the run waiting for its account's turn."""
        with self._lock:
            if self._holding == 0:
                self._since = self._clock()
            self._holding += 1
        try:
            yield
        finally:
            with self._lock:
                self._holding -= 1
                if self._holding == 0:
                    self._held += self._clock() - self._since

    def held(self) -> float:
        """Seconds during which at least one request of the run was held by an account."""
        with self._lock:
            return self._held + (self._clock() - self._since if self._holding else 0.0)

    def shifted(self, deadline: float | None) -> float | None:
        """A step's deadline pushed back by the time the run was held since the step began:
        waiting for the account does not use the step's time limit. A step's deadline is
        first seen at its first model call, made as the step begins; never past `until`."""
        if deadline is None:
            return None
        held = self.held()
        with self._lock:
            first = self._first_seen.setdefault(deadline, held)
            if len(self._first_seen) > 1024:
                self._first_seen.pop(next(iter(self._first_seen)))
        later = deadline + held - first
        return min(later, self._until()) if self._until is not None else later
