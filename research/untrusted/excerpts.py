"""Passages of a page: what a prompt sends when the whole page is not needed (issue 31).

Under a provider's tokens-a-minute limit, every token sent is time. A relevance score, a list of
gaps or one claim's check needs the passages about the subject, not the page: `excerpt` picks
the sentences that share the most words (and figures) with what the call is about, in page
order, within a length. Only the findings call reads a kept page's text itself.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

from research.report.checks import CITATION

_STOP = frozenset(
    "the a an and or of to in on for by with from at as is are was were be been this that these "
    "those it its their there than then into over under about between more most less least "
    "also which who what when where how not no has have had can could may might will would "
    "report reports source sources according does did say says said changed why".split()
)
_WORD = re.compile(r"[a-z0-9][a-z0-9'-]*")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")


def words(text: str) -> set[str]:
    """The words that say what a text is about (no stop words, no short ones)."""
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _STOP}


def _figures(text: str) -> set[str]:
    return set(_NUMBER.findall(text))


def without_title(text: str, title: str | None) -> str:
    """The page's text without its first line when that line only repeats the title (the title
    is sent beside it already); the text as it is when nothing else is left."""
    head, _, rest = text.lstrip().partition("\n")
    if title and rest.strip() and " ".join(head.split()) == " ".join(title.split()):
        return rest
    return text


def excerpt(source_text: str, about: str, limit: int, head: int = 0) -> str:
    """The sentences of a text that share the most words with `about` (a figure they share
    counts twice: a claim's numbers are what a check must find), in page order, up to `limit`
    characters; the start of the text when nothing overlaps; the whole (blank lines and runs of
    spaces dropped) when it fits. `head`: the text's first characters are kept whatever they
    say (what a page is mainly about is often said first)."""
    text = _tidy(source_text)
    if len(text) <= limit:
        return text  # whole, its lines kept (lists and tables read better so)
    opening, sentences = _split(text, head)
    budget = limit - len(opening) - (1 if opening else 0)
    plain = CITATION.sub("", about)
    wanted, figures = words(plain), _figures(plain)
    scored = sorted(
        ((len(wanted & s.words) + 2 * len(figures & s.figures), -i, i)
         for i, s in enumerate(sentences)), reverse=True)
    if budget <= 0 or not scored or scored[0][0] == 0:
        return " ".join(text[:limit].rsplit(None, 1)[0].split())
    chosen: list[int] = []
    used = 0
    for score, _, i in scored:
        if score == 0:
            break
        piece = sentences[i].text[:budget - used] if not chosen else sentences[i].text
        if used + len(piece) + 1 > budget:
            continue
        chosen.append(i)
        used += len(piece) + 1
    chosen.sort()
    picked = " ".join(sentences[i].text[:budget] for i in chosen)
    return f"{opening} {picked}" if opening else picked


# A page is excerpted once per claim that cites it and per subtopic that reads it, always
# split the same way: its sentences and their words are kept for the pages used last.
_CACHED_PAGES = 64


class _Sentence(NamedTuple):
    text: str
    words: frozenset[str]
    figures: frozenset[str]


@functools.lru_cache(maxsize=_CACHED_PAGES)
def _tidy(source_text: str) -> str:
    """The text without blank lines and runs of spaces."""
    lines = [" ".join(line.split()) for line in source_text.splitlines()]
    return "\n".join(line for line in lines if line)


@functools.lru_cache(maxsize=_CACHED_PAGES)
def _split(text: str, head: int) -> tuple[str, tuple[_Sentence, ...]]:
    """The opening kept whatever it says (`head` characters, at a word's end), and the
    sentences of the rest with the words and figures of each."""
    opening = " ".join(text[:head].rsplit(None, 1)[0].split()) if head else ""
    rest = text[len(text[:head].rsplit(None, 1)[0]):] if head else text
    sentences = (" ".join(s.split()) for s in _SENTENCES.split(rest) if s.strip())
    return opening, tuple(_Sentence(s, frozenset(words(s)), frozenset(_figures(s))) for s in sentences)
