"""Server-side request forgery: spellings, redirects and the PDF renderer.

Complements tests/test_urls.py (the address check, with many spellings already) and
tests/test_fetch.py (redirects to inside addresses): only cases those files do not cover are
here. Nothing touches the internet: public hosts are answered by fake resolvers and
httpx.MockTransport, and the only real server listens on 127.0.0.1 to prove nothing calls it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from research.core.errors import FetchError, FetchRefused
from research.export.document import ReportDocument, ReportSource
from research.export.pdf import render_pdf, to_pdf
from research.untrusted.fetch import Fetcher, FetchLimits
from research.untrusted.urls import check_url

DNS = {
    "news.example": ["93.184.216.34"],
    "localhost": ["127.0.0.1", "::1"],
    "127.0.0.1.nip.io": ["127.0.0.1"],
    "inside.example": ["10.9.8.7"],
    "several.example": ["93.184.216.34", "93.184.216.35", "2606:2800:220:1::1", "10.0.0.7"],
    "several-meta.example": ["93.184.216.34", "169.254.169.254"],
    "several-v6.example": ["2606:2800:220:1::1", "::ffff:7f00:1"],
    "cgnat.example": ["100.72.1.2"],
}


def resolve(host: str) -> list[str]:
    if host not in DNS:
        raise OSError(f"unknown host {host}")
    return DNS[host]


# --- spellings not in tests/test_urls.py --------------------------------------------------------

@pytest.mark.parametrize("url", [
    "http://%31%32%37.0.0.1/",                 # percent-encoded host
    "http://%31%30.0.0.5/",
    "http://１２７.０.０.１/",                   # full-width digits
    "http://①②⑦.0.0.1/",
    "http://127。0。0。1/",                      # ideographic full stops: IDNA makes them dots
    "http://0x7f.0x0.0x0.0x1/",
    "http://0x00007f.1/",
    "http://00000177.0.0.1/",
    "http://[0:0:0:0:0:ffff:127.0.0.1]/",      # IPv4-mapped, long form
    "http://[::ffff:a9fe:a9fe]/",              # metadata, mapped and in hex
    "http://[64:ff9b::a9fe:a9fe]/",            # metadata through NAT64
    "http://[fe80::1%25eth0]/",                # link-local with a zone id
    "http://[::1%25lo]/",
    "http://[::]:80/",
    "http://0.0.0.0:8501/",
    "http://localhost/",
    "http://LOCALHOST./",
    "http://127.0.0.1.nip.io/",                # a public-looking name for loopback
    "http://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ/",                      # circled letters (IDNA maps them to "localhost")
    "HTTP://127.0.0.1/",
    "hTTp://10.0.0.1/",
    "http://news.example:80@127.0.0.1/",       # user@host
    "http://127.0.0.1:80@news.example/",
    "http://127.0.0.1%2f@news.example/",
    "http://10.0.0.1#@news.example/",          # parsers disagree on where the host ends
    "http://news.example#@10.0.0.1/",
    "http://10.0.0.1?@news.example/",
    "http://news.example%00.10.0.0.1/",
    "http:/\\127.0.0.1/",
    "http:127.0.0.1/",
    "https:/127.0.0.1/",
    "http://cgnat.example/",
    "http://several.example/",                  # one private address among several public
    "http://several-v6.example/",
    "http://several-meta.example/",
])
def test_more_spellings_of_inside_addresses_are_refused(url: str) -> None:
    with pytest.raises(FetchRefused, match="refused"):
        check_url(url, allow_private=False, resolver=resolve)


@pytest.mark.parametrize("url", [
    "http://[::ffff:a9fe:a9fe]/", "http://[64:ff9b::a9fe:a9fe]/", "http://several-meta.example/",
    "http://0251.0376.0251.0376/", "http://169.254.43518/",
])
def test_metadata_in_any_spelling_is_refused_even_when_private_is_allowed(url: str) -> None:
    # (Octal with leading zeros everywhere is already refused by httpx as not a valid address.)
    with pytest.raises(FetchRefused, match="metadata|not a valid web address"):
        check_url(url, allow_private=True, resolver=resolve)


@pytest.mark.parametrize("url", [
    "dict://news.example/", "ldap://news.example/", "ws://news.example/", "wss://news.example/",
    "view-source:http://news.example/", "jar:http://news.example/!/", "sftp://news.example/",
    "file://news.example/etc/passwd", "file:/etc/passwd", "FILE:///etc/passwd",
    "gopher://127.0.0.1:6379/_FLUSHALL", "data:text/plain;base64,aGk=", "javascript://%0aalert(1)",
    " http://127.0.0.1/",
])
def test_other_schemes_are_refused(url: str) -> None:
    with pytest.raises(FetchRefused, match="refused"):
        check_url(url, allow_private=True, resolver=resolve)


def test_unknown_names_are_an_error_not_a_pass() -> None:
    with pytest.raises(FetchError):
        check_url("http://nowhere.example/", allow_private=False, resolver=resolve)


# --- through redirects --------------------------------------------------------------------------

def _redirects(hops: dict[str, str], seen: list[str]) -> Callable[[httpx.Request], httpx.Response]:
    """news.example answers each path in `hops` with a redirect to its value."""
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        if request.url.host == "news.example" and request.url.path in hops:
            return httpx.Response(302, headers={"Location": hops[request.url.path]})
        return httpx.Response(200, text="<p>inside secrets</p>",
                              headers={"Content-Type": "text/html"})
    return handle


@pytest.mark.parametrize("location", [
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:7f00:1]/",
    "http://0177.1/",
    "http://0x7f.1/",
    "http://127.1/",
    "http://%31%30.0.0.5/",
    "//10.0.0.5/admin",                         # protocol-relative
    "http://news.example@10.0.0.5/",
    "http://localhost:8501/",
    "http://inside.example./",                  # trailing dot
    "http://several.example/",
    "gopher://news.example/_x",
    "ftp://news.example/x",
    "data:text/html,<p>x</p>",
    "javascript:alert(1)",
    "file:///etc/passwd",
])
def test_a_redirect_to_any_spelling_of_an_inside_address_is_refused(location: str) -> None:
    seen: list[str] = []
    transport = httpx.MockTransport(_redirects({"/a": location}, seen))
    with Fetcher(FetchLimits(), transport=transport, resolver=resolve) as fetcher:
        with pytest.raises(FetchRefused, match="refused"):
            fetcher.fetch("https://news.example/a")
    assert seen == ["https://news.example/a"]


def test_the_second_redirect_is_checked_too() -> None:
    seen: list[str] = []
    hops = {"/a": "https://news.example/b", "/b": "/c", "/c": "http://169.254.169.254/latest/"}
    transport = httpx.MockTransport(_redirects(hops, seen))
    with Fetcher(FetchLimits(allow_private_hosts=True), transport=transport,
                 resolver=resolve) as fetcher:
        with pytest.raises(FetchRefused, match="metadata"):
            fetcher.fetch("https://news.example/a")
    assert seen == ["https://news.example/a", "https://news.example/b", "https://news.example/c"]


def test_connection_time_check_refuses_a_name_with_one_private_address_among_several() -> None:
    # The real transport (no mock): the URL check passes on the first answer, the connection
    # resolves again and gets a private address among public ones. Nothing is connected to.
    answers = iter([["93.184.216.34"], ["93.184.216.34", "127.0.0.1"]])
    with Fetcher(FetchLimits(timeout_s=5, allowed_ports=(9,)),
                 resolver=lambda host: next(answers)) as fetcher:
        with pytest.raises(FetchRefused, match="127.0.0.1"):
            fetcher.fetch("http://rebind.example:9/")


# --- the PDF renderer fetches nothing, whatever the HTML says ------------------------------------

class _Recorder(BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        type(self).hits.append(self.path)
        body = b"body { background: red }"
        self.send_response(200)
        self.send_header("Content-Type", "text/css")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def listener() -> Iterator[str]:
    _Recorder.hits = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def secret_file(tmp_path: Path) -> Path:
    path = tmp_path / "secret.txt"
    path.write_text("TOPSECRET-FILE-CONTENT-4417\n")
    return path


def _every_loader(net: str, file: str) -> str:
    return f"""<!DOCTYPE html><html><head>
