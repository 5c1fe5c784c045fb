"""The writer's own reference list: found, read against the gathered sources, and removed.

Models end their text with a list of what they cited, whatever the prompt says, in many shapes:
a "References" / "Sources" / "Works cited" / "Key Citations" / "参考文献：" section (a Markdown
heading, a bold label, a numbered heading such as "## 7. References", or a `<references>` tag),
footnote definitions `[^1]: url`, reference definitions `[1]: url`, or just a block of
`[1] url - title` / `1. [Title](url)` / `- [Title](url)` lines at the very end with no heading.
Its entries are numbered (`[1]`, `\\[1\\]`, `1.`) or not (`- Smith, J. (2020). Title. url`).

Each entry is matched to a gathered source: by URL first, then by title, then by STORM's
"(reference N from collected information)", which names the N-th source it was given (ours).
The model's numbers then map to ours, and author-year citations `(Smith, 2020)` find their entry
(or a gathered source with that author and year). The list itself is removed: the report's
Sources section is rendered by us from what the text cites.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

from research.core.records import Source
from research.untrusted.urls import canonical_url

URL = r"https?://[^\s<>\"'`\]\)]+(?:\([^\s()<>]*\)[^\s<>\"'`\]\)]*)*"
TRAILING = ".,;:!?*_~'\""


@dataclass(frozen=True)
class Gathered:
    """What a citation may point at: the run's numbers, by URL, by title, by author and year."""
    numbers: frozenset[int]
    by_url: Mapping[str, int]
    by_title: Mapping[str, int]
    by_author: Mapping[tuple[str, str], int | None] = field(default_factory=dict)

    @classmethod
    def of(cls, numbering: Mapping[Any, str], sources: Mapping[str, Source]) -> Gathered:
        """`numbering` maps citation numbers (int or numeric str) to source ids."""
        entries = []
        for key, sid in sorted(numbering.items(), key=lambda kv: int(str(kv[0]))):
            source = sources.get(str(sid))
            if source is not None and str(key).strip().isdigit():
                entries.append((int(str(key)), source.url, source.canonical_url, source.title,
                                source.author or "", source.published or ""))
        return _gathered(tuple(entries))

    def url(self, url: str) -> int | None:
        for key in _url_keys(url.strip().strip("<>")):
            if key in self.by_url:
                return self.by_url[key]
        return None

    def title(self, text: str) -> int | None:
        return self.by_title.get(title_key(text))

    def title_in(self, text: str) -> int | None:
        """The source whose full title this text gives (the longest such title), or whose
        title holds all of this text when it is a title itself (`Title | Site` pages)."""
        key = title_key(text)
        if not key:
            return None
        found = self.by_title.get(key)
        if found is not None:
            return found
        inside = [t for t in self.by_title if f" {t} " in f" {key} "]
        if inside:
            return self.by_title[max(inside, key=len)]
        if len(key) >= 16 and len(key.split()) >= 3:
            holders = {n for t, n in self.by_title.items() if f" {key} " in f" {t} "}
            if len(holders) == 1:
                return holders.pop()
        return None


@lru_cache(maxsize=16)
def _gathered(entries: tuple[tuple[int, str, str, str, str, str], ...]) -> Gathered:
    """The `Gathered` of (number, url, canonical url, title, author, published) entries in
    number order, kept for the last few: a run normalises every part of its draft and then the
    whole report against the same numbered sources, and reading their addresses, titles and
    authors costs more than this key."""
    numbers: set[int] = set()
    by_url: dict[str, int] = {}
    by_title: dict[str, int] = {}
    by_author: dict[tuple[str, str], int | None] = {}
    for n, url_, canonical, title_, author, published in entries:
        numbers.add(n)
        for url in (url_, canonical):
            for key in _url_keys(url) if url else ():
                by_url.setdefault(key, n)
        title = title_key(title_)
        if len(title) >= 12 and len(title.split()) >= 3:
            by_title.setdefault(title, n)
        found = _author_key(author, published)
        if found:  # two sources by the same author in the same year: neither is meant
            by_author[found] = n if by_author.get(found, n) == n else None
    return Gathered(frozenset(numbers), by_url, by_title, by_author)


