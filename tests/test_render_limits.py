"""Render and resource bombs: the PDF export and the fetcher stop at their limits.

PDF rendering runs WeasyPrint in a child process with a memory cap and a wall-clock limit
(research.export.pdf.PdfLimits); the limits are set low here so each bomb is stopped in
seconds. Fetcher caps for huge, slow, lying and gzip-bombed pages are in tests/test_fetch.py;
this file adds the cases it lacks (deflate bombs, absurd declared lengths, a 500-page PDF, a
PDF whose text extraction would take seconds and hundreds of MB, read in a child process).
"""

from __future__ import annotations

import re
import time
import zlib
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

import research.untrusted.sandbox as sandbox
from research.core.errors import FetchError, FetchRefused, ResearchError
from research.export.document import ReportDocument, ReportSource
from research.export.pdf import DEFAULT_LIMITS, PdfLimits, render_pdf, to_pdf
from research.untrusted.fetch import Fetcher, FetchLimits
from tests.runs import Runner
from tests.sandbox_targets import children_alive as _children_alive
from tests.standin import StandinServer, pdfs
from tests.standin.pdfs import inflating_pdf

# A bomb runs until its limit stops it, so the limits a bomb is expected to hit are short: the
# CPU a child burns until then is the test's cost (issue 15's suite-time target).
QUICK = PdfLimits(timeout_s=0.5, memory_mb=1536)  # a child starts in milliseconds (sandbox.py)


def _doc(body: str) -> ReportDocument:
    return ReportDocument(
        run_id="r1", question="Bombs?", created_at="2026-01-01T00:00:00+00:00",
        parameters_line="p", body=body,
        sources=(ReportSource(1, "s1", "Alpha", "https://alpha.example/a", "alpha.example",
                              None, None),),
    )


def test_defaults_are_a_minute_and_one_and_a_half_gigabytes() -> None:
    assert DEFAULT_LIMITS.timeout_s == 60 and DEFAULT_LIMITS.memory_mb == 1536


def test_an_ordinary_report_renders_within_the_default_limits() -> None:
    body = "# Title\n\n" + "\n\n".join(f"Paragraph {i} with a claim [1]." for i in range(100))
    body += "\n\n| a | b |\n|---|---|\n" + "".join(f"| {i} | {i * 2} |\n" for i in range(100))
    # Rendered under DEFAULT_LIMITS (a minute, 1.5 GB): a PDF back means it fitted. How fast
    # is the benchmark's question, not a wall-clock bound here (it flaked on a loaded machine).
    assert to_pdf(_doc(body)).startswith(b"%PDF")


def test_a_layout_that_takes_too_long_is_stopped_with_a_plain_error() -> None:
    table = "<table>" + ("<tr>" + "<td>x</td>" * 100 + "</tr>") * 400 + "</table>"
    started = time.monotonic()
    with pytest.raises(ResearchError, match=r"^Could not create the PDF: the layout took longer "
                                            r"than 0.5 s"):
        render_pdf(f"<html><body>{table}</body></html>", limits=QUICK)
    assert time.monotonic() - started < 10
    assert _children_alive() == []  # the child was killed and reaped


def test_a_layout_that_needs_too_much_memory_is_stopped_with_a_plain_error() -> None:
    word = "x" * 3_000_000  # one unbreakable 3 MB line: the text layout needs gigabytes
    # The message says the memory cap stopped it (the 60 s timeout would say "took longer").
    with pytest.raises(ResearchError,
                       match=r"^Could not create the PDF: the layout needed more than 300 MB of "
                             r"memory"):
        render_pdf(f"<html><body><p>{word}</p></body></html>",
                   limits=PdfLimits(timeout_s=60, memory_mb=300))
    assert _children_alive() == []
    assert to_pdf(_doc("Still fine [1].")).startswith(b"%PDF")  # the caller carries on


def test_thousands_of_table_cells_in_a_report_are_stopped() -> None:
    rows = "".join("| " + " | ".join(f"c{r}x{c}" for c in range(60)) + " |\n" for r in range(400))
    header = "| " + " | ".join(f"h{c}" for c in range(60)) + " |\n|" + "---|" * 60 + "\n"
    with pytest.raises(ResearchError, match="^Could not create the PDF: the layout (took longer"
                                            "|needed more)"):
        to_pdf(_doc("Claim [1].\n\n" + header + rows), limits=QUICK)


