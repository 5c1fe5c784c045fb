"""PDF export: Markdown -> HTML (markdown-it) -> sanitised (nh3) -> our template -> WeasyPrint.

Safety, in layers:
1. markdown-it runs with `html=False`, so raw HTML in the body is shown as text; link reference
   definitions are off, so a body line like `[1]: http://x` cannot hijack citations; images
   render as their alt text.
2. nh3 keeps only the tags and attributes listed below: no img, no style, no script, links only
   to http(s) pages or to `#fragments` inside the document.
3. WeasyPrint gets `RefusingURLFetcher`, which refuses every URL (file:, http(s):, data:), so
   even markup that slipped past 1 and 2 cannot read a local file or touch the network.
4. WeasyPrint runs in a child process (`research.untrusted.sandbox`) with a memory cap (RLIMIT_AS) and a
   wall-clock limit (`PdfLimits`), so a layout bomb (a huge table, deep nesting, giant sizes)
   ends in a plain-words ResearchError while the calling process (the dashboard, the CLI)
   stays up. The child imports only what rendering needs.
Our own stylesheet is added after sanitising and contains no url(). A citation of the person's
own document links to its Sources entry, which quotes the passage (doc_passages.py).
"""

from __future__ import annotations

import base64
import html as html_lib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import nh3
from markdown_it import MarkdownIt

from research.core.errors import ResearchError, redact
from research.export.doc_passages import is_document, quoted
from research.export.document import APP_NAME, ReportDocument, ReportSource, link_citations
from research.export.markdown import format_date
from research.export.safe_links import clean_document
from research.untrusted.sandbox import ChildAnswer, ChildFailed, ChildLimits, run_child