<base href="{net}/base/">
<link rel="stylesheet" href="{net}/link.css">
<link rel="stylesheet" href="{file}">
<link rel="attachment" href="{file}">
<link rel="icon" href="{net}/favicon.ico">
<style>
@import url("{net}/import.css");
@import "{file}";
@font-face {{ font-family: X; src: url("{net}/font.woff") format("woff"), url("{file}"); }}
@page {{ background: url("{net}/page-bg.png"); }}
body {{ background-image: url("{net}/bg.png"); font-family: X; }}
li {{ list-style-image: url("{net}/bullet.png"); }}
p::before {{ content: url("{net}/before.png"); }}
div {{ border-image: url("{net}/border.png") 30; cursor: url("{net}/cur.cur"), auto;
       mask: url("{net}/mask.svg"); }}
</style></head><body>
<p>Visible text.</p>
<img src="{net}/img.png"><img src="{file}">
<img srcset="{net}/small.png 1x, {net}/big.png 2x" src="{net}/fallback.png">
<picture><source srcset="{net}/pic.webp"><img src="{net}/pic.png"></picture>
<object data="{file}" type="text/plain"></object>
<object data="{net}/obj.svg" type="image/svg+xml"></object>
<embed src="{net}/embed.svg" type="image/svg+xml">
<iframe src="{file}"></iframe><iframe src="{net}/frame.html"></iframe>
<video poster="{net}/poster.png" src="{net}/v.mp4"></video><audio src="{net}/a.mp3"></audio>
<input type="image" src="{net}/input.png">
<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="50"
     height="50"><image href="{net}/svg-image.png" width="50" height="50"/>
  <image xlink:href="{file}" width="50" height="50"/><use href="{net}/sprite.svg#a"/></svg>