@pytest.mark.parametrize("name, markup, timeout_s", [
    # Unlimited, on this machine: about 9 s to the "nested too deeply" error.
    ("deep lists", "<ul><li>" * 3000 + "deep" + "</li></ul>" * 3000, 0.5),
    ("giant sizes", "<style>p { font-size: 100000px; width: 1000000000px; margin: 1e9px;"
                    " letter-spacing: 50000px; line-height: 1e7 }</style>"
                    + "<p>giant words here</p>" * 200, 2),  # about 1 s to a PDF
    ("huge page box", "<style>@page { size: 100000in 100000in }</style><p>x</p>", 2),  # 0.6 s
    ("many pages", "<style>p { break-after: page }</style>" + "<p>x</p>" * 1500, 0.5),  # 6.4 s
])
def test_hostile_css_and_nesting_end_in_a_pdf_or_a_plain_error(name: str, markup: str,
                                                               timeout_s: float) -> None:
    # Within the limit by construction (a longer layout ends in the plain "took longer" error,
    # checked below); no wall-clock bound on top, which flaked on a loaded machine.
    try:
        pdf = render_pdf(f"<html><body>{markup}</body></html>",
                         limits=PdfLimits(timeout_s=timeout_s, memory_mb=1024))
    except ResearchError as exc:
        message = str(exc)
        assert message.startswith("Could not create the PDF: ")
        assert "Traceback" not in message and len(message) < 400
    else:
        assert pdf.startswith(b"%PDF")
    assert _children_alive() == []


def test_deep_nesting_is_reported_in_plain_words() -> None:
    with pytest.raises(ResearchError, match="nested too deeply"):
        render_pdf("<html><body>" + "<div>" * 2000 + "x" + "</div>" * 2000 + "</body></html>",
                   limits=PdfLimits(timeout_s=30))


def test_the_renderer_child_gets_no_api_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-should-not-reach-the-child-0000")
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test-should-not-reach-0000")
    monkeypatch.setenv("DEEP_RESEARCH_PASSWORD", "should-not-reach-0000")
    monkeypatch.setenv("DEEP_RESEARCH_MCP_SERVERS", '{"wiki": {"url": "https://w", "token": "t"}}')
    sandbox.stop_starter()  # the next child's starter starts with the environment as it is now
    # Every child (the renderer's too) is forked from the starter and has its environment.
    names = sandbox.run_child("tests.sandbox_targets:environment", b"",
                              sandbox.ChildLimits(timeout_s=30, memory_mb=1024))["names"]
    assert "PATH" in names
    assert not {"OPENAI_API_KEY", "TAVILY_API_KEY", "DEEP_RESEARCH_PASSWORD",
                "DEEP_RESEARCH_MCP_SERVERS"} & set(names)
    assert to_pdf(_doc("Still renders [1].")).startswith(b"%PDF")


# --- fetch caps tests/test_fetch.py does not cover -----------------------------------------------

class _Endless(httpx.SyncByteStream):
    def __init__(self, chunk: bytes) -> None:
        self.chunk = chunk
        self.sent = 0

    def __iter__(self) -> Iterator[bytes]:
        while True:
            self.sent += len(self.chunk)
            yield self.chunk


