"""Search APIs paced by what they allow: one pacer per API host, shared by the whole process.

arXiv's terms allow one request every 3 seconds, on one connection at a time
(https://info.arxiv.org/help/api/tou.html), Semantic Scholar one a second, with or without a
key (https://www.semanticscholar.org/product/api), Brave Search one a second on its free plan
(research.search.brave, which also holds its pacer on its X-RateLimit headers). A run's workers search at the same time and
several runs share a process (the dashboard's job manager, a worker), so the pace is kept here,
per API host, not per run: every search of the process waits for its turn at the host's pacer.

Who goes first when several wait: the lowest `rank`, then the first to ask. Searching gives a
unit's first queries the lowest ranks, so each subtopic's best query reaches arXiv before any
subtopic's third one. A request may also withdraw while it waits (its unit no longer needs it):
a withdrawn request is never sent, so it costs the host nothing.

A 429 (or a Retry-After) from a host holds its pacer: no request of the process goes to that
host before the time it said (or, without a time, before a back-off of a few intervals).

Searching (research.phases.gather.searching) takes the turn before a search's time limit starts and
hands it to the thread that sends the request (`granted`); a caller that did not (pre-flight's
ping, Settings' "Test connection") waits inside the provider. Either way the provider sends
inside `turn`, which keeps the rules at the moment of sending: one connection at a time where
the host asks it, and the interval counted from the previous request actually sent.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from research.core.errors import ProviderTimeout

# Seconds between two requests to the host, as documented (links above). A run's
# `search_pace` scales them (ResearchConfig: 1 as documented; tests shorten them).
INTERVALS = {"arxiv": 3.0, "semanticscholar": 1.0, "brave": 1.0}
CONNECTIONS = {"arxiv": 1}  # requests in flight at once, where the host sets a number
# Intervals a 429 without a Retry-After holds the host (arXiv's "Rate exceeded." 429 says
# nothing about how long).
HOLD_WITHOUT_RETRY_AFTER = 4
_POLL_S = 0.25  # how often a waiting request looks at its stop condition


class _Host:
    """The turns of one API host, shared by the whole process."""

    def __init__(self, connections: int | None) -> None:
        self.cond = threading.Condition()
        self.waiting: list[tuple[int, int]] = []  # heap of (rank, ticket)
        self.tickets = itertools.count()
        self.next = 0.0  # time.monotonic() before which no turn is given
        self.last_sent = float("-inf")  # when the last request went out
        self.connections = threading.BoundedSemaphore(connections) if connections else None
        self.learned: float | None = None  # the interval the host's own headers announced


@dataclass(frozen=True, eq=False)
class Pacer:
    """A search provider's way to its host's turns: at most one request every `interval`
    seconds (0: any number, but a 429's hold still applies)."""

    name: str
    interval: float
    _host: _Host

    @property
    def paced(self) -> bool:
        return self.interval > 0

    @property
    def gap(self) -> float:
        """Seconds kept between two requests: the documented interval, or a shorter one the
        host's own headers announced for this key (a paid plan's higher limit)."""
        learned = self._host.learned
        return self.interval if learned is None else min(self.interval, learned)

    def learn(self, requests_per_second: float) -> None:
        """The host says (in its headers) how many requests a second this key may send."""
        if requests_per_second > 0:
            with self._host.cond:
                self._host.learned = 1.0 / requests_per_second

    def wait_turn(self, *, rank: int = 0, deadline: float | None = None,
                  stop: Callable[[], bool] | None = None) -> bool:
        """Wait until it is this request's turn (True), or until `deadline` (a monotonic time)
        passes or `stop()` is true first (False: the request must not be sent)."""
        host = self._host
        with host.cond:
            ticket = (rank, next(host.tickets))
            heapq.heappush(host.waiting, ticket)
            try:
                while True:
                    if stop is not None and stop():
                        return False
                    now = time.monotonic()
                    if deadline is not None and now >= deadline:
                        return False
                    if host.waiting[0] == ticket and now >= host.next:
                        host.next = now + self.gap
                        return True
                    wait = _POLL_S
                    if host.waiting[0] == ticket:
                        wait = min(wait, host.next - now)
                    if deadline is not None:
                        wait = min(wait, deadline - now)
                    host.cond.wait(max(0.0, wait))
            finally:
                if ticket in host.waiting:
                    host.waiting.remove(ticket)
                    heapq.heapify(host.waiting)
                host.cond.notify_all()

    def hold(self, seconds: float | None) -> None:
        """The host asked us to wait (a 429): no request goes before `seconds` from now (None:
        it did not say how long, so a back-off of a few intervals, at least a second)."""
        if seconds is None:
            seconds = max(1.0, HOLD_WITHOUT_RETRY_AFTER * self.gap)
        with self._host.cond:
            self._host.next = max(self._host.next, time.monotonic() + seconds)
            self._host.cond.notify_all()

    def send_now(self, deadline: float) -> bool:
        """Just before a request goes out: wait until the interval since the last request
        sent has passed (a turn's hand-over to the sending thread may have taken a moment),
        then count this one as sent. False if `deadline` comes first."""
        host = self._host
        with host.cond:
            while True:
                now = time.monotonic()
                due = host.last_sent + self.gap
                if now >= due:
                    host.last_sent = now
                    host.next = max(host.next, now + self.gap)
                    return True
                if now >= deadline:
                    return False
                host.cond.wait(min(due, deadline) - now)

    def wake(self) -> None:
        """Let waiting requests look at their stop condition now."""
        with self._host.cond:
            self._host.cond.notify_all()


_HOSTS: dict[tuple[str, str], _Host] = {}
_LOCK = threading.Lock()
_local = threading.local()


def pacer(name: str, base_url: str, scale: float = 1.0, *, official: str = "") -> Pacer:
    """Search API `name`'s way to the process's turns at `base_url`'s host, at `scale` times
    the documented pace. At the API's `official` address the pace can be made longer, never
    shorter (a scale below 1 is for a test's stand-in)."""
    host = urlsplit(base_url).netloc.lower() or base_url
    if official and host == urlsplit(official).netloc.lower():
        scale = max(1.0, scale)
    with _LOCK:
        found = _HOSTS.get((name, host))
        if found is None:
            found = _HOSTS[(name, host)] = _Host(CONNECTIONS.get(name))
    return Pacer(name, INTERVALS.get(name, 0.0) * scale, found)


def forget() -> None:
    """Start afresh, as a new process would (tests: no hold left by another test's 429)."""
    with _LOCK:
        _HOSTS.clear()


def pacer_of(provider: Any) -> Pacer | None:
    """The pacer a search provider sends through, if it has one."""
    found = getattr(provider, "pace", None)
    return found if isinstance(found, Pacer) else None


@contextmanager
def granted(pace: Pacer | None) -> Iterator[None]:
    """This thread's next request to `pace`'s host already has its turn (taken by the caller
    before the request's time limit started)."""
    _local.granted = pace
    try:
        yield
    finally:
        _local.granted = None


@contextmanager
def turn(pace: Pacer, timeout: float, label: str) -> Iterator[None]:
    """Send one request to `pace`'s host inside this block: with the turn granted to this
    thread, or else after waiting for one; on a connection of its own where the host limits
    them; never sooner than the interval after the previous request. ProviderTimeout if
    that does not come within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    if getattr(_local, "granted", None) is pace:
        _local.granted = None
    elif not pace.wait_turn(deadline=deadline):
        raise _late(pace, timeout, label)
    connections = pace._host.connections
    if connections is not None and not connections.acquire(
            timeout=max(0.0, deadline - time.monotonic())):
        raise _late(pace, timeout, label)
    try:
        if not pace.send_now(deadline):
            raise _late(pace, timeout, label)
        yield
    finally:
        if connections is not None:
            connections.release()


def _late(pace: Pacer, timeout: float, label: str) -> ProviderTimeout:
    return ProviderTimeout(
        f"{label} allows one request every {pace.gap:g} s, and this search's turn did not "
        f"come within {timeout:.0f} s.", provider=pace.name)
