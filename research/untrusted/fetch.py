"""Read one web page or PDF, safely, and turn it into plain text.

The web is hostile input. Every fetch is bounded: http(s) only, web ports and public addresses
only (checked for the first URL and every redirect target, see research.untrusted.urls), at most
`max_redirects` redirects (followed by us, not by httpx), at most `max_bytes` of *decoded* body
(bytes are counted as they arrive, so a lying Content-Length or a gzip bomb is cut off), and one
wall-clock deadline per page. Only HTML, plain text and PDF are accepted, and a body that claims to be text
but starts like a binary file is refused.

DNS rebinding: checking a name and then letting the HTTP library resolve it again would leave a
gap (the second answer could be 127.0.0.1). The default transport closes it: its network backend
resolves and checks the host itself at connection time and connects to the checked IP literal
(TLS still verifies the certificate against the host name). The same backend bounds every socket
connect, read and write by the page's deadline, so a silent server cannot hold a fetch past it.
A PDF's text is extracted in a child process under a memory cap and within what is left of the
same deadline (research.untrusted.pdftext): a small file can inflate to megabytes of drawing commands.
A transport passed in (tests use httpx.MockTransport) does not get these connection-time guards;
the URL checks before each hop still apply. Known limits: DNS lookups themselves have no timeout
(the C resolver's own applies), and HTML extraction (trafilatura) runs in this process after the
download, outside the deadline.

Environment proxies are ignored (trust_env=False): a proxy would make the address checks moot.
"""

from __future__ import annotations

import codecs
import functools
import re
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Any

import httpcore
import httpx

from research.core.deadlines import ThreadDeadline
from research.core.errors import FetchError, FetchRefused, ResearchError, redact
from research.core.prompts import strip_invisible
from research.untrusted.html_text import PageText, html_to_text
from research.untrusted.sandbox import ChildFailed, ChildLimits, run_child
from research.untrusted.urls import check_host, check_port, check_url

Resolver = Callable[[str], list[str]]

_KINDS = {
    "text/html": "html",
    "application/xhtml+xml": "html",
    "text/plain": "text",
    "application/pdf": "pdf",
}
_ENCODINGS = {"", "identity", "gzip", "x-gzip", "deflate"}
_REDIRECTS = {301, 302, 303, 307, 308}
_BINARY_MAGIC = (
    b"PK\x03\x04", b"\x1f\x8b", b"%PDF", b"\x89PNG", b"GIF8", b"\xff\xd8\xff", b"7z\xbc\xaf",
    b"Rar!", b"\x7fELF", b"BZh", b"\xfd7zXZ", b"OggS", b"RIFF", b"\x00\x00\x01\x00",
)
_SNIFF_BYTES = 1024


@dataclass(frozen=True)
class FetchLimits:
    timeout_s: float = 20.0           # wall clock for one page, redirects included
    max_bytes: int = 5_000_000        # decoded body
    max_redirects: int = 3
    max_text_chars: int = 60_000      # extracted text kept
    max_pdf_pages: int = 50
    pdf_memory_mb: int = 384          # the child process that reads a PDF (research.untrusted.pdftext)
    allow_private_hosts: bool = False  # loopback/private/link-local; metadata never
    allowed_ports: tuple[int, ...] = ()  # besides 80, 443, 8080, 8443 (research.untrusted.urls.WEB_PORTS)


@dataclass(frozen=True)
class FetchedPage:
    url: str                 # what was asked for
    final_url: str           # after redirects
    status: int
    content_type: str        # e.g. "text/html"
    title: str | None
    text: str
    published: str | None    # YYYY-MM-DD when the page says so
    author: str | None = None  # from the page's metadata, when it names one (credibility)


