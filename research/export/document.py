"""The report as exporters see it: a clean body plus the numbered sources it cites.

The writer cites with its own numbers and may invent some; `build_document` is the one place
where those numbers become the reader's numbers. It keeps only citations that point to a
source gathered in this run, renumbers them by first appearance, drops links to pages that
were never gathered and the writer's own reference list, and lists exactly the cited sources.
Markdown and PDF output both start from the resulting `ReportDocument`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from research.core.records import Source
from research.untrusted.credibility import kind_of


@dataclass(frozen=True)
class ReportSource:
    number: int
    source_id: str
    title: str
    url: str
    domain: str
    published: str | None
    subtopic: str | None
    provider: str = ""  # the search service that found it (arxiv/semanticscholar: a paper)
    kind: str = ""      # research.untrusted.credibility: peer-reviewed paper, preprint, government, ...
    passage: str = ""   # a passage of the person's documents: the text cited (doc_passages.py)


@dataclass(frozen=True)
class ReportDocument:
    run_id: str
    question: str
    created_at: str
    parameters_line: str
    body: str
    sources: tuple[ReportSource, ...]
    notes: tuple[str, ...] = ()
    verification: str = ""  # one plain-words line: the share of claims verified (SPEC step 7)
    labels: tuple[tuple[str, str], ...] = ()  # fixed words in the report's language
    reading_time: str = ""  # "Estimated reading time: 6 minutes.", shown at the top
    method_title: str = ""  # "How this report was made" (in the report's language)
    method: tuple[str, ...] = ()  # the method section's lines, shown at the end

    @property
    def method_items(self) -> tuple[str, ...]:
        """The method section's lines, ending with the run record (rounds, searches, time),
        which opened the report before and now sits here, with the other facts of method."""
        record = (self.parameters_line,) if self.parameters_line else ()
        return (*self.method, *record) if self.method else ()

    def label(self, key: str) -> str:
        """A fixed word of the export (Sources, Date...) in the report's language."""
        return dict(self.labels).get(key) or LABELS[key]


APP_NAME = "Deep Research Studio"  # the author of every exported file

# The exports' own words; translated ones replace them for reports in other languages.
LABELS = {
    "date": "Date", "run": "Run", "parameters": "Parameters", "verification": "Verification",
    "caveats": "Caveats", "sources": "Sources", "no_sources": "No sources were cited.",
    "page": "Page", "of": "of",
}
_LABEL_CHARS = re.compile(r"[^\w .,:()'\-]", re.UNICODE)


def clean_labels(labels: Mapping[str, str] | None) -> tuple[tuple[str, str], ...]:
    """Model-translated labels, made safe to place in Markdown, HTML and CSS strings."""
    out = []
    for key in LABELS:
        value = _LABEL_CHARS.sub("", str((labels or {}).get(key) or "")).strip()[:60]
        if value:
            out.append((key, value))
    return tuple(out)


# --- prose vs code ----------------------------------------------------------------------------