def _deflate_bomb(size: int) -> bytes:
    comp = zlib.compressobj(9, zlib.DEFLATED, 15)  # zlib container, as "deflate" means
    block = b" " * (1024 * 1024)
    return comp.compress(b"<html><body><p>") + b"".join(
        comp.compress(block) for _ in range(size // len(block))) + comp.flush()


def test_a_deflate_bomb_is_cut_at_max_bytes() -> None:
    bomb = _deflate_bomb(50 * 1024 * 1024)
    transport = httpx.MockTransport(lambda r: httpx.Response(
        200, headers={"Content-Type": "text/html", "Content-Encoding": "deflate"}, content=bomb))
    started = time.monotonic()
    with Fetcher(FetchLimits(max_bytes=1_000_000), transport=transport,
                 resolver=lambda h: ["93.184.216.34"]) as fetcher:
        with pytest.raises(FetchRefused, match="too large"):
            fetcher.fetch("https://news.example/bomb")
    assert time.monotonic() - started < 5


def test_an_absurd_declared_length_is_refused_before_reading() -> None:
    stream = _Endless(b"<p>" + b"a" * 65533)
    transport = httpx.MockTransport(lambda r: httpx.Response(
        200, headers={"Content-Type": "text/html", "Content-Length": str(10 ** 12)},
        stream=stream))
    with Fetcher(FetchLimits(), transport=transport, resolver=lambda h: ["93.184.216.34"]) as f:
        with pytest.raises(FetchRefused, match="too large"):
            f.fetch("https://news.example/big")
    assert stream.sent == 0


def test_an_endless_body_without_length_is_cut_at_max_bytes() -> None:
    stream = _Endless(b"<p>" + b"a" * 65533)
    transport = httpx.MockTransport(lambda r: httpx.Response(
        200, headers={"Content-Type": "text/plain"}, stream=stream))
    with Fetcher(FetchLimits(max_bytes=2_000_000), transport=transport,
                 resolver=lambda h: ["93.184.216.34"]) as f:
        with pytest.raises(FetchRefused, match="too large"):
            f.fetch("https://news.example/endless")
    assert stream.sent <= 2_000_000 + 65536


@pytest.mark.parametrize("content_type, body", [
    ("text/plain", b"%PDF-1.4\n" + b"\x00\x01binary" * 200),
    ("text/html", b"\x1f\x8b\x08\x00" + b"\x00" * 2000),     # gzip bytes sent as plain HTML
    ("text/html", b"\x7fELF\x02\x01\x01" + b"\x00" * 2000),
])
def test_bodies_that_lie_about_their_type_are_refused(content_type: str, body: bytes) -> None:
    transport = httpx.MockTransport(lambda r: httpx.Response(
        200, headers={"Content-Type": content_type}, content=body))
    with Fetcher(FetchLimits(), transport=transport, resolver=lambda h: ["93.184.216.34"]) as f:
        with pytest.raises(FetchRefused, match="binary"):
            f.fetch("https://news.example/lie")


def test_a_500_page_pdf_is_read_only_up_to_max_pdf_pages(
    standin: StandinServer, standin_env: dict[str, str]
) -> None:
    with Fetcher(FetchLimits(allow_private_hosts=True, allowed_ports=(standin.port,),
                             timeout_s=10)) as fetcher:
        page = fetcher.fetch(f"{standin.base_url}/pages/hostile/pdf-500")
    assert FetchLimits().max_pdf_pages == 50
    assert "Page 50 of the long report." in page.text
    # No page past the limit was read (its speed is the `fetch` benchmark's business: a
    # wall-clock bound here failed on a loaded machine).
    assert "Page 51 of" not in page.text and "Page 500 of" not in page.text


# --- PDF text extraction runs under the page's deadline and a memory cap ---------------------

def _limits(standin: StandinServer, **values: Any) -> FetchLimits:
    return FetchLimits(allow_private_hosts=True, allowed_ports=(standin.port,), **values)


def test_a_pdf_that_inflates_to_megabytes_of_text_operators_is_cut_at_the_page_deadline(
    standin: StandinServer, standin_env: dict[str, str]
) -> None:
    assert len(inflating_pdf()) < 20_000  # small on the wire
    started = time.monotonic()
    with Fetcher(_limits(standin, timeout_s=1)) as fetcher:
        with pytest.raises(FetchError, match=r"^took longer than 1 s \(the PDF is too heavy"):
            fetcher.fetch(f"{standin.base_url}/pages/hostile/pdf-inflating")
    assert time.monotonic() - started < 3  # the deadline, plus stopping the child
    assert not _extractors_alive()


def test_a_pdf_that_needs_more_memory_than_allowed_is_refused_in_plain_words(
    standin: StandinServer, standin_env: dict[str, str]
) -> None:
    with Fetcher(_limits(standin, timeout_s=60, pdf_memory_mb=100)) as fetcher:
        assert pdfs.PDF_SENTENCE in fetcher.fetch(f"{standin.base_url}/pages/hostile/pdf").text
        with pytest.raises(FetchError, match="^the PDF needs more than 100 MB of memory to read$"):
            fetcher.fetch(f"{standin.base_url}/pages/hostile/pdf-inflating")


def test_a_run_goes_on_past_an_inflating_pdf(
    standin: StandinServer, runs: Runner
) -> None:
    url = "/pages/hostile/pdf-inflating"
    standin.set_extra_results([url])
    # A short page time limit: the reader burns CPU until something stops it, and which limit
    # does is not the point here (the fetcher's own PDF limits are tested above).
    store, run_id, _ = runs.completed("How do heat pumps perform in cold climates?", preset="quick",
                                      fetch_timeout_s=2)
    skipped = [s for s in store.get_skipped(run_id) if s.url.endswith(url)]
    # Stopped by the page time limit, the PDF memory limit or its reader being stopped,
    # whichever comes first on this machine: what matters is that the run goes on.
    limits = re.compile(r"took longer than \d+ s|needs more than \d+ MB|could not read the PDF")
    assert skipped and all(limits.search(s.reason) for s in skipped), skipped
    assert store.count_sources(run_id) > 0


def _extractors_alive() -> list[int]:
    """Our own child processes still extracting PDF text."""
    return _children_alive()
