"""A model request's time limits: the innermost layer of the model seam, and the deadlines under it.

`Deadline` sends the provider's one request under its own time limit (the role's
`call_timeout`, or what is left of the step's, counted once the request has its turn);
`run_with_deadline` bounds any blocking call's wall-clock time, whatever its sockets do; and
`DeadlineTransport` bounds a request's whole answer, however slowly its bytes arrive.

Both SDKs (openai, google-genai) and the search APIs' client (research.search._http) send
through httpx2, whose timeouts bound each read: a server that sends a byte every few seconds
never trips them, and a thread that an outer limit gave up on (`run_with_deadline`) would read
on, keeping the CLI from exiting and a worker's slot taken (issue 40). This transport takes the request's own timeout as the limit for
the whole exchange. Its network backend bounds every socket connect, read and write by what is
left of that limit, so a server trickling its status line and headers is cut off as surely as
one trickling its body; past the limit the SDK's read timeout is raised and the response is
closed, which closes its connection (an answer not read to its end is never pooled).
research.untrusted.fetch bounds page reads the same way, for httpx.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, TypeVar

import httpcore2
import httpx2

from research.core.deadlines import ThreadDeadline
from research.core.errors import ProviderTimeout, StepTimeLimit
from research.llm.messages import Completion, Request
from research.llm.tls import shared_tls_context
from research.llm.waits import RunWaits

T = TypeVar("T")


@dataclass(frozen=True)
class Deadline:
    """The provider's one request under its own time limit: the role's `call_timeout`, or
    what is left of the step's (pushed back by the time the run was held by its accounts),
    whichever ends first. A request the step's limit cut short fails as the step's."""

    complete: Callable[[Request, float], Completion]  # the provider's request, with its timeout
    who: str                                          # "The writer model (openai/gpt-5-mini)"
    call_timeout: float
    waits: RunWaits
    # The run's `calls` layer (research.core.executor), looked up at each call: the executor renews
    # its pools between phases. None (outside a run): a thread of the call's own.
    calls: Callable[[], Executor] | None = None

    def __call__(self, request: Request) -> Completion:
        limit = self.call_timeout
        deadline = self.waits.shifted(request.deadline)
        step_bound = deadline is not None and deadline - time.monotonic() < limit
        if deadline is not None:
            limit = min(limit, deadline - time.monotonic())
        if limit <= 0:
            raise StepTimeLimit(f"{self.who} could not be asked: the step's time limit "
                                "(STEP_TIMEOUT_MS) had run out.")
        try:
            return run_with_deadline(lambda: self.complete(request, limit), limit, self.who,
                                     self.calls() if self.calls is not None else None)
        except ProviderTimeout:
            if step_bound:  # the step's limit, not the model, cut the call short
                raise StepTimeLimit(f"{self.who} did not answer before the step's time "
                                    "limit (STEP_TIMEOUT_MS) ran out.") from None
            raise


_bounded = threading.local()  # set in a thread while it runs a call under a wall-clock limit


def run_with_deadline(fn: Callable[[], T], seconds: float, what: str,
                      pool: Executor | None = None) -> T:
    """Run `fn` with a wall-clock limit, so a trickling or hung socket cannot stall a step.

    Socket timeouts only bound each read; a server that sends a byte every few seconds
    never trips them (nor do the SDKs' own `timeout` options: openai's and google-genai's
    are httpx timeouts, per read). So the call runs in another thread: the run's `calls`
    layer (`pool`, see research.core.executor) or, outside a run, a daemon thread of its own. If
    the limit passes we stop waiting; the abandoned call ends when its socket times out.
    Already inside such a call (a provider bounding its own request), `fn` runs inline: the
    outer limit covers it, and a second thread would be a call waiting on a call.
    """
    if getattr(_bounded, "active", False):
        return fn()

    def target() -> T:
        _bounded.active = True
        try:
            return fn()
        finally:
            _bounded.active = False

    future: Future[T]
    if pool is not None:
        future = pool.submit(target)
    else:
        future = Future()
        threading.Thread(target=_settle, args=(future, target), name=f"deadline:{what}",
                         daemon=True).start()
    try:
        return future.result(timeout=max(0.0, seconds))
    except FutureTimeout:
        future.cancel()  # not started yet (a full layer): it never will be
        shown = f"{seconds:.0f}" if seconds >= 10 else f"{seconds:.1f}"
        raise ProviderTimeout(f"{what} did not answer within {shown} s.") from None


def _settle(future: Future[T], fn: Callable[[], T]) -> None:
    """`fn`'s value or error into `future` (the thread of a call run outside a run); nothing
    if the caller gave up before the thread began."""
    if not future.set_running_or_notify_cancel():
        return
    try:
        future.set_result(fn())
    except BaseException as exc:  # noqa: BLE001 - re-raised by future.result in the caller
        future.set_exception(exc)


class _BoundedStream(httpcore2.NetworkStream):
    def __init__(self, inner: httpcore2.NetworkStream, deadline: ThreadDeadline) -> None:
        self._inner = inner
        self._deadline = deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, self._deadline.bound(timeout, httpcore2.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._deadline.bound(timeout, httpcore2.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore2.NetworkStream:
        inner = self._inner.start_tls(ssl_context, server_hostname,
                                      self._deadline.bound(timeout, httpcore2.ConnectTimeout))
        return _BoundedStream(inner, self._deadline)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _BoundedBackend(httpcore2.NetworkBackend):
    def __init__(self, deadline: ThreadDeadline) -> None:
        self._deadline = deadline
        self._inner = httpcore2.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None,
                    socket_options: Any = None) -> httpcore2.NetworkStream:
        stream = self._inner.connect_tcp(
            host, port, timeout=self._deadline.bound(timeout, httpcore2.ConnectTimeout),
            local_address=local_address, socket_options=socket_options)
        return _BoundedStream(stream, self._deadline)

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> httpcore2.NetworkStream:
        stream = self._inner.connect_unix_socket(
            path, timeout=self._deadline.bound(timeout, httpcore2.ConnectTimeout),
            socket_options=socket_options)
        return _BoundedStream(stream, self._deadline)

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class _DeadlineStream(httpx2.SyncByteStream):
    """The body, read under the request's deadline (set again for each chunk: the reading
    thread's deadline may belong to another request meanwhile)."""

    def __init__(self, stream: httpx2.SyncByteStream, deadline: float, holder: ThreadDeadline) -> None:
        self._stream = stream
        self._deadline = deadline
        self._holder = holder

    def __iter__(self) -> Iterator[bytes]:
        chunks = iter(self._stream)
        while True:
            previous, self._holder.value = self._holder.value, self._deadline
            try:
                if time.monotonic() > self._deadline:
                    raise httpx2.ReadTimeout(
                        "the answer did not arrive within the request's time limit")
                chunk = next(chunks, None)
            finally:
                self._holder.value = previous
            if chunk is None:
                return
            yield chunk

    def close(self) -> None:
        self._stream.close()