if TYPE_CHECKING:  # WeasyPrint is loaded only where pages are laid out: in the child
    from research.export.weasy import RefusingURLFetcher

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
    "section": {"sources", "method"},
    "ol": {"sources"},
    "span": {"num", "details", "url", "passage"},
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
section.sources .passage { display: block; margin: 0.2em 0 0 0.9em; padding-left: 0.6em;
  border-left: 3px solid #bbb; font-size: 9pt; color: #333; }
section.sources .url { display: block; font-size: 8pt; color: #555; overflow-wrap: anywhere; }
"""


@dataclass(frozen=True)
class PdfLimits:
    """Bounds on one PDF rendering (the child process that runs WeasyPrint)."""

    timeout_s: float = 60.0        # wall clock, start-up included
    memory_mb: int = 1536          # address space of the child (RLIMIT_AS)
    max_pdf_mb: int = 200          # a bigger PDF is refused rather than sent back


DEFAULT_LIMITS = PdfLimits()


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


def _css(doc: ReportDocument) -> str:
    """The print CSS with the page footer in the report's language (labels are cleaned of
    quotes and backslashes by clean_labels, so they cannot leave the CSS string)."""
    return CSS.replace('"Page "', f'"{doc.label("page")} "').replace('" of "', f'" {doc.label("of")} "')


def _cover(doc: ReportDocument) -> str:
    parts = [
        '<div class="cover">',
        f"<h1>{_esc(doc.question)}</h1>",
        f'<p class="meta">{_esc(doc.label("date"))}: {_esc(format_date(doc.created_at))}</p>',
    ]
    if doc.parameters_line and not doc.method:  # the method section says it in plain words
        parts.append(f'<p class="meta">{_esc(doc.label("parameters"))}: '
                     f'{_esc(doc.parameters_line)}</p>')
    if doc.verification:
        parts.append(f'<p class="meta">{_esc(doc.label("verification"))}: {_esc(doc.verification)}</p>')
    if doc.reading_time:
        parts.append(f'<p class="meta">{_esc(doc.reading_time)}</p>')
    if doc.notes:
        parts.append(f'<div class="notes"><h2>{_esc(doc.label("caveats"))}</h2><ul>')
        parts += [f"<li>{_esc(note)}</li>" for note in doc.notes]
        parts.append("</ul></div>")
    parts.append("</div>")
    return "".join(parts)


def _document_item(source: ReportSource) -> str:
    """A passage of the person's documents: name, page or section and the passage quoted,
    where a web source has its link and address (a `doc://` address means nothing on paper)."""
    passage = quoted(source)
    return (
        f'<li id="source-{source.number}"><span class="num">[{source.number}]</span>'
        f"{_esc(source.title)}"  # "Annual report, p. 12" (cited_title)
        + (f'<span class="passage">\u201c{_esc(passage)}\u201d</span>' if passage else "")
        + "</li>"
    )


def _source_item(source: ReportSource) -> str:
    if is_document(source):
        return _document_item(source)
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
    heading = f'<section class="sources"><h2>{_esc(doc.label("sources"))}</h2>'
    if not doc.sources:
        return f'{heading}<p>{_esc(doc.label("no_sources"))}</p></section>'
    items = "".join(_source_item(source) for source in doc.sources)
    return f'{heading}<ol class="sources">{items}</ol></section>'


def _method(doc: ReportDocument) -> str:
    if not doc.method:
        return ""
    items = "".join(f"<li>{_esc(line)}</li>" for line in doc.method_items)
    return (f'<section class="method"><h2>{_esc(doc.method_title or "How this report was made")}'
            f"</h2><ul>{items}</ul></section>")


def body_html(doc: ReportDocument) -> str:
    """The body as (unsanitised) HTML, citations linked to their Sources entries."""
    numbers = [s.number for s in doc.sources]
    body = link_citations(doc.body, numbers, lambda n: f"[\\[{n}\\]](#source-{n})")
    rendered = _MD.render(body)
    return _CITE_LINK_RE.sub(r'<a class="cite" href="#source-\1">', rendered)


def to_html(doc: ReportDocument) -> str:
    """A complete, sanitised HTML document ready for printing."""
    doc = clean_document(doc)
    fragment = _cover(doc) + f'<div class="report-body">{body_html(doc)}</div>' + _sources(doc) + _method(doc)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="author" content="{APP_NAME}">'
        f"<title>{_esc(doc.question)}</title><style>{_css(doc)}</style></head>"
        f"<body>{sanitise(fragment)}</body></html>\n"
    )


def render_pdf(
    html: str, fetcher: RefusingURLFetcher | None = None, *, limits: PdfLimits | None = None
) -> bytes:
    """Render finished HTML with WeasyPrint; nothing outside the string is ever loaded.

    Rendering happens in a child process under `limits`. The URLs the markup tried to load
    (all refused) are added to `fetcher.attempts` when a fetcher is given.
    """
    limits = limits or DEFAULT_LIMITS
    result = _run_child(html, limits)
    if fetcher is not None:
        fetcher.attempts.extend(str(url) for url in result.get("attempts") or [])
    if "error" in result:
        raise ResearchError(f"Could not create the PDF: {result['error']}")
    pdf = base64.b64decode(result.get("pdf") or "")
    if not pdf.startswith(b"%PDF"):
        raise ResearchError("Could not create the PDF: the layout engine returned no document.")
    return pdf


def to_pdf(
    doc: ReportDocument, *, fetcher: RefusingURLFetcher | None = None,
    limits: PdfLimits | None = None,
) -> bytes:
    """The report as PDF bytes. Pass a `fetcher` to inspect which URLs were refused."""
    return render_pdf(to_html(doc), fetcher, limits=limits)


# --- the child process (research.untrusted.sandbox) ----------------------------------------------------
# The child runs `research.export.weasy.render`: that module imports only WeasyPrint and two
# small stdlib-only modules, not this one (Markdown, the records, the store), so the child
# pays for nothing but the layout engine.
RENDER_TARGET = "research.export.weasy:render"


def _run_child(html: str, limits: PdfLimits) -> ChildAnswer:
    memory = f"needed more than {limits.memory_mb} MB of memory"
    try:
        return run_child(RENDER_TARGET, html.encode("utf-8", "replace"),
                         ChildLimits(limits.timeout_s, limits.memory_mb),
                         args=(str(limits.max_pdf_mb),))
    except ChildFailed as exc:
        if exc.reason == "start":
            raise ResearchError(f"Could not create the PDF: the layout engine could not start "
                                f"({redact(exc.detail)[:200]}).") from None
        if exc.reason == "timeout":
            raise ResearchError(
                f"Could not create the PDF: the layout took longer than {limits.timeout_s:g} s "
                "(the report is too large or too complex to lay out)."
            ) from None
        if exc.reason == "memory":
            return {"error": f"the layout {memory}."}
        if exc.reason == "killed":
            return {"error": f"the layout {memory} (or the layout engine crashed)."}
        return {"error": f"the layout engine stopped unexpectedly ({exc.detail})."}
