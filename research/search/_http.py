"""One HTTP client for the search APIs (arXiv, Semantic Scholar, Tavily, SearXNG, Brave, Exa,
Serper), errors mapped.

Timeouts that bound each socket read let a server trickling bytes hold a search (and the thread
that sends it) for ever, long after the step gave up on it. Every search request therefore goes
through research.llm.deadline's transport, as the model calls do: the request's timeout is a
deadline for the whole answer, and past it the connection is closed (issue 40). The body is
also capped in size. tavily-python sends through `requests`; `DeadlineAdapter` gives its
session the same client.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx2
import requests
from requests.adapters import BaseAdapter
from requests.structures import CaseInsensitiveDict
from requests.utils import get_encoding_from_headers

from research.core.errors import (
    AuthError,
    ProviderError,
    ProviderTimeout,
    QuotaExhausted,
    RateLimited,
    redact,
)
from research.core.retry import parse_retry_after
from research.llm.deadline import DeadlineTransport

MAX_BODY_BYTES = 5 * 1024 * 1024
USER_AGENT = "DeepResearchStudio/1.0 (+https://github.com/; research assistant)"

# One client for every call: clients are thread-safe, and building one per request costs a
# fresh TLS context each time (measurable when four workers search at once).
_LIMITS = httpx2.Limits(max_connections=64, max_keepalive_connections=16)
_CLIENT = httpx2.Client(follow_redirects=True, max_redirects=3,
                        transport=DeadlineTransport(limits=_LIMITS))


class _TooLarge(Exception):
    pass


def _read_capped(response: httpx2.Response) -> bytes:
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise _TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def http_get(
    url: str,
    *,
    provider: str,
    label: str,
    timeout: float,
    params: Mapping[str, str | int] | None = None,
    headers: Mapping[str, str] | None = None,
    secrets: tuple[str, ...] = (),
    check: bool = True,
    follow_redirects: bool = True,
) -> tuple[int, bytes, httpx2.Headers]:
    """GET `url`; return (status, body, headers) of a 2xx answer or raise ProviderError
    (`check=False`: of any answer, for a caller that reads an error's headers itself)."""
    return _send("GET", url, provider=provider, label=label, timeout=timeout, params=params,
                 headers=headers, secrets=secrets, check=check,
                 follow_redirects=follow_redirects)


def http_post_json(
    url: str,
    payload: Any,
    *,
    provider: str,
    label: str,
    timeout: float,
    headers: Mapping[str, str] | None = None,
    secrets: tuple[str, ...] = (),
) -> tuple[int, bytes, httpx2.Headers]:
    """POST `payload` as JSON to `url`; (status, body, headers) of a 2xx answer, or
    ProviderError."""
    return _send("POST", url, provider=provider, label=label, timeout=timeout, json=payload,
                 headers=headers, secrets=secrets)


def _send(
    method: str,
    url: str,
    *,
    provider: str,
    label: str,
    timeout: float,
    params: Mapping[str, str | int] | None = None,
    json: Any = None,
    headers: Mapping[str, str] | None = None,
    secrets: tuple[str, ...] = (),
    check: bool = True,
    follow_redirects: bool = True,
) -> tuple[int, bytes, httpx2.Headers]:
    sent = {"User-Agent": USER_AGENT, **(headers or {})}
    try:
        with _CLIENT.stream(method, url, params=params, json=json, headers=sent,
                            timeout=timeout, follow_redirects=follow_redirects) as response:
            body = _read_capped(response)
    except _TooLarge:
        raise ProviderError(f"{label} sent an answer larger than {MAX_BODY_BYTES} bytes.",
                            provider=provider) from None
    except httpx2.TimeoutException:
        raise ProviderTimeout(
            f"{label} did not answer within {timeout:.0f} s.", provider=provider
        ) from None
    except httpx2.HTTPError as exc:
        raise ProviderError(
            f"Could not reach {label}: {redact(str(exc) or exc.__class__.__name__, secrets)}",
            provider=provider,
        ) from None
    if check:
        raise_for_status(response.status_code, response.headers, body, provider, label, secrets)
    return response.status_code, body, response.headers


class DeadlineAdapter(BaseAdapter):
    """A `requests` adapter that sends through the client above, so an SDK built on requests
    (tavily-python) gets the same deadline on the whole answer. requests' own timeout bounds
    each read only (https://requests.readthedocs.io/en/latest/user/advanced/#timeouts)."""

    def send(self, request: requests.PreparedRequest, stream: bool = False,
             timeout: Any = None, verify: Any = True, cert: Any = None,
             proxies: Any = None) -> requests.Response:
        if isinstance(timeout, tuple):  # (connect, read): the read part bounds the answer
            timeout = timeout[1] if timeout[1] is not None else timeout[0]
        body = request.body.encode() if isinstance(request.body, str) else request.body
        if body is not None and not isinstance(body, bytes):  # a stream: tavily sends JSON text
            raise requests.ConnectionError("only whole request bodies are sent", request=request)
        headers = {name: value if isinstance(value, str) else value.decode("latin-1")
                   for name, value in request.headers.items()}
        try:
            with _CLIENT.stream(str(request.method), str(request.url),
                                headers=headers, content=body,
                                timeout=timeout) as answer:
                content = _read_capped(answer)
        except _TooLarge:
            raise requests.ConnectionError(
                f"the answer was larger than {MAX_BODY_BYTES} bytes", request=request) from None
        except httpx2.TimeoutException:
            raise requests.Timeout("the answer did not arrive in time", request=request) from None
        except httpx2.HTTPError as exc:
            raise requests.ConnectionError(str(exc) or exc.__class__.__name__,
                                           request=request) from None
        response = requests.Response()
        response.status_code = answer.status_code
        response.reason = answer.reason_phrase
        response.headers = CaseInsensitiveDict(answer.headers.multi_items())
        response.encoding = get_encoding_from_headers(response.headers)
        response._content = content
        response.url = str(request.url)
        response.request = request
        return response

    def close(self) -> None:
        """The shared client outlives every session that mounts this adapter."""


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


def json_answer(body: bytes, *, provider: str, label: str) -> dict[str, Any]:
    """A search API's JSON object, or ProviderError in plain words (a proxy's HTML error page,
    a truncated answer)."""
    try:
        payload = json.loads(body)
    except ValueError:
        raise ProviderError(f"{label} sent an answer that is not JSON.", provider=provider) from None
    if not isinstance(payload, dict):
        raise ProviderError(f"{label} sent an answer of an unexpected shape.", provider=provider)
    return payload
