"""One GET for the keyless JSON/XML search APIs (arXiv, Semantic Scholar), errors mapped.

httpx timeouts bound each socket read, so a server trickling bytes could hold a worker
for ever; the body is therefore read in chunks against a wall-clock deadline and a size
cap.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import httpx

from research.core.errors import (
    AuthError,
    ProviderError,
    ProviderTimeout,
    QuotaExhausted,
    RateLimited,
    redact,
)
from research.core.retry import parse_retry_after

MAX_BODY_BYTES = 5 * 1024 * 1024
USER_AGENT = "DeepResearchStudio/1.0 (+https://github.com/; research assistant)"

# One client for every call: httpx clients are thread-safe, and building one per request
# costs a fresh TLS context each time (measurable when four workers search at once).
_CLIENT = httpx.Client(follow_redirects=True, max_redirects=3,
                       limits=httpx.Limits(max_connections=64, max_keepalive_connections=16))


def http_get(
    url: str,
    *,
    provider: str,
    label: str,
    timeout: float,
    params: Mapping[str, str | int] | None = None,
    headers: Mapping[str, str] | None = None,
    secrets: tuple[str, ...] = (),
) -> tuple[int, bytes, httpx.Headers]:
    """GET `url`; return (status, body, headers) of a 2xx answer or raise ProviderError."""
    deadline = time.monotonic() + timeout
    sent = {"User-Agent": USER_AGENT, **(headers or {})}
    try:
        with _CLIENT.stream("GET", url, params=params, headers=sent, timeout=timeout) as response:
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > MAX_BODY_BYTES:
                    raise ProviderError(
                        f"{label} sent an answer larger than {MAX_BODY_BYTES} bytes.",
                        provider=provider,
                    )
                chunks.append(chunk)
                if time.monotonic() > deadline:
                    raise ProviderTimeout(
                        f"{label} did not finish answering within {timeout:.0f} s.",
                        provider=provider,
                    )
            body = b"".join(chunks)
    except httpx.TimeoutException:
        raise ProviderTimeout(
            f"{label} did not answer within {timeout:.0f} s.", provider=provider
        ) from None
    except httpx.HTTPError as exc:
        raise ProviderError(
            f"Could not reach {label}: {redact(str(exc) or exc.__class__.__name__, secrets)}",
            provider=provider,
        ) from None
    raise_for_status(response.status_code, response.headers, body, provider, label, secrets)
    return response.status_code, body, response.headers


def raise_for_status(
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    provider: str,
    label: str,
    secrets: tuple[str, ...] = (),
) -> None:
    """Map a non-2xx HTTP answer onto research.core.errors."""
    if 200 <= status < 300:
        return
    detail = redact(body[:300].decode("utf-8", "replace").strip(), secrets)
    suffix = f": {detail}" if detail else "."
    if status == 429:
        retry_after = parse_retry_after(headers.get("retry-after"))
        raise RateLimited(
            f"{label} is rate limiting requests (HTTP 429){suffix}",
            provider=provider, retry_after=retry_after,
        )
    if status in (401, 403):
        raise AuthError(f"{label} refused the request (HTTP {status}){suffix}",
                        provider=provider, status=status)
    if status == 402:
        raise QuotaExhausted(f"{label} says the quota is used up (HTTP 402){suffix}",
                             provider=provider, status=status)
    if status in (408, 504):
        raise ProviderTimeout(f"{label} timed out (HTTP {status}).",
                              provider=provider, status=status)
    raise ProviderError(f"{label} failed with HTTP {status}{suffix}",
                        provider=provider, status=status)
