"""A request's deadline, held per thread, for the network backends that bound every socket
connect, read and write by what is left of it (research.untrusted.fetch for pages over httpx,
research.llm.deadline for models and search APIs over httpx2). A connection serves one request
at a time, and a sync request is sent and read by the thread that made it."""

from __future__ import annotations

import threading
import time


class ThreadDeadline(threading.local):
    """The deadline (time.monotonic) of the request this thread is sending or reading."""

    value: float | None = None

    def bound(self, timeout: float | None, error: type[Exception]) -> float | None:
        """A socket operation's timeout, cut to what is left; `error` once nothing is."""
        if self.value is None:
            return timeout
        remaining = self.value - time.monotonic()
        if remaining <= 0:
            raise error("the answer did not arrive within the request's time limit")
        return remaining if timeout is None else min(timeout, remaining)
