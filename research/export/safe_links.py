"""The last pass over Markdown we hand out: only http, https, mailto and `#source-n` links live.

Why a parser and not more regexes: a model (or a page it quotes) can spell a link in many
forms a regex misses — a destination holding `<`, entities (`&#106;avascript:`), odd case
and spacing, reference definitions, autolinks, images, raw HTML. Here markdown-it-py (a
CommonMark parser, as the dashboard's renderer is) says which links a renderer would make,
with every check of its own switched off so it reports them all. Each block holding a link we
do not allow gets its link-making characters escaped (our own citation links kept), and the
result is parsed again until nothing is left. Both the Markdown export and the Run page's
report go through `safe_markdown`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from functools import lru_cache
from typing import TypeVar

from markdown_it import MarkdownIt
from markdown_it.token import Token

from research.core.prompts import strip_control

ALLOWED_SCHEMES = ("http", "https", "mailto")
_OWN_ANCHOR = re.compile(r"#source-\d+")
_OWN_HTML = re.compile(r'<a id="source-\d+">|</a>')
# Our citation links, kept when a block around them is defused.
_CITATION = re.compile(r"\[\[\d+\]\]\((?:#source-\d+|https?://[^\s()<>\[\]\\]+)\)")
_SCHEME = re.compile(r"^([a-z][a-z0-9+.\-]*):")
_LINK_CHARS = re.compile(r"(\\.)|([\[\]<])", re.DOTALL)
_MAX_PASSES = 6
T = TypeVar("T")


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    md.validateLink = lambda url: True  # type: ignore[method-assign]  # report every link
    return md


_MD = _parser()


def allowed_href(href: str) -> bool:
    """True for http(s) and mailto URLs and our own `#source-n` anchors; nothing else."""
    value = "".join(ch for ch in href if ch > " " and ch != "\x7f").lower()
    if _OWN_ANCHOR.fullmatch(value):
        return True
    match = _SCHEME.match(value)
    return match is not None and match.group(1) in ALLOWED_SCHEMES


def _walk(tokens: list[Token], block_map: list[int] | None = None) -> Iterator[tuple[Token, list[int] | None]]:
    for token in tokens:
        where = token.map or block_map
        yield token, where
        if token.children:
            yield from _walk(token.children, where)


def _bad(token: Token) -> bool:
    if token.type == "link_open":
        return not allowed_href(str(token.attrGet("href") or ""))
    if token.type == "image":
        return True  # images load something from elsewhere; reports carry none
    if token.type in ("html_inline", "html_block"):
        tags = re.findall(r"<[^>]*>?", token.content)
        return not tags or not all(_OWN_HTML.fullmatch(tag) for tag in tags)
    return False


def unsafe_lines(markdown: str) -> list[tuple[int, int]]:
    """Line ranges [start, end) of the blocks that hold a link, image or HTML we do not allow."""
    ranges: set[tuple[int, int]] = set()
    for token, where in _walk(_MD.parse(markdown)):
        if _bad(token):
            start, end = where if where else (0, markdown.count("\n") + 1)
            ranges.add((start, end))
    return sorted(ranges)


def _escape_link_chars(text: str) -> str:
    return _LINK_CHARS.sub(lambda m: m.group(1) or "\\" + m.group(2), text)


def _defuse(line: str, keep_citations: bool) -> str:
    if not keep_citations:
        return _escape_link_chars(line)
    out, last = [], 0
    for match in _CITATION.finditer(line):
        out += [_escape_link_chars(line[last:match.start()]), match.group(0)]
        last = match.end()
    out.append(_escape_link_chars(line[last:]))
    return "".join(out)


@lru_cache(maxsize=32)
def safe_markdown(markdown: str) -> str:
    """`markdown` with every link, image and raw HTML other than ours made plain text.

    Remembered for the last texts asked (a pure function of its text): the Run page shows the
    same report on every rerun of the page, and parsing a long report is costly."""
    lines = markdown.split("\n")
    for attempt in range(_MAX_PASSES):
        ranges = unsafe_lines("\n".join(lines))
        if not ranges:
            return "\n".join(lines)
        keep = attempt < _MAX_PASSES - 2
        for start, end in ranges:
            for i in range(start, min(end, len(lines))):
                lines[i] = _defuse(lines[i], keep)
    # Still something live after escaping every link character: give up on the text's form.
    return "\n".join(_escape_link_chars(line).replace("!", "\\!") for line in lines)


def clean_document(doc: T) -> T:
    """A dataclass (a ReportDocument) with terminal control characters stripped from every
    text field, so nothing written to an export can drive a terminal that shows it."""
    if not dataclasses.is_dataclass(doc) or isinstance(doc, type):
        return doc
    changes: dict[str, object] = {}
    for field in dataclasses.fields(doc):
        value = getattr(doc, field.name)
        if isinstance(value, str):
            changes[field.name] = strip_control(value)
        elif isinstance(value, tuple):
            changes[field.name] = tuple(
                strip_control(v) if isinstance(v, str) else clean_document(v) for v in value)
    return dataclasses.replace(doc, **changes)


def export_markdown(markdown: str) -> str:
    """The finished Markdown export: no control characters, no link we do not allow."""
    return safe_markdown(strip_control(markdown))
