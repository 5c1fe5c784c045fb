"""The fetcher against a real local server (tests/standin/pages.py) and against mock transports.

Nothing here touches the internet: the local server listens on 127.0.0.1 (so those tests allow
private hosts), and tests about public hosts use httpx.MockTransport with a fake resolver.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from research.core.errors import FetchError, FetchRefused
from research.untrusted.fetch import Fetcher, FetchLimits, clean_text
from tests.standin import pages, pdfs


class _Body(httpx.SyncByteStream):
    """A response body that arrives in chunks (httpx reads a ByteStream eagerly)."""

    def __init__(self, data: bytes, size: int = 65536) -> None:
        self._data, self._size = data, size

    def __iter__(self) -> Iterator[bytes]:
        for i in range(0, len(self._data), self._size):
            yield self._data[i:i + self._size]


# --- a tiny server for tests/standin/pages.py ---------------------------------------------------


class _PagesHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # the body ends when the connection closes

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        if self.path == "/test/late-stall":
            self._late_stall()
            return
        port = self.server.server_address[1]  # type: ignore[index]
        page = pages.page_response(self.path, f"http://127.0.0.1:{port}")
        try:
            if page is None:
                self.send_error(404)
                return
            self.send_response(page.status)
            for name, value in page.headers.items():
                self.send_header(name, value)
            self.end_headers()
            for i, chunk in enumerate(page.chunks):
                if i and page.chunk_delay:
                    time.sleep(page.chunk_delay)
                self.wfile.write(chunk)
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client hung up, as it should on hostile pages

    def _late_stall(self) -> None:
        """Headers at once, one byte after a second, then silence."""
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.flush()
            time.sleep(1.0)
            self.wfile.write(b"<")
            self.wfile.flush()
            time.sleep(10)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _PagesHandler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _local(base_url: str, **limits: object) -> FetchLimits:
    """Limits for the local test server: loopback and its random port allowed."""
    port = int(base_url.rsplit(":", 1)[1])
    return FetchLimits(allow_private_hosts=True, allowed_ports=(port,), **limits)  # type: ignore[arg-type]


@pytest.fixture
def fetcher(base_url: str) -> Iterator[Fetcher]:
    f = Fetcher(_local(base_url, max_bytes=1_000_000, timeout_s=10))
    yield f
    f.close()


# --- good pages -----------------------------------------------------------------------------------

def test_article_has_title_date_and_text(fetcher: Fetcher, base_url: str) -> None:
    url = f"{base_url}/pages/article/solar-power-costs"
    page = fetcher.fetch(url)
    meta = pages.article_meta("solar-power-costs")
    assert page.status == 200
    assert page.url == page.final_url == url
    assert page.content_type == "text/html"
    assert page.title == meta["title"]
    assert page.published == meta["published"]
    assert meta["snippet"] in page.text
    assert "window.analytics" not in page.text  # scripts are not text
    assert "OFF-TOPIC" not in page.text


def test_off_topic_article_carries_the_marker(fetcher: Fetcher, base_url: str) -> None:
    assert "OFF-TOPIC" in fetcher.fetch(f"{base_url}/pages/article/solar-power-off").text


def test_paper_abstract(fetcher: Fetcher, base_url: str) -> None:
    page = fetcher.fetch(f"{base_url}/pages/paper/2403.01234")
    assert page.title and page.title.startswith("A randomised study")
    assert "participants" in page.text
    assert page.published is not None and len(page.published) == 10


def test_pdf(fetcher: Fetcher, base_url: str) -> None:
    page = fetcher.fetch(f"{base_url}/pages/hostile/pdf")
    assert page.content_type == "application/pdf"
    assert pdfs.PDF_SENTENCE in page.text
    assert page.title == pdfs.PDF_TITLE
    assert page.published == "2025-06-12"


def test_pdf_reads_only_the_first_pages(base_url: str) -> None:
    with Fetcher(_local(base_url, max_pdf_pages=0)) as f:
        with pytest.raises(FetchError, match="no readable text"):
            f.fetch(f"{base_url}/pages/hostile/pdf")


def test_plain_text(fetcher: Fetcher, base_url: str) -> None:
    page = fetcher.fetch(f"{base_url}/pages/hostile/plain")
    assert page.content_type == "text/plain"
    assert page.title is None
    assert "52,300 books" in page.text


def test_text_is_capped(base_url: str) -> None:
    with Fetcher(_local(base_url, max_text_chars=50)) as f:
        assert len(f.fetch(f"{base_url}/pages/article/long-story").text) == 50


def test_injection_page_is_returned_as_text_without_invisible_characters(
    fetcher: Fetcher, base_url: str,
) -> None:
    page = fetcher.fetch(f"{base_url}/pages/hostile/injection")
    assert pages.INJECTION_FACT in page.text
    assert "Invisible characters hide in this sentence." in page.text
    for ch in "\u200b\u200c\u200d\u200e\u200f\u202a\u202e\u2066\u2069\ufeff":
        assert ch not in page.text
    assert "tracker.example" not in page.text  # images are not followed or kept
    # The attack text itself is kept: it is data, and the prompt layer must neutralise it.
    assert "Ignore all previous instructions" in page.text
    assert '</untrusted_source>' in page.text and '<untrusted_source id="evil">' in page.text


def test_clean_text_strips_zero_width_and_bidi_characters() -> None:
    dirty = "a\u200bb\u200cc\u200dd\u200ee\u200ff\u202ag\u202bh\u202ci\u202dj\u202ek" \
            "\u2066l\u2067m\u2068n\u2069o\ufeffp"
    assert clean_text(dirty) == "abcdefghijklmnop"


def test_redirects_within_the_limit_are_followed(base_url: str) -> None:
    with Fetcher(_local(base_url, max_redirects=5)) as f:
        page = f.fetch(f"{base_url}/pages/hostile/redirect-chain")
    assert page.final_url == f"{base_url}/pages/hostile/redirect-chain/5"
    assert page.url == f"{base_url}/pages/hostile/redirect-chain"


# --- hostile pages ------------------------------------------------------------------------------

def test_redirect_chain_over_the_limit_is_refused(fetcher: Fetcher, base_url: str) -> None:
    with pytest.raises(FetchRefused, match=r"too many redirects \(more than 3\)"):
        fetcher.fetch(f"{base_url}/pages/hostile/redirect-chain")


def test_redirect_to_metadata_is_refused_even_with_private_allowed(
    fetcher: Fetcher, base_url: str,
) -> None:
    with pytest.raises(FetchRefused, match="169.254.169.254 is a cloud metadata service"):
        fetcher.fetch(f"{base_url}/pages/hostile/redirect-metadata")


@pytest.mark.parametrize("name, reason", [
    ("binary", r"^not a web page or PDF \(content type application/octet-stream\)$"),
    ("lying-type", r"content type text/html, but the content is binary"),
])
def test_non_text_content_is_refused(fetcher: Fetcher, base_url: str, name: str,
                                     reason: str) -> None:
    with pytest.raises(FetchRefused, match=reason):
        fetcher.fetch(f"{base_url}/pages/hostile/{name}")


@pytest.mark.parametrize("name", ["huge", "gzip-bomb"])
def test_big_bodies_are_cut_at_max_bytes(fetcher: Fetcher, base_url: str, name: str) -> None:
    started = time.monotonic()
    with pytest.raises(FetchRefused, match=r"^too large \(over 1 MB\)$"):
        fetcher.fetch(f"{base_url}/pages/hostile/{name}")
    assert time.monotonic() - started < 10  # the refusal is the check; this catches a hang


def test_lying_length_does_not_make_us_read_ten_megabytes(fetcher: Fetcher, base_url: str) -> None:
    # Content-Length says 100: the HTTP layer stops there, and we count bytes regardless.
    started = time.monotonic()
    page = fetcher.fetch(f"{base_url}/pages/hostile/lying-length")
    assert len(page.text) < 100
    assert time.monotonic() - started < 5


def test_lying_length_cut_at_max_bytes_when_the_length_is_ignored(base_url: str) -> None:
    # The same 10 MB body without a Content-Length: the byte count alone must stop it.
    body = b"<html><body>" + b"<p>lots of text</p>" * 600_000
    transport = httpx.MockTransport(lambda request: httpx.Response(
        200, headers={"Content-Type": "text/html"}, stream=_Body(body)))
    with Fetcher(FetchLimits(max_bytes=1_000_000), transport=transport,
                 resolver=lambda host: ["93.184.216.34"]) as f:
        with pytest.raises(FetchRefused, match="too large"):
            f.fetch("https://news.example/big")


def test_slow_page_is_cut_at_the_deadline(base_url: str) -> None:
    started = time.monotonic()
    with Fetcher(_local(base_url, timeout_s=1.5)) as f:
        with pytest.raises(FetchError, match=r"^took longer than 1.5 s$"):
            f.fetch(f"{base_url}/pages/hostile/slow")
    assert time.monotonic() - started < 4


def test_silent_server_is_cut_at_the_deadline(base_url: str) -> None:
    # Headers and a few bytes, then ten seconds of nothing: no chunk arrives to check the
    # clock on, so the socket read itself must give up at the deadline.
    started = time.monotonic()
    with Fetcher(_local(base_url, timeout_s=1.5)) as f:
        with pytest.raises(FetchError, match="took longer than 1.5 s"):
            f.fetch(f"{base_url}/pages/hostile/stall")
    assert time.monotonic() - started < 6  # the silence lasts ten seconds


def test_every_socket_read_is_bounded_by_the_deadline(base_url: str) -> None:
    # One byte at 1.0 s, then silence. A per-read timeout fixed when the request started
    # (1.2 s) would wait until 2.2 s at the earliest; the deadline-aware socket gives up at
    # 1.2 s. (The bound sits between the two with 0.9 s of room for a loaded machine running
    # tests side by side: a late wake-up can only make the wrong reading slower still.)
    started = time.monotonic()
    with Fetcher(_local(base_url, timeout_s=1.2)) as f:
        with pytest.raises(FetchError, match="took longer than 1.2 s"):
            f.fetch(f"{base_url}/test/late-stall")
    assert time.monotonic() - started < 2.1


def test_missing_page_is_an_http_error(fetcher: Fetcher, base_url: str) -> None:
    with pytest.raises(FetchError, match="^HTTP 404$"):
        fetcher.fetch(f"{base_url}/pages/nothing/here")


def test_loopback_refused_unless_allowed(base_url: str) -> None:
    with Fetcher(FetchLimits(allowed_ports=(int(base_url.rsplit(":", 1)[1]),))) as f:
        with pytest.raises(FetchRefused, match="127.0.0.1 is loopback"):
            f.fetch(f"{base_url}/pages/article/x")


def test_nothing_listening_is_a_fetch_error() -> None:
    with Fetcher(FetchLimits(allow_private_hosts=True, allowed_ports=(9,))) as f:
        with pytest.raises(FetchError, match="could not connect"):
            f.fetch("http://127.0.0.1:9/")  # the discard port: nobody home


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://news.example/x",
                                 "javascript:alert(1)", "http://0x7f000001/",
                                 "http://169.254.169.254/latest/meta-data/"])
def test_bad_addresses_are_refused_before_connecting(url: str) -> None:
    calls: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(200)
    transport = httpx.MockTransport(handle)
    with Fetcher(FetchLimits(), transport=transport, resolver=lambda h: ["93.184.216.34"]) as f:
        with pytest.raises(FetchRefused, match="refused"):
            f.fetch(url)
    assert calls == []


# --- redirects to inside addresses (mock transport, fake resolver) -------------------------------

def _redirecting(location: str, seen: list[str]) -> Callable[[httpx.Request], httpx.Response]:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        if request.url.host == "news.example":
            return httpx.Response(302, headers={"Location": location})
        return httpx.Response(200, text="<p>inside secrets</p>",
                              headers={"Content-Type": "text/html"})
    return handle


@pytest.mark.parametrize("location, reason", [
    ("http://10.0.0.5/admin", r"^refused: address 10\.0\.0\.5 is private$"),
    ("http://169.254.169.254/latest/meta-data/", "cloud metadata"),
    ("http://2130706433/", "127.0.0.1 is loopback"),
    ("http://inside.example/", r"10\.9\.8\.7 \(from inside\.example\) is private"),
    ("file:///etc/passwd", "only http and https"),
])
def test_redirect_to_an_inside_address_is_refused(location: str, reason: str) -> None:
    seen: list[str] = []
    dns = {"news.example": ["93.184.216.34"], "inside.example": ["10.9.8.7"]}
    with Fetcher(FetchLimits(allow_private_hosts=False),
                 transport=httpx.MockTransport(_redirecting(location, seen)),
                 resolver=lambda host: dns[host]) as f:
        with pytest.raises(FetchRefused, match=reason):
            f.fetch("http://news.example/story")
    assert seen == ["http://news.example/story"]  # the inside address was never asked


def test_public_redirects_and_relative_locations_work() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/old":
            return httpx.Response(301, headers={"Location": "/new?x=1"})
        return httpx.Response(200, headers={"Content-Type": "text/plain"}, text="moved here 42")
    with Fetcher(FetchLimits(), transport=httpx.MockTransport(handle),
                 resolver=lambda host: ["93.184.216.34"]) as f:
        page = f.fetch("https://news.example/old")
    assert page.final_url == "https://news.example/new?x=1"
    assert page.text == "moved here 42"


def test_mixed_public_and_private_answer_is_refused() -> None:
    transport = httpx.MockTransport(lambda r: httpx.Response(200, text="x"))
    with Fetcher(FetchLimits(), transport=transport,
                 resolver=lambda host: ["93.184.216.34", "10.0.0.1"]) as f:
        with pytest.raises(FetchRefused, match="10.0.0.1"):
            f.fetch("https://news.example/")


@pytest.mark.parametrize("headers, reason", [
    ({"Content-Type": "image/png"}, r"content type image/png"),
    ({}, r"content type missing"),
    ({"Content-Type": "text/html", "Content-Encoding": "br"}, "unsupported content encoding"),
    ({"Content-Type": "text/html", "Content-Encoding": "gzip, gzip"},
     "unsupported content encoding"),
    ({"Content-Type": "application/pdf"}, "says PDF but is not one"),
])
def test_refused_responses(headers: dict[str, str], reason: str) -> None:
    transport = httpx.MockTransport(lambda r: httpx.Response(200, headers=headers,
                                                             stream=_Body(b"<p>hello</p>")))
    with Fetcher(FetchLimits(), transport=transport, resolver=lambda h: ["93.184.216.34"]) as f:
        with pytest.raises(FetchRefused, match=reason):
            f.fetch("https://news.example/")


def test_transport_errors_are_wrapped() -> None:
    def boom(request: httpx.Request) -> httpx.Response:
        raise httpx.RemoteProtocolError("server hung up", request=request)
    with Fetcher(FetchLimits(), transport=httpx.MockTransport(boom),
                 resolver=lambda h: ["93.184.216.34"]) as f:
        with pytest.raises(FetchError, match="could not read the page: server hung up"):
            f.fetch("https://news.example/")


def test_html_without_extractable_article_falls_back_to_crude_text() -> None:
    markup = "<html><head><title>Tiny &amp; short</title></head><body>42 apples</body></html>"
    transport = httpx.MockTransport(lambda r: httpx.Response(
        200, headers={"Content-Type": "text/html"}, text=markup))
    with Fetcher(FetchLimits(), transport=transport, resolver=lambda h: ["93.184.216.34"]) as f:
        page = f.fetch("https://news.example/")
    assert page.title == "Tiny & short"
    assert "42 apples" in page.text


# --- the connection-time guard (DNS rebinding) -----------------------------------------------

def test_connection_goes_to_the_checked_address(base_url: str) -> None:
    # "pages.test" exists only in our resolver: the connection must use the address it gave.
    port = base_url.rsplit(":", 1)[1]
    with Fetcher(_local(base_url),
                 resolver=lambda host: {"pages.test": ["127.0.0.1"]}[host]) as f:
        page = f.fetch(f"http://pages.test:{port}/pages/article/pinned")
    assert page.title == pages.article_meta("pinned")["title"]


def test_dns_rebinding_is_caught_at_connection_time(base_url: str) -> None:
    # First answer public (passes the URL check), second answer loopback (the connection).
    answers = iter([["93.184.216.34"], ["127.0.0.1"]])
    port = base_url.rsplit(":", 1)[1]
    with Fetcher(FetchLimits(allow_private_hosts=False, allowed_ports=(int(port),)),
                 resolver=lambda host: next(answers)) as f:
        with pytest.raises(FetchRefused, match="127.0.0.1 .*is loopback"):
            f.fetch(f"http://rebind.test:{port}/pages/article/x")


def test_one_fetcher_serves_several_threads(fetcher: Fetcher, base_url: str) -> None:
    slugs = [f"topic-{i}" for i in range(8)]
    results: dict[str, str | None] = {}

    def work(slug: str) -> None:
        results[slug] = fetcher.fetch(f"{base_url}/pages/article/{slug}").title

    threads = [threading.Thread(target=work, args=(s,)) for s in slugs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert results == {s: pages.article_meta(s)["title"] for s in slugs}


def test_pages_read_at_once_load_the_extractors_suffix_list_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The extractor's list of web suffixes (tld, through courlan) is parsed on first use and has
    # no lock of its own: the worker threads' first pages arriving together each parsed a copy.
    import tld.utils

    from research.untrusted import html_text

    loads: list[str] = []
    keep = tld.utils.update_tld_names_container

    def counted(path: str, trie: tld.utils.Trie) -> None:
        loads.append(path)
        keep(path, trie)

    monkeypatch.setattr(tld.utils, "tld_names", {})  # as in a fresh process
    monkeypatch.setattr(tld.utils, "update_tld_names_container", counted)
    monkeypatch.setattr(html_text, "_warmed", False)
    page = ("<html><head><title>Cold</title></head><body><article><p>"
            + "Heat pumps keep working in cold climates. " * 30 + "</p></article></body></html>")
    start = threading.Barrier(8)
    texts: list[str] = []

    def read(i: int) -> None:
        start.wait()
        # served from an address, as by the stand-in: courlan then asks tld for the suffix
        texts.append(html_text.html_to_text(page, f"http://127.0.0.1:{8100 + i}/a")[1])

    threads = [threading.Thread(target=read, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(texts) == 8 and all("Heat pumps" in text for text in texts)
    assert len(loads) == 1


def test_a_page_read_again_at_its_address_with_new_content_is_extracted_again() -> None:
    """The extraction kept per page is the one of that markup: a page that changed is read anew."""
    from research.untrusted import html_text

    def page(words: str) -> str:
        return f"<html><head><title>T</title></head><body><article><p>{words * 30}</p></article></body></html>"

    url = "https://example.org/changing"
    first = html_text.html_to_text(page("Heat pumps keep working in the cold. "), url)[1]
    again = html_text.html_to_text(page("Heat pumps keep working in the cold. "), url)[1]
    changed = html_text.html_to_text(page("Wind turbines pause in storms. "), url)[1]
    assert first == again and "Heat pumps" in first
    assert "Wind turbines" in changed and "Heat pumps" not in changed