@dataclass
class OwnReferences:
    """The model's numbering -> ours (None: its entry points at nothing gathered), and its
    author-year entries -> ours."""
    numbers: dict[str, int | None] = field(default_factory=dict)
    authors: dict[tuple[str, str], int | None] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.numbers or self.authors)

    def author(self, name: str, year: str, gathered: Gathered) -> int | None:
        key = (name.lower(), year[:4])
        if key in self.authors:
            return self.authors[key]
        return gathered.by_author.get(key)


_ARXIV = re.compile(r"^https://(?:export\.)?arxiv\.org/(?:abs|pdf)/([a-z.-]*/?\d{4}\.\d{4,5}|[a-z.-]+/\d{7})"
                    r"(?:v\d+)?(?:\.pdf)?$", re.IGNORECASE)
_DOI = re.compile(r"^https://(?:dx\.)?doi\.org/(10\.\S+)$", re.IGNORECASE)


def _url_keys(url: str) -> list[str]:
    """The forms a page's address is matched in: canonical, with its escapes decoded (a model
    writes `Café` for `Caf%C3%A9`), and one key per paper for arXiv (any version, abstract or
    PDF) and DOI links."""
    keys = list(dict.fromkeys([canonical_url(url), canonical_url(unquote(url))]))
    for key in list(keys):
        paper = _ARXIV.match(key)
        if paper:
            keys.append("arxiv:" + paper.group(1).lower())
        doi = _DOI.match(key)
        if doi:
            keys.append("doi:" + unquote(doi.group(1)).lower())
    return keys


# --- finding the lists ----------------------------------------------------------------------

_FN_DEF = re.compile(r"^ {0,3}\[\^([\w.-]+)\]:[ \t]*(.*)$", re.MULTILINE)
_REF_DEF = re.compile(r"^ {0,3}\[(\d{1,4})\]:[ \t]*(.*)$\n?", re.MULTILINE)  # [3]: https://...
_WORDS = (r"(?:references?|sources?(?:[ \t]+cited)?|bibliography|works[ \t]+cited|reference[ \t]+list|"
          r"citations|cited[ \t]+sources|key[ \t]+citations|further[ \t]+reading|"
          r"参考文献|参考资料|参考来源|引用来源|引用文献|资料来源|数据来源|来源|出典|참고[ \t]*문헌|출처|"
          # the writer writes in the report's language: its list's heading too
          r"quellen|quellenverzeichnis|literatur|literaturverzeichnis|références|fuentes|referencias|"
          r"bibliografía|fonti|riferimenti|bibliografia|referências|источники|литература)")
_HEADING = re.compile(
    r"^ {0,3}(?:(?P<hashes>#{1,6})[ \t]+)?(?:\*\*|__)?[ \t]*(?:(?:\d{1,2}(?:\.\d{1,2})*|[IVXLC]{1,6})"
    r"[.)]?[ \t]+)?" + _WORDS + r"(?:[ \t]*(?:/|&|and|和|与)[ \t]*" + _WORDS + r")?"
    r"[ \t]*[:：]?[ \t]*(?:\*\*|__)?[ \t]*[:：]?[ \t]*#*[ \t]*$"
    r"|^[ \t]*<(?P<tag>references|sources|citations|bibliography)>[ \t]*$", re.IGNORECASE)
_ANY_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]")
_FENCE = re.compile(r"^ {0,3}(?:`{3,}|~{3,})")
_CLOSING_TAG = re.compile(r"^[ \t]*</[\w ]{1,40}>[ \t]*$")
_NUMBERED = re.compile(r"^ {0,3}(?:[-*+][ \t]+)?(?:\\?\[(\d{1,4})\\?\]|(\d{1,4})\\?[.)])[ \t]+(.*)$")
# A bullet that is a link or a URL, with at most a note after a dash or colon: `- [Title](url) - note`
_LINK_ENTRY = re.compile(r"^ {0,3}[-*+•][ \t]+(?:\[[^\]\n]*\]\(\s*<?" + URL + r">?\s*\)|<?" + URL
                         + r">?)[ \t]*(?:[-–—:,|][^\n]{0,300})?$")
