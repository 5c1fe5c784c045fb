"""An overall deadline on a model request's whole answer, however slowly its bytes arrive.

Both SDKs (openai, google-genai) send through httpx2, whose timeouts bound each read: a server
that sends a byte every few seconds never trips them, and a thread that an outer limit gave up
on (`research.llm.base.run_with_deadline`) would read on, keeping the CLI from exiting and a
worker's slot taken (issue 40). This transport takes the request's own timeout as the limit for
the whole exchange: past it, the next chunk raises the SDK's read timeout and the response is
closed, which closes its connection (an answer not read to its end is never pooled).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx2

from research.llm.tls import shared_tls_context


class _DeadlineStream(httpx2.SyncByteStream):
    def __init__(self, stream: httpx2.SyncByteStream, deadline: float) -> None:
        self._stream = stream
        self._deadline = deadline

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._stream:
            if time.monotonic() > self._deadline:
                raise httpx2.ReadTimeout("the answer did not arrive within the request's time limit")
            yield chunk

    def close(self) -> None:
        self._stream.close()


class DeadlineTransport(httpx2.BaseTransport):
    """httpx2's own transport, with the request's read timeout made a deadline for the whole
    answer (headers and body), not only for each read."""

    def __init__(self, **transport_args: Any) -> None:
        transport_args.setdefault("verify", shared_tls_context())
        self._inner = httpx2.HTTPTransport(**transport_args)

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        started = time.monotonic()
        limit = (request.extensions.get("timeout") or {}).get("read")
        response = self._inner.handle_request(request)
        if not limit:
            return response
        stream = response.stream
        assert isinstance(stream, httpx2.SyncByteStream)
        return httpx2.Response(status_code=response.status_code, headers=response.headers,
                               stream=_DeadlineStream(stream, started + float(limit)),
                               extensions=response.extensions)

    def close(self) -> None:
        self._inner.close()
