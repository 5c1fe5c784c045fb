"""Citations in any common style become ours: `[n]`, n being the run's number of a gathered source.

Models cite in many ways whatever the prompt says: `[1][2]` glued after the full stop, `[1, 3-5]`,
footnotes `[^1]` with `[^1]: url` definitions, `[[7]](url)` and `([Title](url))` links, bare URLs,
`(Source 3)`, `【3†source】`, `<sup>3</sup>`, `^3^`, numbers glued after a sentence (`growth.12`),
author-year `(Smith et al., 2020)`, `(Source: Title)`, and their own reference lists whose numbers
are not ours (read and removed by research/report/reference_lists.py). This module turns all of them
into the house form before any check, so the checks, the verifier and the exports see one form.

Anything that points at nothing gathered in this run is removed and counted (a link keeps its
words as plain text, never a live link). A bracketed number that cannot be a citation because it
is a year (`[2024]`) becomes plain text `(2024)` instead of a vanishing citation.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from research.core.records import Source
from research.export.document import map_prose
from research.report.reference_lists import TRAILING, URL, Gathered, OwnReferences, read_references, title_key


@dataclass
class Normalised:
    text: str
    converted: int = 0        # citations that were in another style and are now [n]
    removed: int = 0          # citations and links that pointed at nothing gathered
    removed_items: list[str] = field(default_factory=list)  # what was removed, for the log


_YEAR = range(1900, 2101)
_NUMS = r"\d{1,4}(?:\s*[-\u2013\u2014]\s*\d{1,4})?(?:\s*[,;]\s*\d{1,4}(?:\s*[-\u2013\u2014]\s*\d{1,4})?)*"
_MAX_RANGE = 30

_THINK = re.compile(r"<think>.*?</think>\s*", re.DOTALL | re.IGNORECASE)
_THINK_END = re.compile(r"^.*</think>\s*", re.DOTALL | re.IGNORECASE)  # the opening tag was left out
# Hidden markup (Perplexity's export repeats every footnote in a span no one sees): never shown.
_HIDDEN = re.compile(r"<(span|div)\b[^>]{0,200}display\s*:\s*none[^>]{0,200}>", re.IGNORECASE)
_ANSWER_TAG = re.compile(r"^[ \t]*</?answer>[ \t]*\n?", re.IGNORECASE | re.MULTILINE)
_FN_REF = re.compile(r"\[\^([\w.-]+)\^?\]")  # [^1], Kimi's [^1^]
_LINK_TEXT = r"(?:[^\[\]\n\\]|\\.){0,300}"  # a link's words; escaped brackets allowed: [Report \[PDF\]](url)
_NUM_LINK = re.compile(r"\\?\[\s*\\?[\[(]?(\d{1,4})\\?[\])]?\s*\\?\]\(\s*<?(" + URL + r")>?\s*\)")
_MD_LINK = re.compile(
    r"(?P<open>\\?\[\s*)?(?P<paren>\(\s*)?\[(?P<text>" + _LINK_TEXT + r")\]\(\s*<?(?P<url>" + URL
    + r")>?(?:\s+\"[^\"]*\")?\s*\)(?P<close>\s*\))?(?P<bclose>\s*\\?\])?")
_ONE_LINK = r"\[" + _LINK_TEXT + r"\]\(\s*<?" + URL + r">?\s*\)"
_LINK_GROUP = re.compile(r"\(\s*" + _ONE_LINK + r"(?:\s*[;,]\s*" + _ONE_LINK + r")+\s*\)")
_AUTOLINK = re.compile(r"(\()?<(" + URL + r")>(?(1)\))")
_BARE = re.compile(r"(?<![\w/=\[<])(?P<paren>\(\s*)?(?P<url>" + URL + r")(?P<close>\s*\))?")
_LABEL = re.compile(
    r"[ \t]*(?:\(|\[|（)\s*(?:sources?|refs?\.?|references?|cite|citations?)[\s:#.]*(?P<n>" + _NUMS
    + r")\s*(?:\)|\]|）)|(?<![\w\[])[ \t]*\b(?-i:Source|Sources)[ \t]+#?(?P<m>\d{1,3}(?:[ \t]*(?:,|and|&)[ \t]*\d{1,3})*)\b",
    re.IGNORECASE)
_FULLWIDTH = re.compile(r"[ \t]*【\s*(?P<n>" + _NUMS + r")(?:[:：]\d+)?(?:\s*†[^】]*)?\s*】")
_DAGGER = re.compile(r"[ \t]*\[\s*(?P<n>" + _NUMS + r")\s*†[^\]\n]{0,40}\]")  # [1†source]
_CITE_TAG = re.compile(r"\[cite_(?:start|end)\]", re.IGNORECASE)
# ChatGPT's raw citation tokens name its own search turns, never our numbers: removed, counted.
_RAW_TOKEN = re.compile("[ \t]*\ue200(?:cite|filecite|navlist)\ue202[^\ue201]*\ue201")
_SUP = re.compile(r"[ \t]*<sup>\s*\[?(?P<n>" + _NUMS + r")\]?\s*</sup>", re.IGNORECASE)
_CARET = re.compile(r"(?<=\S)\^\[?(?P<n>" + _NUMS + r")\]?\^")
_UNICODE_SUP = re.compile(r"(?<=[A-Za-z.,;:!?)%])(?P<n>[¹²³⁰⁴-⁹]+(?:[,˒]\s?[¹²³⁰⁴-⁹]+)*)")
_SUP_DIGITS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹˒", "0123456789,")
_ESCAPED = re.compile(r"\\\[(?P<n>" + _NUMS + r")\\\]")
_PAREN_NUM = re.compile(r"(?<=[\w%)])[ \t]*\((?P<n>\d{1,3}(?:\s*[,;]\s*\d{1,3})*)\)(?=[.!?;,]|[ \t]*$)",
                        re.MULTILINE)
_GLUED = re.compile(r"(?<=[a-z%)”\"'][.!?])(?P<n>\d{1,3}(?:,\d{1,3})*)(?=\s|$)", re.MULTILINE)
_BRACKET = re.compile(r"[ \t]*\[(?P<n>" + _NUMS + r")\](?!\(|:)")
_TITLE_BRACKET = re.compile(r"[ \t]*\[(?P<t>[^\[\]\n]{12,200})\](?![(:])")
_NAME = r"[A-Z][\w'’-]+"
_AUTHOR_ITEM = (_NAME + r"(?:\s+et\s+al\.?|\s+(?:and|&)\s+" + _NAME + r")?,?\s+(?P<y>(?:19|20)\d\d)[a-z]?")
# (Smith et al., 2020) / (Smith & Lee, 2019; Chen, 2021): an entry of the model's list, or a
# gathered source by that author in that year.
_AUTHOR_YEAR = re.compile(r"[ \t]*\((?P<items>" + _AUTHOR_ITEM.replace("(?P<y>", "(?:")
                          + r"(?:\s*;\s*" + _AUTHOR_ITEM.replace("(?P<y>", "(?:") + r")*)\)")
_ONE_AUTHOR = re.compile(r"(?P<name>" + _NAME + r")\b.*?\b(?P<y>(?:19|20)\d\d)")
_AUTHOR_NARRATIVE = re.compile(r"\b(?P<name>" + _NAME + r")(?:\s+et\s+al\.?|\s+(?:and|&)\s+" + _NAME
                               + r")?\s+\((?P<y>(?:19|20)\d\d)[a-z]?\)")
# (Source: Title) / (来源：Title): the label names a gathered source by its title.
_SOURCE_TITLE = re.compile(r"[ \t]*[(（]\s*(?:sources?|来源|数据来源|资料来源|via)\s*[:：]\s*"
                           r"(?P<t>[^()（）\n]{3,300})[)）]", re.IGNORECASE)
_PLACE = "\x00{}\x00"
_GONE = "\x01"  # where a citation to nothing gathered was: it takes the space before it along
_PLACEHOLDER = re.compile(r"\x00([\d,]*)\x00")
# What a style's text must hold for its pattern to match (searched with the pattern's own
# flags): without it the pattern is not run at all.
_NUMBERED: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = (
    (_LABEL, re.compile("source|ref|cit", re.IGNORECASE)), (_FULLWIDTH, re.compile("【")),
    (_DAGGER, re.compile("†")), (_SUP, re.compile("<sup", re.IGNORECASE)),
    (_CARET, re.compile(r"\^")), (_ESCAPED, re.compile(r"\\\[")))
_SOURCE_WORDS = re.compile("source|来源|via", re.IGNORECASE)
_SUPERSCRIPT = re.compile("[¹²³⁰⁴-⁹]")


def _needs(chunk: str, styles: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...]) -> list[re.Pattern[str]]:
    """The patterns of `styles` whose needed text occurs in `chunk`."""
    return [pattern for pattern, needed in styles if needed.search(chunk)]


_CITE_WORDS = {"source", "sources", "link", "here", "ref", "reference", "citation", "cite", "pdf",
               "web", "website", "article", "page", "report", "study", "paper"}


def normalise(text: str, numbering: Mapping[Any, str],
              sources: Mapping[str, Source]) -> Normalised:
    """The text with every citation in the house `[n]` form (see the module docstring)."""
    gathered = Gathered.of(numbering, sources)
    text = text.replace("\r\n", "\n")  # the lists are found line by line
    state = Normalised(_ANSWER_TAG.sub("", _without_hidden(_THINK_END.sub("", _THINK.sub("", text)))))
    own, body = read_references(state.text, gathered)
    body = map_prose(body, lambda chunk: _prose(chunk, gathered, own, state))
    state.text = _finish(body)
    return state


def _without_hidden(text: str) -> str:
    """The text without its hidden spans, each up to its closing tag (found without a regex
    scanning back and forth: a text can hold thousands of openings and no closing)."""
    out, pos, low = [], 0, text.lower()
    for m in _HIDDEN.finditer(text):
        if m.start() < pos:
            continue
        end = low.find(f"</{m.group(1).lower()}", m.end())
        if end < 0:
            break
        out.append(text[pos:m.start()])
        pos = text.find(">", end) + 1 or len(text)
    return "".join(out) + text[pos:]


def _prose(chunk: str, gathered: Gathered, own: OwnReferences, state: Normalised) -> str:
    """One stretch of prose (no code): every style -> placeholders -> [n]."""

    def place(numbers: list[int | None], what: str, *, converted: bool = True) -> str:
        good = [n for n in numbers if n is not None]
        if len(good) < len(numbers):
            state.removed += len(numbers) - len(good)
            state.removed_items.append(what)
        if good and converted:
            state.converted += 1
        return " " + _PLACE.format(",".join(str(n) for n in good)) if good else _GONE

    def ours(items: str, what: str, *, converted: bool = True) -> str:
        numbers = _expand(items)
        if len(numbers) == 1 and numbers[0] not in gathered.numbers and numbers[0] in _YEAR \
                and str(numbers[0]) not in own.numbers:
            return f" ({numbers[0]})"  # a year in brackets, not a citation
        return place([_mapped(n, gathered, own) for n in numbers], what, converted=converted)

    # Each style is looked for only where the text holds what it needs (a bracket, a link, a
    # superscript...): most styles are absent from a given answer, and a pattern that may
    # start anywhere costs a scan of the whole text for nothing (`_needs`).
    chunk = _CITE_TAG.sub("", chunk)
    if "\ue200" in chunk:
        chunk = _RAW_TOKEN.sub(lambda m: place([None], m.group(0)), chunk)
    chunk = _FN_REF.sub(lambda m: place([own.numbers.get("^" + m.group(1), _num_or_none(m.group(1), gathered))],
                                        m.group(0)), chunk)
    if "](" in chunk:
        chunk = _NUM_LINK.sub(lambda m: place([gathered.url(m.group(2))], m.group(0)), chunk)
        chunk = _LINK_GROUP.sub(lambda m: _link_group(m.group(0), gathered, place, state), chunk)
        chunk = _MD_LINK.sub(lambda m: _md_link(m, gathered, place, state), chunk)
    if "<" in chunk:
        chunk = _AUTOLINK.sub(lambda m: place([gathered.url(m.group(2))], m.group(0)), chunk)
    chunk = _BARE.sub(lambda m: _bare(m, gathered, place), chunk)
    for pattern in _needs(chunk, _NUMBERED):
        chunk = pattern.sub(lambda m: ours(m.group("n") or m.group("m") or "", m.group(0)), chunk)
    if _SOURCE_WORDS.search(chunk):
        chunk = _SOURCE_TITLE.sub(lambda m: _source_title(m, gathered, place), chunk)
    if own.authors or gathered.by_author:
        chunk = _AUTHOR_YEAR.sub(lambda m: _author_year(m, gathered, own, place), chunk)
        chunk = _AUTHOR_NARRATIVE.sub(lambda m: _author_year(m, gathered, own, place), chunk)
    if _SUPERSCRIPT.search(chunk):
        chunk = _UNICODE_SUP.sub(lambda m: ours(m.group("n").translate(_SUP_DIGITS), m.group(0)), chunk)
    chunk = _PAREN_NUM.sub(lambda m: _if_ours(m, gathered, ours), chunk)
    chunk = _GLUED.sub(lambda m: _if_ours(m, gathered, ours), chunk)
    if "[" in chunk:
        chunk = _BRACKET.sub(lambda m: ours(m.group("n"), m.group(0), converted=bool(own.numbers)), chunk)
        chunk = _TITLE_BRACKET.sub(lambda m: _titled(m, gathered, place), chunk)
    return _cite_titles(chunk, gathered, state)


def _md_link(m: re.Match[str], gathered: Gathered, place: Callable[..., str], state: Normalised) -> str:
    """`[text](url)`: a citation-like link becomes [n]; a link in running prose keeps its words
    as plain text followed by [n]. A link to a page never gathered keeps only its words."""
    text, n = m.group("text").strip(), gathered.url(m.group("url"))
    wrapped = bool(m.group("paren") and m.group("close")) or bool(m.group("open") and m.group("bclose"))
    outer_open = (m.group("open") or "") if not m.group("bclose") else ""
    outer_close = (m.group("bclose") or "") if not m.group("open") else ""
    lead = (m.group("paren") or "") if not m.group("close") else ""
    tail = (m.group("close") or "") if not m.group("paren") else ""
    cell = re.search(r"\|[ \t]*$", m.string[:m.start()]) and re.match(r"[ \t]*\|", m.string[m.end():])
    citation_like = wrapped or bool(cell) or _citation_text(text, m.group("url"))
    if n is None:
        state.removed += 1
        state.removed_items.append(m.group("url"))
        words = _GONE if citation_like else text
        return outer_open + lead + words + tail + outer_close
    marker = place([n], m.group(0))
    if citation_like:
        return outer_open + lead + marker + tail + outer_close
    return outer_open + lead + text + marker + tail + outer_close


def _link_group(group: str, gathered: Gathered, place: Callable[..., str], state: Normalised) -> str:
    """`([A](u1); [B](u2))`: a parenthesised list of links is a list of citations."""
    found: list[int | None] = []
    for m in _MD_LINK.finditer(group):
        found.append(gathered.url(m.group("url")))
    return place(found, group)


def _citation_text(text: str, url: str) -> bool:
    plain = text.strip("[]()^ ").lower()
    host = re.sub(r"^https?://(www\.)?", "", url.lower()).split("/")[0]
    return (not plain or plain.isdigit() or plain in _CITE_WORDS or plain.startswith(("http", "www."))
            or plain.removeprefix("www.") == host or bool(re.fullmatch(r"[\w.-]+\.[a-z]{2,}", plain)))


def _bare(m: re.Match[str], gathered: Gathered, place: Callable[..., str]) -> str:
    url = m.group("url")
    tail = ""
    while url and url[-1] in TRAILING + ")":
        if url[-1] == ")" and url.count("(") >= url.count(")"):
            break
        tail, url = url[-1] + tail, url[:-1]
    paren, close = m.group("paren") or "", m.group("close") or ""
    if paren and close:
        paren, close = "", ""
    return paren + place([gathered.url(url)], url) + tail + close


def _source_title(m: re.Match[str], gathered: Gathered, place: Callable[..., str]) -> str:
    """`(Source: Title; Other title)`: citations when every title is a gathered one; a label
    around links already read (`(Source: [3])`) keeps only the citations."""
    inside = m.group("t")
    if not _PLACEHOLDER.sub("", inside).strip(" ,;、，"):
        return " " + "".join(_PLACE.format(n) for n in _PLACEHOLDER.findall(inside))
    found = [gathered.title_in(t) for t in re.split(r"\s*[;；]\s*", inside.strip()) if t.strip()]
    if found and None not in found:
        return place(found, m.group(0))
    return m.group(0)


def _author_year(m: re.Match[str], gathered: Gathered, own: OwnReferences, place: Callable[..., str]) -> str:
    """An author-year citation: [n] for each author found in the model's list or among the
    gathered sources; the words stay when some are not found (nothing is invented)."""
    whole = m.group(0)
    if "items" in m.groupdict():
        items = [_ONE_AUTHOR.search(item) for item in m.group("items").split(";")]
        found = [own.author(i.group("name"), i.group("y"), gathered) if i else None for i in items]
    else:
        found = [own.author(m.group("name"), m.group("y"), gathered)]
    good = [n for n in found if n is not None]
    if not good:
        return whole
    if len(good) == len(found) and "items" in m.groupdict():
        return place(good, whole)
    return whole + place(good, whole)


def _titled(m: re.Match[str], gathered: Gathered, place: Callable[..., str]) -> str:
    n = gathered.title(m.group("t"))
    return place([n], m.group(0)) if n is not None else m.group(0)


def _if_ours(m: re.Match[str], gathered: Gathered, ours: Callable[..., str]) -> str:
    """Parenthesised or glued numbers are citations only when every one is a gathered number."""
    numbers = _expand(m.group("n"))
    return ours(m.group("n"), m.group(0)) if numbers and set(numbers) <= gathered.numbers else m.group(0)


def _cite_titles(chunk: str, gathered: Gathered, state: Normalised) -> str:
    """A sentence that names a gathered source by its full title and cites nothing cites it."""
    if not gathered.by_title:
        return chunk
    # A title within one sentence is within the whole chunk's key (sentences are split at
    # spaces, lines and cells, which the key makes spaces too): most chunks name none, and
    # then only their sentence gaps are made single spaces, as below.
    key = title_key(chunk)
    names_one = any(title in key for title in gathered.by_title)
    if not names_one and "\t" not in chunk and "  " not in chunk:
        return chunk
    out = []
    for line in chunk.split("\n"):
        if line.lstrip().startswith("#") or ("\x00" in line and line.lstrip().startswith("|")):
            out.append(line)
        elif not names_one:
            out.append(line if line.lstrip().startswith("|") else _SENTENCE_GAP.sub(" ", line))
        elif line.lstrip().startswith("|"):  # a table row: the cell naming the source cites it
            out.append("|".join(_cite_title(cell, gathered, state) if cell.strip() else cell
                                for cell in line.split("|")))
        else:
            out.append(" ".join(_cite_title(s, gathered, state) for s in _SENTENCE_GAP.split(line)))
    return "\n".join(out)


_SENTENCE_GAP = re.compile(r"(?<=[.!?])[ \t]+(?=[A-Z\"“(*])")


def _cite_title(sentence: str, gathered: Gathered, state: Normalised) -> str:
    if "\x00" in sentence:
        return sentence
    low = title_key(sentence)
    found = [n for title, n in gathered.by_title.items() if title in low]
    if not found:
        return sentence
    state.converted += 1
    body = sentence.rstrip()
    end = body[-1] if body[-1:] in ".!?" else ""
    marker = " " + _PLACE.format(",".join(map(str, found)))
    return body[: len(body) - len(end)] + marker + end + sentence[len(body):]


def _finish(text: str) -> str:
    """Placeholders -> `[n][m]`; citations glued after a full stop move before it."""
    def numbers(m: re.Match[str]) -> str:
        found = [int(n) for n in m.group(1).split(",") if n]
        return "".join(f"[{n}]" for n in dict.fromkeys(found))

    text = _PLACEHOLDER.sub(numbers, text)
    # `([1](u1), [2](u2))`: a parenthesis that held only citations is those citations
    text = re.sub(r"\(\s*((?:\[\d+\][ \t,;]*)+)\)", lambda m: "".join(re.findall(r"\[\d+\]", m.group(1))), text)
    text = re.sub(r"^\x01[ \t]*|[ \t]*\x01", "", text, flags=re.MULTILINE)
    text = re.sub(r"(?:\[\d+\])(?:[ \t]*\[\d+\])+", lambda m: "".join(
        f"[{n}]" for n in dict.fromkeys(re.findall(r"\d+", m.group(0)))), text)
    text = re.sub(r"([.!?])[ \t]*((?:\[\d+\])+)(?=[ \t]*(?:$|\n|[A-Z\"“(*]))", r" \2\1", text)
    text = re.sub(r"[ \t]+((?:\[\d+\])+)", r" \1", text)
    text = re.sub(r"(?<=[^\s\[\]])(\[\d+\])", r" \1", text)
    text = re.sub(r"[ \t]*(?:\(\s*\)|\[\s*\])", "", text)
    text = re.sub(r"(\[\d+\])[ \t]+([.,;:!?])", r"\1\2", text)
    text = re.sub(r"^[ \t]+(\[\d)", r"\1", text, flags=re.MULTILINE)
    return re.sub(r"(?<=\S)[ \t]{2,}(?=\S)", " ", text)


def _expand(items: str) -> list[int]:
    numbers: list[int] = []
    for part in re.split(r"\s*(?:[,;]|\band\b|&)\s*", items.strip()):
        bounds = [b for b in re.split(r"\s*[-\u2013\u2014]\s*", part) if b.strip().isdigit()]
        if len(bounds) == 2 and 0 <= int(bounds[1]) - int(bounds[0]) <= _MAX_RANGE:
            numbers.extend(range(int(bounds[0]), int(bounds[1]) + 1))
        else:
            numbers.extend(int(b) for b in bounds)
    return numbers


def _mapped(n: int, gathered: Gathered, own: OwnReferences) -> int | None:
    """The model's own reference list wins; otherwise the number is ours if gathered."""
    if str(n) in own.numbers:
        return own.numbers[str(n)]
    return n if n in gathered.numbers else None


def _num_or_none(key: str, gathered: Gathered) -> int | None:
    digits = re.sub(r"^\d+_", "", key)  # Perplexity's turn prefix: [^1_12]
    return int(digits) if digits.isdigit() and int(digits) in gathered.numbers else None