# DeepScholar's list: `\[[Author' 2020-03-04](url)\] Title` lines, the in-text form leading a title.
_BRACKETED_LINK = re.compile(r"^ {0,3}\\?\[\[[^\]\n]*\]\(\s*<?" + URL + r">?\s*\)\\?\]")
_URL_LINE = re.compile(r"^[ \t]*<?" + URL + r">?[ \t]*$")
_LINK_IN = re.compile(r"\]\(\s*<?(" + URL + r")>?\s*\)|<(" + URL + r")>|(" + URL + r")")
_COLLECTED = re.compile(r"\(?\s*reference\s+(\d{1,4})\s+from\s+(?:the\s+)?collected\s+information\s*\)?",
                        re.IGNORECASE)
_YEAR = re.compile(r"\b((?:19|20)\d\d)[a-z]?\b")
_SURNAME = re.compile(r"^[\s*_\"“]*([A-Z][\w'’-]+)")


def read_references(text: str, gathered: Gathered) -> tuple[OwnReferences, str]:
    """The model's own references read against the gathered sources, and the text without
    them (footnote and reference definitions, reference sections, a trailing list)."""
    own = OwnReferences()
    for key, rest in _FN_DEF.findall(text):
        _record(own, "^" + key, rest, gathered)
    for key, rest in _REF_DEF.findall(text):
        _record(own, key, rest, gathered)
    body = _REF_DEF.sub("", _FN_DEF.sub("", text))
    if body != text:
        body = body.rstrip() + "\n"
    lines = body.splitlines(keepends=True)
    dropped = _sections(lines) | _trailing(lines)
    entries: list[str] = []
    for i in sorted(dropped):
        line = lines[i].strip()
        if not line or _HEADING.match(lines[i].rstrip("\n")) or _CLOSING_TAG.match(line):
            continue
        if entries and not _NUMBERED.match(line) and (
                _URL_LINE.match(line) or lines[i][:1] in " \t") and i - 1 in dropped:
            entries[-1] += " " + line  # the entry's second line (its URL, indented text)
        else:
            entries.append(line)
    for entry in entries:
        numbered = _NUMBERED.match(entry)
        rest = numbered.group(3) if numbered else entry.lstrip("-*+• \t")
        number = _record(own, (numbered.group(1) or numbered.group(2)) if numbered else None,
                         rest, gathered)
        author = _entry_author(rest)
        if author and (number is not None or author not in own.authors):
            own.authors[author] = number
    kept = [line for i, line in enumerate(lines) if i not in dropped]
    return own, ("".join(kept).rstrip() + "\n") if dropped else body


def _sections(lines: list[str]) -> set[int]:
    """Lines of reference sections: from a heading to the next heading of the same or a higher
    level; from a label or a tag to the next heading (or the closing tag)."""
    dropped: set[int] = set()
    in_fence = False
    level: int | None = None  # inside a section: the level that ends it (7: any heading)
    for i, raw in enumerate(lines):
        line = raw.rstrip("\n")
        if _FENCE.match(line):
            in_fence = not in_fence
        heading = None if in_fence else _ANY_HEADING.match(line)
        if level is not None:
            if heading is not None and len(heading.group(1)) <= level and not _HEADING.match(line):
                level = None
            elif level == 7 and _prose_after_list(lines, i):
                level = None  # a label's list ended and the text goes on
            elif not in_fence and re.match(r"^[ \t]*</(?:references|sources|citations|bibliography)>",
                                           line, re.IGNORECASE):
                dropped.add(i)
                level = None
                continue
            else:
                dropped.add(i)
                continue
        if not in_fence:
            found = _HEADING.match(line)
            if found:
                level = len(found.group("hashes")) if found.group("hashes") else 7
                dropped.add(i)
    return dropped


_ENTRY_START = re.compile(r"^(?:[ \t]+\S|[ \t]*(?:\\?\[|\d{1,4}\\?[.)][ \t]|[-*+•][ \t]|<|https?://|</))")


def _prose_after_list(lines: list[str], i: int) -> bool:
    """Line i starts a paragraph that is not a list entry, after a blank line that follows one."""
    line = lines[i].rstrip("\n")
    if not line.strip() or _ENTRY_START.match(line) or i < 2 or lines[i - 1].strip():
        return False
    above = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
    return bool(_ENTRY_START.match(above.rstrip("\n")))