_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _split_code(text: str) -> Iterator[tuple[bool, str]]:
    """Yield (is_code, chunk) pieces; code is fenced blocks and inline code spans.

    Citations and links inside code are literal text, so the rewriting passes skip them.
    """
    lines = text.splitlines(keepends=True)
    prose: list[str] = []
    i = 0
    while i < len(lines):
        opened = _FENCE_OPEN.match(lines[i])
        if not opened:
            prose.append(lines[i])
            i += 1
            continue
        if prose:
            yield from _split_inline_code("".join(prose))
            prose = []
        fence = opened.group(1)
        closing = re.compile(r"^ {0,3}" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*$")
        block = [lines[i]]
        i += 1
        while i < len(lines):
            block.append(lines[i])
            i += 1
            if closing.match(block[-1]):
                break
        yield True, "".join(block)
    if prose:
        yield from _split_inline_code("".join(prose))


_BACKTICKS = re.compile(r"`+")


def _split_inline_code(text: str) -> Iterator[tuple[bool, str]]:
    pos = 0
    search_from = 0
    while True:
        opening = _BACKTICKS.search(text, search_from)
        if opening is None:
            break
        run = opening.group(0)
        closing = re.compile(r"(?<!`)" + run + r"(?!`)").search(text, opening.end())
        if closing is None:
            search_from = opening.end()
            continue
        if opening.start() > pos:
            yield False, text[pos : opening.start()]
        yield True, text[opening.start() : closing.end()]
        pos = search_from = closing.end()
    if pos < len(text):
        yield False, text[pos:]


def map_prose(text: str, prose: Callable[[str], str], code: Callable[[str], str] | None = None) -> str:
    """Apply `prose` to the text outside code (and `code`, if given, to the code), in order."""
    out = []
    for is_code, chunk in _split_code(text):
        if is_code:
            out.append(code(chunk) if code else chunk)
        else:
            out.append(prose(chunk))
    return "".join(out)


# --- citations --------------------------------------------------------------------------------

_NUM_ITEM = r"\d{1,4}(?:\s*[-\u2013\u2014]\s*\d{1,4})?"
# One bracket group of citation numbers: [3], [1, 3], [2-4], [1; 5-6]. Not a link's text.
CITATION_RE = re.compile(
    r"(?P<space>(?<![ \t])[ \t]*)\[(?P<items>\s*"
    + _NUM_ITEM
    + r"(?:\s*[,;]\s*"
    + _NUM_ITEM
    + r")*\s*)\](?!\()"
)
_MAX_RANGE = 30


def expand_citation(items: str) -> list[int]:
    """'1, 3-5' -> [1, 3, 4, 5]. Absurd ranges keep only their two ends."""
    numbers: list[int] = []
    for part in re.split(r"\s*[,;]\s*", items.strip()):
        bounds = re.split(r"\s*[-\u2013\u2014]\s*", part)
        if len(bounds) == 2:
            start, end = int(bounds[0]), int(bounds[1])
            if start <= end and end - start <= _MAX_RANGE:
                numbers.extend(range(start, end + 1))
            else:
                numbers.extend((start, end))
        else:
            numbers.append(int(bounds[0]))
    return numbers


def link_citations(body: str, known: Iterable[int], render: Callable[[int], str]) -> str:
    """Replace each citation group in prose with `render(n)` per known number; drop the rest."""
    allowed = set(known)

    def replace(match: re.Match[str]) -> str:
        numbers = sorted({n for n in expand_citation(match.group("items")) if n in allowed})
        if not numbers:
            return ""
        return match.group("space") + "".join(render(n) for n in numbers)

    return map_prose(body, lambda chunk: CITATION_RE.sub(replace, chunk))


# --- links and URLs ---------------------------------------------------------------------------

_URL_CHARS = r"(?:[^()\s<>]|\([^()\s<>]*\))+"
_LINKS_RE = re.compile(
    r"(?P<image>!\[(?P<alt>[^\[\]]*)\]\(\s*<?" + _URL_CHARS + r">?(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\))"
    r"|(?P<link>\[(?P<text>[^\[\]]*)\]\(\s*<?(?P<href>"
    + _URL_CHARS
    + r")>?(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\))"
    r"|(?P<auto><(?P<autourl>[A-Za-z][A-Za-z0-9+.\-]{1,31}:[^<>\s]*)>)"
    r"|(?P<space>(?<![ \t])[ \t]*)(?P<bare>(?:https?://|www\.)[^\s<>\"'`]+)",
    re.IGNORECASE,
)
_BARE_URL_RE = re.compile(
    r"(?P<space>(?<![ \t])[ \t]*)(?P<url>(?:https?://|www\.)[^\s<>\"'`]+)", re.IGNORECASE
)
_TRAILING_PUNCT = ".,;:!?*_~'\")]}"
_REFERENCE_DEF_RE = re.compile(r"^ {0,3}\[[^\]\n]+\]:[ \t]*\S+.*(?:\n|$)", re.MULTILINE)
# Raw HTML that loads or runs something (a page may ask the writer for a tracking pixel). The
# exporters escape raw HTML anyway; these tags are dropped so not even their text is left.
_EMBED_TAGS = (r"img|image|iframe|frame|frameset|object|embed|applet|video|audio|source|track|"
               r"picture|svg|math|link|meta|base|script|style|form|input|portal")
_EMBED_BLOCK_RE = re.compile(
    r"<\s*(script|style|svg|math|iframe|object|video|audio|picture|applet)\b.*?<\s*/\s*\1\s*>",
    re.IGNORECASE | re.DOTALL,
)
_EMBED_TAG_RE = re.compile(r"<\s*/?\s*(?:" + _EMBED_TAGS + r")\b[^>]*>?", re.IGNORECASE)


@lru_cache(maxsize=4096)
def normalise_url(url: str) -> str:
    """The form two URLs are compared in: no fragment, lower-case host, no trailing slash.
    Kept for recent URLs: every export of a report compares each of the run's sources again."""
    url = url.strip().strip("<>")
    if url.lower().startswith("www."):
        url = "http://" + url
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    scheme = parts.scheme.lower()
    if scheme == "http":
        scheme = "https"  # a page gathered over http is the same page over https
    host = parts.netloc.lower().removeprefix("www.")
    return urlunsplit((scheme, host, parts.path.rstrip("/"), parts.query, ""))


def _split_trailing(url: str) -> tuple[str, str]:
    """Split sentence punctuation off a bare URL ('...page).' -> '...page', ').')."""
    tail = ""
    while url and url[-1] in _TRAILING_PUNCT:
        if url[-1] == ")" and url.count("(") >= url.count(")"):
            break
        tail = url[-1] + tail
        url = url[:-1]
    return url, tail


def _drop_url(space: str, match: str, allowed: set[str]) -> str:
    """Keep a gathered URL; otherwise drop it, keeping its trailing punctuation ('see x.' -> 'see.')."""
    url, tail = _split_trailing(match)
    if normalise_url(url) in allowed:
        return space + match
    return tail if tail else space


def _strip_bare_urls(text: str, allowed: set[str]) -> str:
    return _BARE_URL_RE.sub(lambda m: _drop_url(m.group("space"), m.group("url"), allowed), text)


def strip_foreign_links(body: str, allowed_urls: Iterable[str]) -> str:
    """Keep links and URLs to gathered sources; unwrap or drop all others. Images, and raw
    HTML that would load or run something, never stay."""
    allowed = {normalise_url(u) for u in allowed_urls if u}

    def replace(match: re.Match[str]) -> str:
        if match.group("image") is not None:
            return _strip_bare_urls(match.group("alt"), allowed)
        if match.group("link") is not None:
            href = match.group("href")
            if href.startswith("#") or normalise_url(href) in allowed:
                return match.group(0)
            return _strip_bare_urls(match.group("text"), allowed)
        if match.group("auto") is not None:
            return match.group(0) if normalise_url(match.group("autourl")) in allowed else ""
        return _drop_url(match.group("space"), match.group("bare"), allowed)

    def prose(chunk: str) -> str:
        chunk = _EMBED_TAG_RE.sub("", _EMBED_BLOCK_RE.sub("", chunk))
        return _LINKS_RE.sub(replace, _REFERENCE_DEF_RE.sub("", chunk))

    return map_prose(body, prose, lambda chunk: _strip_bare_urls(chunk, allowed))


# --- the writer's own reference list -----------------------------------------------------------

_REF_TITLES = r"(?:sources|references|bibliography|works\s+cited|reference\s+list|sources\s+cited|citations|cited\s+sources)"
_REF_HEADING_RE = re.compile(
    r"^ {0,3}(?P<hashes>#{1,6})[ \t]+" + _REF_TITLES + r"[ \t]*:?[ \t]*#*[ \t]*$",
    re.IGNORECASE,
)
_REF_LABEL_RE = re.compile(
    r"^ {0,3}(?:\*\*|__)?" + _REF_TITLES + r"[ \t]*:?[ \t]*(?:\*\*|__)?[ \t]*:?[ \t]*$",
    re.IGNORECASE,
)
_ANY_HEADING_RE = re.compile(r"^ {0,3}(#{1,6})[ \t]")


def strip_reference_sections(body: str) -> str:
    """Remove 'Sources'/'References' sections the writer added; the exporters write their own.

    A heading-form section ends at the next heading of the same or a higher level; a bare
    label ('**References:**') runs to the end of the text.
    """
    lines = body.splitlines(keepends=True)
    kept: list[str] = []
    in_fence = False
    skipping_level: int | None = None
    for index, line in enumerate(lines):
        if _FENCE_OPEN.match(line):
            in_fence = not in_fence
        if skipping_level is not None:
            heading = _ANY_HEADING_RE.match(line)
            if in_fence or heading is None or len(heading.group(1)) > skipping_level:
                continue
            skipping_level = None
        if not in_fence:
            found = _REF_HEADING_RE.match(line)
            if found:
                skipping_level = len(found.group("hashes"))
                continue
            if _REF_LABEL_RE.match(line):
                rest = "".join(lines[index + 1 :])
                if not _ANY_HEADING_RE.search(rest):
                    break
        kept.append(line)
    return "".join(kept).rstrip() + "\n"


# --- building the document ----------------------------------------------------------------------


def _domain(url: str) -> str:
    """The web site of a source; none for a passage of the person's documents (doc://)."""
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "") if parts.scheme in ("http", "https") else ""
    except ValueError:
        host = ""
    return host.removeprefix("www.")


