"""PDF export: Markdown -> HTML (markdown-it) -> sanitised (nh3) -> our template -> WeasyPrint.

Safety, in layers:
1. markdown-it runs with `html=False`, so raw HTML in the body is shown as text; link reference
   definitions are off, so a body line like `[1]: http://x` cannot hijack citations; images
   render as their alt text.
2. nh3 keeps only the tags and attributes listed below: no img, no style, no script, links only
   to http(s) pages or to `#fragments` inside the document.
3. WeasyPrint gets `RefusingURLFetcher`, which refuses every URL (file:, http(s):, data:), so
   even markup that slipped past 1 and 2 cannot read a local file or touch the network.
Our own stylesheet is added after sanitising and contains no url().
"""

from __future__ import annotations

import html as html_lib
import re
from typing import Any

import nh3
from markdown_it import MarkdownIt
from weasyprint import HTML
from weasyprint.urls import URLFetcher

from research.errors import ResearchError, redact
from research.export.document import ReportDocument, ReportSource, link_citations
from research.export.markdown import format_date

_TAGS = {
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "p",
    "br",
    "hr",
    "ul",
    "ol",
    "li",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "a",
    "em",
    "strong",
    "code",
    "pre",
    "blockquote",
    "div",
    "section",
    "span",
}
_ATTRIBUTES = {"a": {"href"}, "li": {"id"}, "ol": {"start"}}
_CLASSES = {
    "div": {"cover", "meta", "notes", "report-body"},
    "section": {"sources"},
    "ol": {"sources"},
    "span": {"num", "details", "url"},
    "a": {"cite"},
    "p": {"meta"},
}

CSS = """
@page {
  size: A4;
  margin: 22mm 20mm 24mm 20mm;
  @bottom-center {
    content: "Page " counter(page) " of " counter(pages);
    font-family: "DejaVu Sans", "Liberation Sans", sans-serif;
    font-size: 8.5pt;
    color: #555;
  }
}
html {
  font-family: "DejaVu Serif", "Liberation Serif", serif;
  font-size: 10.5pt;
  line-height: 1.45;
  color: #111;
}
h1, h2, h3, h4, h5, h6 {
  font-family: "DejaVu Sans", "Liberation Sans", sans-serif;
  line-height: 1.25;
  break-after: avoid;
}
h1 { font-size: 18pt; margin: 0 0 0.6em; }
h2 { font-size: 14pt; margin: 1.4em 0 0.5em; border-bottom: 1px solid #ccc; padding-bottom: 2pt; }
h3 { font-size: 12pt; margin: 1.2em 0 0.4em; }
h4, h5, h6 { font-size: 10.5pt; margin: 1em 0 0.3em; }
.cover { border-bottom: 2px solid #333; padding-bottom: 0.8em; margin-bottom: 1.4em; }
.cover h1 { font-size: 20pt; }
.cover .meta { margin: 0.15em 0; font-family: "DejaVu Sans", sans-serif; font-size: 9pt; color: #444; }
.cover .notes { margin-top: 0.8em; padding: 0.5em 0.8em; border: 1px solid #d9b44a; background: #fff8e1; }
.cover .notes h2 { font-size: 10.5pt; border: none; margin: 0 0 0.3em; }
.cover .notes ul { margin: 0; padding-left: 1.2em; }
p { margin: 0 0 0.7em; orphans: 2; widows: 2; }
a { color: #1a4d8f; text-decoration: none; }
a.cite { font-size: 0.85em; }
table { border-collapse: collapse; width: 100%; margin: 0.8em 0 1em; font-size: 9.5pt; }
th, td { border: 1px solid #888; padding: 3pt 5pt; vertical-align: top; text-align: left; }
th { background: #eeeeee; }
tr { break-inside: avoid; }
code, pre { font-family: "DejaVu Sans Mono", "Liberation Mono", monospace; font-size: 8.5pt; }
pre { white-space: pre-wrap; background: #f5f5f5; border: 1px solid #ddd; padding: 5pt; }
blockquote { margin: 0.8em 0; padding-left: 0.9em; border-left: 3px solid #bbb; color: #333; }
hr { border: none; border-top: 1px solid #ccc; margin: 1.2em 0; }
section.sources ol { list-style: none; padding-left: 0; }
section.sources li { margin-bottom: 0.5em; break-inside: avoid; }
section.sources .num { font-weight: bold; margin-right: 0.3em; }
section.sources .details { color: #444; }
section.sources .url { display: block; font-size: 8pt; color: #555; overflow-wrap: anywhere; }
"""