class DeadlineTransport(httpx2.BaseTransport):
    """httpx2's own transport, with the request's read timeout made a deadline for the whole
    exchange (connect, headers and body), not only for each read."""

    def __init__(self, **transport_args: Any) -> None:
        transport_args.setdefault("verify", shared_tls_context())
        self._inner = httpx2.HTTPTransport(**transport_args)
        self._deadline = ThreadDeadline()
        pool = getattr(self._inner, "_pool", None)
        # httpx2 has no public hook for the network backend (as httpx 0.28, see
        # research.untrusted.fetch): the pool it built gets ours, its settings unchanged.
        # tests/test_trickle.py checks that it takes effect (a trickled status line ends).
        if not isinstance(getattr(pool, "_network_backend", None), httpcore2.SyncBackend):
            raise RuntimeError("this httpx2 version has no connection pool to bound; pin it")
        pool._network_backend = _BoundedBackend(self._deadline)  # type: ignore[union-attr]

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        limit = (request.extensions.get("timeout") or {}).get("read")
        if not limit:
            return self._inner.handle_request(request)
        deadline = time.monotonic() + float(limit)
        previous, self._deadline.value = self._deadline.value, deadline
        try:
            response = self._inner.handle_request(request)
        finally:
            self._deadline.value = previous
        stream = response.stream
        assert isinstance(stream, httpx2.SyncByteStream)
        return httpx2.Response(status_code=response.status_code, headers=response.headers,
                               stream=_DeadlineStream(stream, deadline, self._deadline),
                               extensions=response.extensions)

    def close(self) -> None:
        self._inner.close()