def _text(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def build_document(
    *,
    run_id: str,
    question: str,
    created_at: str,
    parameters_line: str,
    draft: str,
    numbering: Mapping[int, str] | Mapping[str, str],
    sources: Sequence[Source],
    notes: Iterable[str] = (),
    verification: str = "",
    labels: Mapping[str, str] | None = None,
    reading_time: str = "",
    method_title: str = "",
    method: Iterable[str] = (),
) -> ReportDocument:
    """Turn the writer's draft into a report whose every citation and link is a gathered source.

    `numbering` maps the writer's citation numbers (int or numeric str keys) to source ids;
    `sources` are this run's stored source records (`id`, `url`, `title`, `published`,
    `subtopic_id`).
    """
    by_id = {s.id: s for s in sources}
    # Numbering read back from JSON has string keys ("3"); accept both.
    writer_numbers = {int(k): str(v) for k, v in numbering.items() if str(k).strip().isdigit()}
    body = strip_reference_sections(draft)
    body = strip_foreign_links(body, (s.url for s in by_id.values()))

    new_number: dict[str, int] = {}

    def renumber(match: re.Match[str]) -> str:
        numbers: list[int] = []
        for written in expand_citation(match.group("items")):
            source_id = writer_numbers.get(written)
            if source_id is None or source_id not in by_id:
                continue  # an invented citation never survives
            if source_id not in new_number:
                new_number[source_id] = len(new_number) + 1
            numbers.append(new_number[source_id])
        if not numbers:
            return ""
        return match.group("space") + "".join(f"[{n}]" for n in sorted(set(numbers)))

    body = map_prose(body, lambda chunk: CITATION_RE.sub(renumber, chunk))

    cited = []
    for source_id, number in sorted(new_number.items(), key=lambda item: item[1]):
        record = by_id[source_id]
        url = record.url
        cited.append(
            ReportSource(
                number=number,
                source_id=source_id,
                title=_text(record.title) or _domain(url) or url,
                url=url,
                domain=_domain(url),
                published=_text(record.published),
                subtopic=_text(record.subtopic_id),
                provider=record.provider,
                kind=kind_of(record),
            )
        )
    return ReportDocument(
        run_id=run_id,
        question=question,
        created_at=created_at,
        parameters_line=parameters_line,
        body=body,
        sources=tuple(cited),
        notes=tuple(notes),
        verification=" ".join(verification.split()),
        labels=clean_labels(labels),
        reading_time=" ".join(reading_time.split()),
        method_title=" ".join(method_title.split()),
        method=tuple(" ".join(line.split()) for line in method if line.strip()),
    )