class RefusingURLFetcher(URLFetcher):  # type: ignore[misc]
    """A WeasyPrint 70 URL fetcher that refuses every URL and records each attempt.

    WeasyPrint 70 takes a `URLFetcher` instance (its `fetch` is what gets called, and its
    `_fail_on_errors` is read), not a plain function. Refusing with an ordinary exception makes
    WeasyPrint log a warning and render without the resource.
    """

    def __init__(self) -> None:
        super().__init__(allowed_protocols=(), allow_redirects=False, fail_on_errors=False)
        self.attempts: list[str] = []
        self.served = 0  # stays 0: nothing is ever served

    def fetch(self, url: str, headers: Any = None) -> Any:
        self.attempts.append(url)
        raise ValueError(f"external resources are not loaded in reports: {url[:80]}")


def _markdown_renderer() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable("table").disable("reference")

    def image_as_text(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
        alt: str = self.renderInlineAsText(tokens[idx].children or [], options, env)
        return html_lib.escape(alt)

    md.add_render_rule("image", image_as_text)
    return md


_MD = _markdown_renderer()
_CITE_LINK_RE = re.compile(r'<a href="#source-(\d+)">')


def _href_allowed(url: str) -> str | None:
    return url if url.startswith("#") else None


def sanitise(fragment: str) -> str:
    return nh3.clean(
        fragment,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        allowed_classes=_CLASSES,
        url_schemes={"http", "https"},
        url_relative=_href_allowed,
        link_rel=None,
        strip_comments=True,
    )


def _esc(text: str) -> str:
    return html_lib.escape(text, quote=True)


def _cover(doc: ReportDocument) -> str:
    parts = [
        '<div class="cover">',
        f"<h1>{_esc(doc.question)}</h1>",
        f'<p class="meta">Date: {_esc(format_date(doc.created_at))}</p>',
        f'<p class="meta">Run: {_esc(doc.run_id)}</p>',
        f'<p class="meta">Parameters: {_esc(doc.parameters_line)}</p>',
    ]
    if doc.notes:
        parts.append('<div class="notes"><h2>Caveats</h2><ul>')
        parts += [f"<li>{_esc(note)}</li>" for note in doc.notes]
        parts.append("</ul></div>")
    parts.append("</div>")
    return "".join(parts)


def _source_item(source: ReportSource) -> str:
    title = _esc(source.title or source.url)
    url = source.url.strip()
    linked = url.lower().startswith(("http://", "https://"))
    entry = f'<a href="{_esc(url)}">{title}</a>' if linked else title
    details = ", ".join(_esc(part) for part in (source.domain, source.published) if part)
    return (
        f'<li id="source-{source.number}"><span class="num">[{source.number}]</span>{entry}'
        + (f' <span class="details">\u2014 {details}</span>' if details else "")
        + f'<span class="url">{_esc(url)}</span></li>'
    )


def _sources(doc: ReportDocument) -> str:
    if not doc.sources:
        return '<section class="sources"><h2>Sources</h2><p>No sources were cited.</p></section>'
    items = "".join(_source_item(source) for source in doc.sources)
    return f'<section class="sources"><h2>Sources</h2><ol class="sources">{items}</ol></section>'


def body_html(doc: ReportDocument) -> str:
    """The body as (unsanitised) HTML, citations linked to their Sources entries."""
    numbers = [s.number for s in doc.sources]
    body = link_citations(doc.body, numbers, lambda n: f"[\\[{n}\\]](#source-{n})")
    rendered = _MD.render(body)
    return _CITE_LINK_RE.sub(r'<a class="cite" href="#source-\1">', rendered)


def to_html(doc: ReportDocument) -> str:
    """A complete, sanitised HTML document ready for printing."""
    fragment = _cover(doc) + f'<div class="report-body">{body_html(doc)}</div>' + _sources(doc)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_esc(doc.question)}</title><style>{CSS}</style></head>"
        f"<body>{sanitise(fragment)}</body></html>\n"
    )


def render_pdf(html: str, fetcher: RefusingURLFetcher | None = None) -> bytes:
    """Render finished HTML with WeasyPrint; nothing outside the string is ever loaded."""
    try:
        pdf = HTML(string=html, base_url=None, url_fetcher=fetcher or RefusingURLFetcher()).write_pdf()
    except Exception as exc:  # WeasyPrint and its libraries raise many kinds
        detail = redact(str(exc))[:200] or type(exc).__name__
        raise ResearchError(f"Could not create the PDF: the page layout failed ({detail}).") from exc
    if not isinstance(pdf, bytes) or not pdf.startswith(b"%PDF"):
        raise ResearchError("Could not create the PDF: the layout engine returned no document.")
    return pdf


def to_pdf(doc: ReportDocument, *, fetcher: RefusingURLFetcher | None = None) -> bytes:
    """The report as PDF bytes. Pass a `fetcher` to inspect which URLs were refused."""
    return render_pdf(to_html(doc), fetcher)