class Fetcher:
    """Fetches pages within `FetchLimits`. One instance may be shared by several threads."""

    def __init__(
        self,
        limits: FetchLimits | None = None,
        *,
        resolver: Resolver | None = None,
        transport: httpx.BaseTransport | None = None,
        user_agent: str = "DeepResearchStudio/0.1",
    ) -> None:
        self.limits = limits or FetchLimits()
        self._resolver = resolver
        self._deadline = ThreadDeadline()
        if transport is None:
            transport = _guarded_transport(
                _GuardedBackend(self.limits, resolver, self._deadline)
            )
        self._client = httpx.Client(
            transport=transport,
            follow_redirects=False,
            trust_env=False,
            cookies=CookieJar(policy=DefaultCookiePolicy(allowed_domains=[])),  # keep none
            headers={
                "User-Agent": user_agent,
                "Accept": "text/html,application/xhtml+xml,application/pdf,text/plain;q=0.9,"
                          "*/*;q=0.1",
                "Accept-Encoding": "gzip, deflate",
            },
        )

    def close(self) -> None:
        self._client.close()

    def _page_text(self, markup: str, url: str) -> PageText:
        """(title, text, published, author) of an HTML page: a method so that the tests'
        in-process fetcher can parse each of the stand-in's pages once (tests/fakes.py)."""
        return html_to_text(markup, url)

    def __enter__(self) -> Fetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def fetch(self, url: str) -> FetchedPage:
        """The page's text, or FetchError / FetchRefused with a short reason in plain words."""
        deadline = time.monotonic() + self.limits.timeout_s
        self._deadline.value = deadline
        try:
            return self._fetch(url, deadline)
        except ResearchError:
            raise
        except httpx.TimeoutException:
            raise self._too_slow() from None
        except httpx.DecodingError:
            raise FetchError("the server sent a body that could not be decompressed") from None
        except httpx.ConnectError as exc:
            host = httpx.URL(url).host if _parses(url) else url[:80]
            raise FetchError(redact(f"could not connect to {host}: {_short(exc)}")) from None
        except (httpx.HTTPError, httpx.StreamError) as exc:
            raise FetchError(redact(f"could not read the page: {_short(exc)}")) from None
        except (httpx.InvalidURL, httpx.CookieConflict, UnicodeError, ValueError) as exc:
            raise FetchRefused(redact(f"refused: not a valid web address ({_short(exc)})")) from None
        finally:
            self._deadline.value = None

    # --- one fetch ----------------------------------------------------------------------------

    def _fetch(self, url: str, deadline: float) -> FetchedPage:
        current = url
        for _ in range(self.limits.max_redirects + 1):
            check_url(current, allow_private=self.limits.allow_private_hosts,
                      resolver=self._resolver, allowed_ports=self.limits.allowed_ports)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._too_slow()
            request = self._client.build_request("GET", current, timeout=httpx.Timeout(remaining))
            response = self._client.send(request, stream=True)
            try:
                if response.status_code in _REDIRECTS:
                    location = response.headers.get("location", "").strip()
                    if not location:
                        raise FetchError(f"HTTP {response.status_code} without a target address")
                    current = str(response.url.join(location))
                    continue
                return self._read(url, response, deadline)
            finally:
                response.close()
        raise FetchRefused(f"too many redirects (more than {self.limits.max_redirects})")

    def _read(self, url: str, response: httpx.Response, deadline: float) -> FetchedPage:
        status = response.status_code
        if not 200 <= status < 300:
            raise FetchError(f"HTTP {status}")
        header = response.headers.get("content-type", "")
        mime = header.split(";", 1)[0].strip().lower()
        kind = _KINDS.get(mime)
        if kind is None:
            raise FetchRefused(f"not a web page or PDF (content type {mime or 'missing'})")
        encoding = response.headers.get("content-encoding", "").strip().lower()
        if encoding not in _ENCODINGS:
            raise FetchRefused(f"refused: unsupported content encoding ({encoding[:40]})")
        declared = response.headers.get("content-length", "")
        if not encoding and declared.isdigit() and int(declared) > self.limits.max_bytes:
            raise self._too_large()

        charset = _charset(header)
        body = self._read_body(response, deadline, kind, mime, charset)
        final_url = str(response.url)
        author = None
        if kind == "pdf":
            title, text, published = _pdf_to_text(body, self.limits, deadline)
        elif kind == "html":
            title, text, published, author = self._page_text(
                _decode(body, charset, sniff_meta=True), final_url)
        else:
            title, text, published = None, _decode(body, charset, sniff_meta=False), None
        text = clean_text(text)[: self.limits.max_text_chars]
        if not text:
            raise FetchError("no readable text on the page")
        if title is not None:
            title = " ".join(clean_text(title).split())[:300] or None
        return FetchedPage(url=url, final_url=final_url, status=status, content_type=mime,
                           title=title, text=text, published=published,
                           author=" ".join(clean_text(author).split())[:200] or None
                           if author else None)

    def _read_body(self, response: httpx.Response, deadline: float, kind: str, mime: str,
                   charset: str | None) -> bytes:
        body = bytearray()
        sniffed = False
        for chunk in response.iter_bytes():
            body += chunk
            if len(body) > self.limits.max_bytes:
                raise self._too_large()
            if time.monotonic() > deadline:
                raise self._too_slow()
            if not sniffed and len(body) >= _SNIFF_BYTES:
                _sniff(bytes(body[:_SNIFF_BYTES]), kind, mime, charset)
                sniffed = True
        if not sniffed:
            _sniff(bytes(body), kind, mime, charset)
        return bytes(body)

    def _too_large(self) -> FetchRefused:
        return FetchRefused(f"too large (over {self.limits.max_bytes / 1_000_000:g} MB)")

    def _too_slow(self) -> FetchError:
        return FetchError(f"took longer than {self.limits.timeout_s:g} s")


