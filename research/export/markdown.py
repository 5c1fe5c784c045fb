"""Markdown export: header block, body with clickable citations, and a Sources section.

Anchors: each Sources entry starts with a fixed, empty `<a id="source-n"></a>` and each citation
`[n]` becomes `[[n]](#source-n)`. This works in GitHub (which prefixes ids but resolves the
fragment), GitLab, VS Code, Obsidian, pandoc and Python-Markdown, and needs no renderer-specific
heading slugs. The anchor is the only raw HTML we emit and it never carries outside data. A
passage of the person's own documents has no link: its entry quotes it (doc_passages.py).
Renderers that drop raw HTML (e.g. Streamlit without unsafe_allow_html) still show a correct
list; the citation links then just do not jump.

Everything that came from the web or a model outside the body (titles, URLs, notes, the
question) is escaped so it cannot add links, images or HTML; raw HTML in the body is escaped
too. Links in the body are trusted to have been filtered by `build_document`.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from urllib.parse import quote, urlsplit

from research.export.doc_passages import is_document, quoted
from research.export.document import (
    ReportDocument,
    ReportSource,
    link_citations,
    map_prose,
)
from research.export.safe_links import clean_document, export_markdown

# Any ASCII punctuation may be backslash-escaped in CommonMark. Escaping the characters that
# start inline markup anywhere, and list/heading markers at the start, makes text inert.
_MD_INLINE = re.compile(r"([\\`*_{}\[\]()<>#!|~&])")
_MD_LINE_START = re.compile(r"^(\d+)([.)])|^([-+=])")


def escape_markdown(text: str) -> str:
    """Make `text` render literally: one line, no links, images, emphasis, lists or HTML."""
    text = _MD_INLINE.sub(r"\\\1", " ".join(text.split()))
    return _MD_LINE_START.sub(lambda m: f"{m[1]}\\{m[2]}" if m[1] else f"\\{m[3]}", text)


# '<' that would open raw HTML (a tag, comment, declaration); autolinks like <https://x> stay.
_RAW_HTML_START = re.compile(r"<(?=[A-Za-z/!?])(?![A-Za-z][A-Za-z0-9+.\-]{1,31}:[^<>\s]*>)")


def neutralise_html(body: str) -> str:
    """Escape raw HTML in Markdown prose so no renderer that allows HTML will run it."""
    return map_prose(body, lambda chunk: _RAW_HTML_START.sub(r"\\<", chunk))


def safe_link_url(url: str) -> str | None:
    """The URL in a form that cannot break out of `(...)`, or None if it is not http(s)."""
    url = url.strip()
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError:
        return None
    if scheme not in ("http", "https"):
        return None
    # Percent-encode anything that could end the link destination or start markup.
    return quote(url, safe=":/?#@!$&*+,;=%~-._")


def format_date(created_at: str) -> str:
    """'2024-05-01T14:03:00+00:00' -> '2024-05-01 14:03 UTC'; unknown forms are kept."""
    try:
        moment = datetime.fromisoformat(created_at.strip())
    except ValueError:
        return created_at
    if moment.tzinfo is None:
        return moment.strftime("%Y-%m-%d %H:%M")
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _document_line(source: ReportSource) -> str:
    """A passage of the person's documents: its name, page or section, and the passage quoted
    below it (a blockquote inside the list item), where a web source has its link."""
    entry = escape_markdown(source.title)  # "Annual report, p. 12" (cited_title)
    line = f'{source.number}. <a id="source-{source.number}"></a>{entry}'
    passage = quoted(source)
    if passage:
        line += "\n" + " " * len(f"{source.number}. ") + f"> \u201c{escape_markdown(passage)}\u201d"
    return line


def _source_line(source: ReportSource) -> str:
    if is_document(source):
        return _document_line(source)
    title = escape_markdown(source.title or source.url)
    url = safe_link_url(source.url)
    entry = f"[{title}]({url})" if url else title
    details = [escape_markdown(part) for part in (source.domain, source.published, source.kind)
               if part]
    if details:
        entry += " \u2014 " + ", ".join(details)
    return f'{source.number}. <a id="source-{source.number}"></a>{entry}'


def to_markdown(doc: ReportDocument) -> str:
    doc = clean_document(doc)
    numbers = [s.number for s in doc.sources]
    body = link_citations(neutralise_html(doc.body), numbers, lambda n: f"[[{n}]](#source-{n})").strip()

    lines = [f"# {escape_markdown(doc.question)}", ""]
    label = doc.label
    lines.append(f"**{label('date')}:** {escape_markdown(format_date(doc.created_at))}")
    if doc.parameters_line and not doc.method:  # the method section says it in plain words
        lines[-1] += "  "
        lines.append(f"**{label('parameters')}:** {escape_markdown(doc.parameters_line)}")
    if doc.verification:
        lines[-1] += "  "
        lines.append(f"**{label('verification')}:** {escape_markdown(doc.verification)}")
    if doc.reading_time:
        lines[-1] += "  "
        lines.append(escape_markdown(doc.reading_time))
    if doc.notes:
        lines += ["", f"**{label('caveats')}**", ""]
        lines += [f"- {escape_markdown(note)}" for note in doc.notes]
    lines += ["", "---", "", body, "", f"## {label('sources')}", ""]
    if doc.sources:
        lines += [_source_line(source) for source in doc.sources]
    else:
        lines.append(label("no_sources"))
    if doc.method:
        lines += ["", f"## {escape_markdown(doc.method_title or 'How this report was made')}", ""]
        lines += [f"- {escape_markdown(line)}" for line in doc.method_items]
    return export_markdown("\n".join(lines) + "\n")
