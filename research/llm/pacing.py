"""Pacing model requests to what the account allows (issue 31): the pacer behind the model call's
`AccountTurn` layer (research.llm.turns).

Outside calls are paced by what the other side allows, the way smolagents' `ApiModel` composes
a rate limiter, instead of being left to retries. One `Pacer` per `Account` in the process
(`pacer_for`), shared by every role of every run on that account:

- Before a request goes out it takes its turn (`acquire`): a token bucket for requests and one
  for tokens (the prompt's estimate plus the answer expected), each refilled continuously at
  the account's per-minute limit, which is how OpenAI documents its own limiter
  (https://platform.openai.com/docs/guides/rate-limits: limits "replenish continuously",
  requests are counted with their estimated tokens, and refused requests count too). A
  request that would be refused waits here, in order, where no time limit of its own runs.
- After the answer, `settle` gives back what the estimate over-counted and learns from what
  the provider said (OpenAI's `x-ratelimit-*` headers on every answer: limits, what is left,
  when it is whole again).
- A refusal (429) pauses the account for as long as the provider asked (Retry-After,
  `retry-after-ms`, "Please try again in 1.9s", Gemini's RetryInfo), else a doubling back-off;
  while the limits are unknown it also halves the requests in flight, which then grow back
  one per answered window (AIMD), and are forgotten after a quiet minute.

Several processes on one key (a team's workers and dashboards) share its limits through the
store's books (`storage.accounts`, `research.llm.limits.AccountBooks`): once a pacer is `share`d with them it
takes each turn there too, in one short transaction, and tells them what it learns; if the
books fail, it goes on alone.

Waiting our turn is not failing: `acquire` waits as long as it takes, stopped only by its
`check` (the run's cancellation and total time limit: `research.llm.waits.RunWaits.check`,
one run's view of the waits: one line per wait episode per account, and how long the run's
calls were held, which a step's time limit does not count). A wait is told in one line per
episode (`research.llm.waits.Wait`); the buckets are `research.llm.buckets`.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from research.llm.buckets import MINUTE_S, Bucket, sized
from research.llm.limits import (
    Account,
    AccountBooks,
    AccountLimits,
    RateReport,
    limit_values,
    limits_of,
)
from research.llm.waits import Clock, Wait, wait_text

log = logging.getLogger(__name__)

POLL_S = 0.25              # how often a waiting request looks at cancellation and the time limit
WAIT_LINE_MIN_S = 5.0      # a shorter wait is not worth a line of its own
EPISODE_GAP_S = 60.0       # a wait this soon after the last one continues its episode (no new line)
BACKOFF_FIRST_S = 1.0      # the pause after a refusal that did not say how long to wait, doubled
BACKOFF_MAX_S = 60.0       # per refusal in a row, up to this
WINDOW_FORGET_S = 60.0     # the in-flight cap learned from refusals lapses after a quiet minute
WINDOW_MAX = 256.0
PROMPT_SHARE = 0.9         # of the per-minute tokens, what one request's prompt and answer may use

_LIMIT_REASONS = ("tokens", "requests", "refused")


@dataclass(frozen=True)
class Ticket:
    """One request's turn: what it reserved, and the pacer's reservation counts just after it,
    so a later answer's headers can be read against what was sent since."""

    tokens: int
    sent: float
    tokens_mark: float
    requests_mark: int


class _Waiter:
    """A request waiting its turn (its place in the queue)."""

    def __init__(self, tokens: int) -> None:
        self.tokens = tokens