# --- content ------------------------------------------------------------------------------------

def clean_text(text: str) -> str:
    """Drop zero-width and bidi-override characters (used to hide or disguise text)."""
    text = strip_invisible(text).replace("\r\n", "\n").replace("\r", "\n")
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _sniff(head: bytes, kind: str, mime: str, charset: str | None) -> None:
    if kind == "pdf":
        if b"%PDF-" not in head:
            raise FetchRefused("not a web page or PDF (it says PDF but is not one)")
        return
    wide = charset is not None and charset.replace("-", "").startswith(("utf16", "utf32"))
    if head.startswith(_BINARY_MAGIC) or (not wide and b"\x00" in head):
        raise FetchRefused(f"not a web page or PDF (content type {mime}, but the content is binary)")


def _charset(content_type: str) -> str | None:
    match = re.search(r"charset\s*=\s*[\"']?([\w.:-]+)", content_type, re.I)
    return _valid_codec(match.group(1)) if match else None


def _valid_codec(name: str) -> str | None:
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def _decode(body: bytes, charset: str | None, *, sniff_meta: bool) -> str:
    if body.startswith(codecs.BOM_UTF8):
        charset = "utf-8"
    elif body.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        charset = "utf-16"
    if charset is None and sniff_meta:
        match = re.search(rb"<meta[^>]+charset\s*=\s*[\"']?([\w.:-]+)", body[:4096], re.I)
        if match:
            charset = _valid_codec(match.group(1).decode("ascii", "replace"))
    return body.decode(charset or "utf-8", errors="replace")


def _pdf_to_text(body: bytes, limits: FetchLimits,
                 deadline: float) -> tuple[str | None, str, str | None]:
    """Extract in a child process (research.untrusted.pdftext) under a memory cap, within what is left
    of the page's deadline."""
    child = ChildLimits(deadline - time.monotonic(), limits.pdf_memory_mb)
    try:
        result = run_child("research.untrusted.pdftext:extract", body, child,
                           args=(str(limits.max_pdf_pages), str(limits.max_text_chars)))
    except ChildFailed as exc:
        if exc.reason == "timeout":
            raise FetchError(f"took longer than {limits.timeout_s:g} s "
                             "(the PDF is too heavy to read in time)") from None
        if exc.reason in ("memory", "killed"):
            raise FetchError(f"the PDF needs more than {limits.pdf_memory_mb} MB of memory "
                             "to read") from None
        raise FetchError(f"could not read the PDF (its reader stopped: {exc.detail or exc.reason})"
                         ) from None
    if "error" in result:
        raise FetchError(str(result["error"]))
    return result.get("title"), str(result.get("text") or ""), result.get("published")


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:160]


