"""An overall deadline on a request's whole answer, however slowly its bytes arrive.

Both SDKs (openai, google-genai) and the search APIs' client (research.search._http) send
through httpx2, whose timeouts bound each read: a server that sends a byte every few seconds
never trips them, and a thread that an outer limit gave up on
(`research.llm.base.run_with_deadline`) would read on, keeping the CLI from exiting and a
worker's slot taken (issue 40). This transport takes the request's own timeout as the limit for
the whole exchange. Its network backend bounds every socket connect, read and write by what is
left of that limit, so a server trickling its status line and headers is cut off as surely as
one trickling its body; past the limit the SDK's read timeout is raised and the response is
closed, which closes its connection (an answer not read to its end is never pooled).
research.untrusted.fetch bounds page reads the same way, for httpx.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import httpcore2
import httpx2

from research.llm.tls import shared_tls_context


class _Deadline(threading.local):
    """The deadline of the request this thread is sending or reading (a connection serves one
    request at a time, and a sync request is sent and read by the thread that made it)."""

    value: float | None = None

    def bound(self, timeout: float | None, error: type[Exception]) -> float | None:
        if self.value is None:
            return timeout
        remaining = self.value - time.monotonic()
        if remaining <= 0:
            raise error("the answer did not arrive within the request's time limit")
        return remaining if timeout is None else min(timeout, remaining)


class _BoundedStream(httpcore2.NetworkStream):
    def __init__(self, inner: httpcore2.NetworkStream, deadline: _Deadline) -> None:
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
    def __init__(self, deadline: _Deadline) -> None:
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

    def __init__(self, stream: httpx2.SyncByteStream, deadline: float, holder: _Deadline) -> None:
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
        self._deadline = _Deadline()
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
