"""One TLS context per process for every model client.

Building the SDKs' default context reads the whole CA bundle (about 0.15 CPU-seconds), and a
run makes one client per agent (two dozen for a quick run); openai and google-genai each built
their own every time, which about doubled the CPU a whole run needs. An `ssl.SSLContext` is
safe to share between clients and threads. It is httpx2's default (the one both SDKs build
when given none), so SSL_CERT_FILE / SSL_CERT_DIR are honoured as before.
"""

from __future__ import annotations

import contextlib
import functools
import ssl

import httpx2


@functools.cache
def shared_tls_context() -> ssl.SSLContext:
    """The process's TLS context for model clients, built on first use."""
    return httpx2.create_ssl_context()


class ClosedWhenDropped:
    """Mixed into an SDK's default HTTP client given the shared context: closed when dropped,
    as the SDK's own client is."""

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()  # type: ignore[attr-defined]