<a rel="attachment" href="{file}">attached</a>
<div style="background: url('{file}')">styled</div>
<ul><li>item</li></ul>
</body></html>"""


def test_the_pdf_renderer_loads_no_url_and_no_file_whatever_the_html_says(
    listener: str, secret_file: Path
) -> None:
    from research.export import RefusingURLFetcher  # loads WeasyPrint: here, not at collection

    fetcher = RefusingURLFetcher()
    pdf = render_pdf(_every_loader(listener, secret_file.as_uri()), fetcher)
    assert pdf.startswith(b"%PDF")
    assert _Recorder.hits == []  # not one request reached the listening server
    assert fetcher.served == 0
    attempted = " ".join(fetcher.attempts)
    assert secret_file.as_uri() in attempted and listener in attempted  # asked, and refused
    assert b"TOPSECRET" not in pdf and b"/EmbeddedFile" not in pdf


def test_a_report_body_with_every_loader_makes_no_request_at_all(
    listener: str, secret_file: Path
) -> None:
    body = "Claim [1].\n\n" + _every_loader(listener, secret_file.as_uri()) + (
        f"\n\n![img]({listener}/md.png) ![file]({secret_file.as_uri()})\n")
    doc = ReportDocument(
        run_id="r", question=f"Q <img src='{listener}/q.png'>", created_at="2026-01-01",
        parameters_line="p",
        body=body,
        sources=(ReportSource(1, "s", f"T <img src='{listener}/t.png'>", "https://a.example/x",
                              "a.example", None, None),),
    )
    from research.export import RefusingURLFetcher  # loads WeasyPrint: here, not at collection

    fetcher = RefusingURLFetcher()
    pdf = to_pdf(doc, fetcher=fetcher)
    assert fetcher.attempts == []  # sanitised: the layout engine is not even asked
    assert _Recorder.hits == []
    assert b"TOPSECRET" not in pdf