def _parses(url: str) -> bool:
    try:
        httpx.URL(url)
        return True
    except Exception:  # noqa: BLE001 - httpx and idna raise several kinds
        return False


# --- connection-time guards -------------------------------------------------------------------

class _GuardedStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream, deadline: ThreadDeadline) -> None:
        self._inner = inner
        self._deadline = deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, self._deadline.bound(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._deadline.bound(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        inner = self._inner.start_tls(ssl_context, server_hostname,
                                      self._deadline.bound(timeout, httpcore.ConnectTimeout))
        return _GuardedStream(inner, self._deadline)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _GuardedBackend(httpcore.NetworkBackend):
    """Checks the port, resolves and checks the host itself, then connects to the checked
    IP literal."""

    def __init__(self, limits: FetchLimits, resolver: Resolver | None,
                 deadline: ThreadDeadline) -> None:
        self._allow_private = limits.allow_private_hosts
        self._allowed_ports = limits.allowed_ports
        self._resolver = resolver
        self._deadline = deadline
        self._inner = httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:
        check_port(port, self._allowed_ports)
        addresses = check_host(host, allow_private=self._allow_private, resolver=self._resolver)
        error: Exception = httpcore.ConnectError(f"no address for {host}")
        for address in addresses:
            try:
                stream = self._inner.connect_tcp(
                    address, port, timeout=self._deadline.bound(timeout, httpcore.ConnectTimeout),
                    local_address=local_address, socket_options=socket_options,
                )
            except httpcore.ConnectError as exc:
                error = exc
                continue
            return _GuardedStream(stream, self._deadline)
        raise error

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> httpcore.NetworkStream:
        raise FetchRefused("refused: unix sockets are not web pages")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


def guarded_transport(limits: FetchLimits) -> httpx.HTTPTransport:
    """A transport that connects only where the page fetcher may (`limits`' private hosts and
    ports): the host is resolved and checked at connect time and the checked address is what
    it connects to, so a name that resolves elsewhere a second time cannot lead it astray.
    For other requests to addresses someone else gave us (the API's callbacks)."""
    return _guarded_transport(_GuardedBackend(limits, None, ThreadDeadline()))


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One TLS context per process for fetching pages: building one reads the whole CA bundle
    (about 25 ms of CPU), and each run's fetcher built two. A context is safe to share between
    connections and threads; it is httpx's default, without the environment's settings."""
    return httpx.create_ssl_context(trust_env=False)


def _guarded_transport(backend: httpcore.NetworkBackend) -> httpx.HTTPTransport:
    """httpx's own transport with our network backend in its connection pool.

    httpx 0.28 has no public hook for the backend, so we swap the pool it built for one that
    uses ours (same settings). tests/test_fetch.py checks that the swap takes effect.
    """
    transport = httpx.HTTPTransport(verify=_tls_context(), trust_env=False)
    pool = getattr(transport, "_pool", None)
    if not isinstance(pool, httpcore.ConnectionPool):
        raise RuntimeError("this httpx version has no connection pool to guard; pin httpx 0.28")
    transport._pool = httpcore.ConnectionPool(
        ssl_context=_tls_context(),
        max_connections=200,  # room for 4 workers fetching 40 pages each (executor.task_threads)
        max_keepalive_connections=20,
        keepalive_expiry=5.0,
        network_backend=backend,
    )
    return transport