class Pacer:
    """The turn-taking of one account's requests (see the module docstring); thread-safe."""

    def __init__(self, account: Account, *, clock: Clock = time.monotonic,
                 limits: AccountLimits | None = None, wall: Clock = time.time) -> None:
        self.account = account
        self._clock = clock
        self._wall = wall                  # the books' clock (Unix time, shared by processes)
        self._books: AccountBooks | None = None
        self._cond = threading.Condition()
        self.limits = AccountLimits()
        self._requests: Bucket | None = None
        self._tokens: Bucket | None = None
        self._paused_until = 0.0
        self._refusals = 0                 # refusals in a row that did not say how long to wait
        self._window: float | None = None  # requests in flight allowed, learned from refusals
        self._last_refusal = -math.inf
        self._in_flight = 0
        self._queue: deque[_Waiter] = deque()
        self._reserved_tokens = 0.0        # every reservation ever made (headers are read against it)
        self._reserved_requests = 0
        self.episode = 0
        self._notice: Wait | None = None
        self._last_wait = -math.inf
        self.refused_total = 0             # refusals received (the benchmark shows them)
        if limits is not None and limits.known:
            self.learn(limits)

    # -- what the account allows ---------------------------------------------------------

    def learn(self, limits: AccountLimits) -> None:
        """Take in what is now known about the account's limits (headers, a refusal's body,
        a local server's settings, another process through the store)."""
        with self._cond:
            self._learn(limits, self._clock())
            self._cond.notify_all()
        self._to_books(lambda books: books.learn_account(
            self.account.id, limit_values(limits), limits.source, now=self._wall()))

    def share(self, books: AccountBooks) -> None:
        """Take turns through the store's books from now on (the same books: nothing to do),
        starting from what they already know of the account."""
        if books is self._books:
            return
        try:
            known = books.account_limits(self.account.id)
        except Exception:  # noqa: BLE001 - the books are an aid: without them, pace alone
            log.warning("the account books could not be read; pacing %s alone",
                        self.account.model, exc_info=True)
            return
        with self._cond:
            self._books = books
            if known:
                self._learn(limits_of(known), self._clock())
        if self.limits.known and not known:
            self._to_books(lambda b: b.learn_account(
                self.account.id, limit_values(self.limits), self.limits.source,
                now=self._wall()))

    def _to_books(self, write: Callable[[AccountBooks], None]) -> None:
        """One write to the books, if shared; a failing store leaves this pacer alone."""
        books = self._books
        if books is None:
            return
        try:
            write(books)
        except Exception:  # noqa: BLE001 - the books are an aid: without them, pace alone
            log.warning("the account books failed; pacing %s alone", self.account.model,
                        exc_info=True)
            with self._cond:
                if self._books is books:
                    self._books = None

    def _learn(self, limits: AccountLimits, now: float) -> None:
        self.limits = self.limits.merged(limits)
        self._requests = sized(self._requests, self.limits.requests_per_minute, now)
        self._tokens = sized(self._tokens, self.limits.tokens_per_minute, now)

    def metered(self, input_tokens: int, output_tokens: int) -> int:
        """The tokens a request counts against the account's tokens a minute: Gemini counts
        input tokens only ("TPM (input tokens per minute)",
        https://ai.google.dev/gemini-api/docs/rate-limits), and so does the bucket Anthropic's
        input tokens a minute fill (ITPM, research/llm/anthropic_llm.py); OpenAI prompt and
        answer."""
        input_only = self.account.provider in ("gemini", "anthropic")
        return input_tokens + (0 if input_only else output_tokens)

    def max_request_tokens(self) -> int | None:
        """The most tokens (prompt and answer) one request may carry: a request larger than
        the per-minute token limit would be refused however long it waited."""
        tpm = self.limits.tokens_per_minute
        return None if tpm is None else int(tpm * PROMPT_SHARE)

    # -- taking a turn ---------------------------------------------------------------------

    def try_acquire(self, tokens: int) -> Ticket | float:
        """A turn now, or the seconds until one may be free (math.inf: when a request in
        flight ends). Never waits; `acquire` is the waiting form."""
        with self._cond:
            now = self._clock()
            seconds, _ = self._delay(tokens, now)
            if seconds > 0 or self._queue:
                return seconds if seconds > 0 else POLL_S
            return self._reserve(tokens, now)

    def acquire(self, tokens: int, *, check: Callable[[], None] | None = None,
                on_wait: Callable[[Wait], None] | None = None) -> Ticket:
        """Wait, in order of arrival, until a request of `tokens` fits what the account allows;
        reserve it. `check` may end the wait by raising (cancellation, the run's time limit);
        `on_wait` hears of the wait episode this one belongs to (called outside the lock)."""
        me = _Waiter(tokens)
        with self._cond:
            self._queue.append(me)
        try:
            while True:
                with self._cond:
                    now = self._clock()
                    if self._queue[0] is me:
                        seconds, reason = self._delay(tokens, now)
                        if seconds <= 0:
                            return self._reserve(tokens, now)
                    else:
                        seconds, reason = math.inf, "queue"
                    notice = self._noticed(seconds, reason, now)
                if notice is not None and on_wait is not None:
                    on_wait(notice)
                if check is not None:
                    check()
                with self._cond:
                    self._cond.wait(max(0.001, min(seconds, POLL_S)))
        finally:
            with self._cond:
                if me in self._queue:
                    self._queue.remove(me)
                self._cond.notify_all()

    def _delay(self, tokens: int, now: float) -> tuple[float, str]:
        """Seconds until a request of `tokens` may go, and which limit holds it."""
        if self._paused_until > now:
            return self._paused_until - now, "refused"
        cap = self._cap(now)
        if cap is not None and self._in_flight >= cap:
            return math.inf, "parallel"
        if self._requests is not None:
            self._requests.refill(now)
            wait = self._requests.seconds_until(1)
            if wait > 0:
                return wait, "requests"
        if self._tokens is not None:
            self._tokens.refill(now)
            wait = self._tokens.seconds_until(tokens)
            if wait > 0:
                return wait, "tokens"
        if self._books is not None:  # the other processes on the key: their turns too
            try:
                return self._books.take_account_turn(self.account.id, tokens, self._wall())
            except Exception:  # noqa: BLE001 - the books are an aid: without them, pace alone
                log.warning("the account books failed; pacing %s alone", self.account.model,
                            exc_info=True)
                self._books = None
        return 0.0, ""

    def _cap(self, now: float) -> int | None:
        """Requests in flight allowed: the server's own bound and what refusals taught."""
        if self._window is not None and now - self._last_refusal > WINDOW_FORGET_S:
            self._window = None
        caps = [c for c in (self.limits.parallel,
                            None if self._window is None else int(self._window)) if c]
        return max(1, min(caps)) if caps else None

    def _reserve(self, tokens: int, now: float) -> Ticket:
        if self._requests is not None:
            self._requests.level -= 1
        if self._tokens is not None:
            self._tokens.level -= tokens
        self._in_flight += 1
        self._reserved_tokens += tokens
        self._reserved_requests += 1
        return Ticket(tokens, now, self._reserved_tokens, self._reserved_requests)

    # -- after the answer ------------------------------------------------------------------

    def settle(self, ticket: Ticket, used_tokens: int, report: RateReport | None = None) -> None:
        """The request was answered: it used `used_tokens` (prompt and answer), and the
        provider said `report` about the account."""
        with self._cond:
            now = self._clock()
            self._in_flight = max(0, self._in_flight - 1)
            if self._tokens is not None:
                self._tokens.refill(now)
                self._tokens.level = min(self._tokens.capacity,
                                         self._tokens.level + ticket.tokens - used_tokens)
            self._refusals = 0
            if self._window is not None:
                self._window += 1 / self._window
                if self._window >= WINDOW_MAX:
                    self._window = None
            if report is not None:
                self._read(report, ticket, now)
            self._cond.notify_all()
        if self._books is not None:
            spare = ticket.tokens - used_tokens
            if spare:
                self._to_books(lambda b: b.give_back_tokens(self.account.id, spare, self._wall()))
            if report is not None:
                self._report_to_books(report, self._clock() - ticket.sent)

    def _report_to_books(self, report: RateReport, since_s: float) -> None:
        """What the provider said, for the other processes: the limits, and what was left
        when it counted the request, refilled since (`since_s` seconds ago)."""
        rpm, tpm = self.limits.requests_per_minute, self.limits.tokens_per_minute

        def left(count: int | None, limit: int | None) -> float | None:
            if count is None:
                return None
            return count + (limit or 0) * since_s / MINUTE_S

        self._to_books(lambda b: b.learn_account(
            self.account.id, limit_values(report.limits), report.limits.source,
            remaining_requests=left(report.remaining_requests, rpm),
            remaining_tokens=left(report.remaining_tokens, tpm), now=self._wall()))

    def release(self, ticket: Ticket) -> None:
        """The request failed for a reason that says nothing about the limits: it counts as
        sent (refused requests count towards OpenAI's limits too), as estimated."""
        with self._cond:
            self._in_flight = max(0, self._in_flight - 1)
            self._cond.notify_all()

    def refused(self, ticket: Ticket | None, *, retry_after: float | None = None,
                report: RateReport | None = None, limit: str | None = None) -> float:
        """The provider refused a request for its rate limit (429): pause the account for
        as long as it asked, or a doubling back-off; `limit` ("tokens", "requests") says
        which one it named. Returns the pause in seconds."""
        with self._cond:
            now = self._clock()
            in_flight = self._in_flight
            if ticket is not None:
                self._in_flight = max(0, self._in_flight - 1)
            self.refused_total += 1
            if report is not None:
                self._read(report, ticket, now)
            if retry_after is None:
                self._refusals += 1
                retry_after = min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** (self._refusals - 1))
            if self._requests is None and self._tokens is None and now >= self._paused_until:
                # Limits unknown: fewer at once, growing back as answers come (AIMD); halved
                # once per burst (the refusals of one pause are one signal, not several).
                self._window = max(1.0, in_flight / 2)
            self._last_refusal = now
            if self._requests is not None and limit in (None, "requests"):
                # The minute's requests are spent until the pause ends, when the next one
                # fits: the provider's wait is for one request (Gemini's RetryInfo, OpenAI's
                # "try again in"), so the bucket holds it no longer than that (emptied, it
                # would hold it a whole request's refill past the pause: 6 s at 10 a minute).
                self._requests.refill(now)
                self._requests.level = min(self._requests.level,
                                           1.0 - retry_after * self._requests.rate)
            if self._tokens is not None and limit in (None, "tokens"):
                self._tokens.refill(now)
                self._tokens.level = min(self._tokens.level, 0.0)  # someone else spent it
            self._paused_until = max(self._paused_until, now + retry_after)
            self._cond.notify_all()
        if self._books is not None:
            if report is not None:
                self._report_to_books(report, 0.0)
            pause = retry_after
            self._to_books(lambda b: b.pause_account(self.account.id, self._wall() + pause,
                                                     now=self._wall(), drain=limit))
        return retry_after

    def _read(self, report: RateReport, ticket: Ticket | None, now: float) -> None:
        """Take the provider's count of what is left as the truth, moved on by what refilled
        since the request was counted and less what was reserved after it."""
        self._learn(report.limits, now)
        sent = ticket.sent if ticket is not None else now
        for bucket, left, since in (
            (self._requests, report.remaining_requests,
             self._reserved_requests - ticket.requests_mark if ticket else 0),
            (self._tokens, report.remaining_tokens,
             self._reserved_tokens - ticket.tokens_mark if ticket else 0),
        ):
            if bucket is None or left is None:
                continue
            bucket.refill(now)
            bucket.level = min(bucket.capacity, left + bucket.rate * (now - sent) - since)

    # -- telling the person ----------------------------------------------------------------

    def _noticed(self, seconds: float, reason: str, now: float) -> Wait | None:
        """The wait episode a waiting request belongs to, if it is worth a line: one opens
        when the requests waiting must wait WAIT_LINE_MIN_S or more for a limit (all of
        them: each one's own wait may be short while the queue's is long), and goes on while
        requests keep waiting (less than EPISODE_GAP_S apart)."""
        if reason in _LIMIT_REASONS:
            seconds = max(seconds, self._drain_s(now))
            fresh = self._notice is None or now - self._last_wait > EPISODE_GAP_S
            self._last_wait = now
            if fresh and seconds >= WAIT_LINE_MIN_S:
                self.episode += 1
                self._notice = Wait(self.account, self.episode, seconds,
                                    wait_text(self.account, self.limits, seconds, reason))
        if self._notice is not None and now - self._last_wait <= EPISODE_GAP_S:
            return self._notice
        return None

    def _drain_s(self, now: float) -> float:
        """Seconds until every request waiting now could have gone, by the known limits."""
        longest = 0.0
        for bucket, wanted in ((self._requests, float(len(self._queue))),
                               (self._tokens, float(sum(w.tokens for w in self._queue)))):
            if bucket is not None:
                bucket.refill(now)
                longest = max(longest, (wanted - bucket.level) / bucket.rate)
        return longest

# -- the process's pacers ---------------------------------------------------------------------

_PACERS: dict[str, Pacer] = {}
_PACERS_LOCK = threading.Lock()


def pacer_for(account: Account) -> Pacer:
    """The one pacer of `account` in this process."""
    with _PACERS_LOCK:
        pacer = _PACERS.get(account.id)
        if pacer is None:
            pacer = _PACERS[account.id] = Pacer(account)
        return pacer


def known_limits(account: Account, books: AccountBooks | None = None) -> AccountLimits:
    """The best-known limits of `account`: this process's pacer's, else the store's books
    (another process learned them), else nothing (all None)."""
    with _PACERS_LOCK:
        pacer = _PACERS.get(account.id)
    if pacer is not None and pacer.limits.known:
        return pacer.limits
    if books is not None:
        try:
            known = books.account_limits(account.id)
        except Exception:  # noqa: BLE001 - an estimate without the store's help
            log.warning("the account books could not be read", exc_info=True)
            known = None
        if known:
            return limits_of(known)
    return AccountLimits()


def forget_pacers() -> None:
    """Forget every account's learned limits and pauses (tests start from a clean process)."""
    with _PACERS_LOCK:
        _PACERS.clear()