def _trailing(lines: list[str]) -> set[int]:
    """A block of reference entries at the very end of the text with no heading: `[n] ...`
    lines, `n. ... url` lines, `- [Title](url)` and bare URL lines; two or more of them, or
    one `[n] url` line."""
    block: list[int] = []
    entries: list[str] = []
    # `1. Title, url` lines are a list of references only when the text cites by number (or
    # they are bare links): a closing list of advice that gives its sources' URLs is prose.
    markers = any(re.search(r"\[\^?\d{1,4}\]|\\\[\d{1,4}\\\]|<sup>", line) for line in lines)
    footer = 0  # a short closing line below the list ("---", "Answer from ...") stays
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i].strip()
        if not line or _CLOSING_TAG.match(line):
            block.append(i)
            continue
        numbered = _NUMBERED.match(line)
        if not ((numbered and (numbered.group(1) or (re.search(URL, line) and (
                    markers or _bracketed_url(line) or _LINK_ENTRY.match("- " + numbered.group(3))))))
                or _LINK_ENTRY.match(line) or _URL_LINE.match(line) or _BRACKETED_LINK.match(line)):
            if not entries and footer < 2 and len(line) <= 80 and not line.startswith("#"):
                footer += 1
                if re.fullmatch(r"(?:[-*_][ \t]*){3,}", line):
                    block.append(i)  # a rule closing the list goes with it
                else:
                    block.clear()
                continue
            break
        block.append(i)
        entries.append(line)
    single = len(entries) == 1 and _bracketed_url(entries[0])
    return set(block) if len(entries) >= 2 or single else set()


def _bracketed_url(line: str) -> bool:
    """`[3] https://...`, or a numbered line that is only a URL: `1. [https://a.b/c](https://a.b/c)`."""
    numbered = _NUMBERED.match(line)
    if not numbered or not re.search(URL, line):
        return False
    words = re.sub(r"\[(?:https?://|www\.)[^\]]*\]\([^)]*\)|<?" + URL + r">?", "", numbered.group(3))
    return bool(numbered.group(1)) or not words.strip(" -–—:,.")


# --- reading an entry -----------------------------------------------------------------------

def _record(own: OwnReferences, key: str | None, entry: str, gathered: Gathered) -> int | None:
    """An entry naming a gathered URL, a gathered title or ("reference N from collected
    information") our N maps to that number; one naming only other URLs maps to nothing; one
    naming neither is left out (the model's number is taken as ours)."""
    urls = [(m.group(1) or m.group(2) or m.group(3) or "").rstrip(TRAILING) for m in _LINK_IN.finditer(entry)]
    found: int | None = None
    for url in urls:
        found = gathered.url(url)
        if found is not None:
            break
    if found is None:
        collected = _COLLECTED.search(entry)
        if collected and int(collected.group(1)) in gathered.numbers:
            found = int(collected.group(1))
    if found is None:
        found = gathered.title_in(_entry_title(entry))
    if key is not None and key not in own.numbers and (found is not None or urls):
        own.numbers[key] = found
    return found


def _entry_title(entry: str) -> str:
    """The words of an entry: link texts kept, URLs, 'accessed <date>' and site names dropped."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", entry)
    text = re.sub(r"<?" + URL + r">?", " ", text)
    return re.split(r",\s*accessed\b", text)[0].strip(" *_\"'“”.-–—|")


def _entry_author(entry: str) -> tuple[str, str] | None:
    """(surname, year) of an entry that starts with its author: 'Smith, J. (2020). Title.'"""
    name, year = _SURNAME.match(entry), _YEAR.search(entry[:160])
    if not name or not year or name.group(1).lower() in ("the", "a", "an", "in", "on"):
        return None
    return name.group(1).lower(), year.group(1)


def _author_key(author: str, published: str) -> tuple[str, str] | None:
    """A gathered source's (surname, year): 'Jane Smith' / 'Smith, Jane' / 'J. Smith et al.'"""
    first = re.split(r";|\band\b|&|\bet al\b", author)[0].strip()
    surname = first.split(",")[0].strip() if "," in first else (first.split() or [""])[-1]
    year = _YEAR.match(published.strip())
    if not surname or not year or not surname[:1].isupper():
        return None
    return surname.strip(".").lower(), year.group(1)


def title_key(text: str) -> str:
    return " ".join(re.sub(r"[^\w]+", " ", text.lower()).split())
