"""What the stand-in answers, apart from HTTP: the model's answer under the content faults and
behaviours, Tavily's and the papers' result rows, and the search results' page metadata.

The HTTP handler (server.py) and the in-process fakes (tests/fakes.py) both call these, so a
run answers alike whichever way it goes.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tests.standin import brain, brain_behaviours, hidden, pages

if TYPE_CHECKING:
    from tests.standin.server import StandinServer

_CONTENT_FAULTS = ("invalid_json", "fenced_json", "think", "cite_invented", "refusal", "blocked",
                   "context_limit", "tracking", "hidden", "finish")

TRACKING_URL = "http://tracker.example/pixel.gif"
TRACKING_TEXT = (
    f"\n\n![pixel]({TRACKING_URL}?id=1) <img src=\"{TRACKING_URL}?id=2\"> "
    "[read more](http://tracker.example/landing) <http://tracker.example/auto> "
    "http://tracker.example/bare\n\n[ref]: http://tracker.example/ref\n"
)


@dataclass
class Fault:
    api: str
    kind: str
    remaining: int
    params: dict[str, Any] = field(default_factory=dict)


# --- pages: tests/standin/pages.py renders them; search results must agree with it ----

_PAPER_TITLE = re.compile(r"<title>(.*?)</title>", re.DOTALL)
_PAPER_ABSTRACT = re.compile(r'<section class="abstract">.*?<p>(.*?)</p>', re.DOTALL)
_PAPER_DATE = re.compile(r'article:published_time" content="([0-9-]{10})')
_WORD = re.compile(r"[a-z0-9]+")


def article_meta(slug: str) -> dict[str, str]:
    """Title, snippet and ISO date of /pages/article/<slug>."""
    return dict(pages.article_meta(slug))


def paper_meta(paper_id: str) -> dict[str, str]:
    """Title, abstract and ISO date of /pages/paper/<id>, read from the page itself."""
    text = pages.paper_html(paper_id)

    def first(pattern: re.Pattern[str]) -> str:
        match = pattern.search(text)
        return html.unescape(" ".join(match.group(1).split())) if match else ""

    return {"title": first(_PAPER_TITLE), "snippet": first(_PAPER_ABSTRACT),
            "published": first(_PAPER_DATE)}


def slug_for(query: str, k: int, *, words: int = 8, off_topic: bool = False) -> str:
    """A deterministic page slug: the query's first words in kebab case, then `k`.

    pages.py builds an article's topic from its slug, so pages read like the query.
    """
    kebab = "-".join(_WORD.findall(query.lower())[:words]) or "topic"
    return f"{kebab[:80].strip('-')}-{k}" + ("-off" if off_topic else "")



# --- answers -------------------------------------------------------------------------

def llm_answer(standin: StandinServer, fault: Fault | None, system: str, user: str,
               schema: dict | None) -> tuple[str, Fault | None, str]:
    """One model answer under the stand-in's controls: (text, a fault the transport must act
    on (refusal, blocked, finish) or None, finish reason "stop" | "length").

    Shared by the HTTP handler and the in-process fake model (tests/fakes.py), so both
    answer alike.
    """
    options: dict[str, Any] = {}
    special: Fault | None = None
    scripted = standin.script(system, user, schema) if standin.script is not None else None
    if scripted is not None:
        return scripted, None, "stop"
    if fault is not None and fault.kind in _CONTENT_FAULTS:
        if fault.kind == "invalid_json":
            options["invalid_json"] = str(fault.params.get("mode", "text"))
        elif fault.kind in ("refusal", "blocked", "finish"):
            special = fault
        elif fault.kind == "tracking":
            return brain.respond(system, user, schema) + TRACKING_TEXT, None, "stop"
        elif fault.kind == "hidden":
            answer = brain.respond(system, user, schema)
            return (hidden.lace_report(answer) if schema is None
                    else hidden.lace_json(answer)), None, "stop"
        else:
            options[fault.kind] = True
    behaviour = standin.behaviour
    if standin.answer_words:
        options["answer_words"] = standin.answer_words
    text = brain.respond(system, user, schema, behaviour=behaviour, **options)
    finish = "stop"
    if brain_behaviours.is_writer_call(schema, user):
        if behaviour == "refusal" and special is None:
            special = Fault("openai", "refusal", 0)
        elif behaviour == "truncated":
            text, finish = text[: len(text) // 2], "length"
    return text, special, finish


def tavily_results(standin: StandinServer, q: str, count: int, base: str, *,
                   since: str | None = None) -> list[dict[str, Any]]:
    """Tavily's result rows for a query (with off-topic and planted extra results, and the
    pages a test published first); with `since` (Tavily's start_date), only results
    published on or after it."""
    off_topic = standin.off_topic_results
    results = [_world_row(slug, base) for slug in pages.WORLD.slugs()]
    for k in range(1, count + 1):
        slug = slug_for(q, k, off_topic=k > count - off_topic)
        meta = article_meta(slug)
        results.append({
            "url": f"{base}/pages/article/{slug}",
            "title": meta["title"],
            "content": meta["snippet"],
            "score": round(0.95 - 0.05 * k, 3),
            "raw_content": None,
            "published_date": meta["published"] or None,
        })
    results = [r for r in results if pages.published_since(r["published_date"], since)][:count]
    extra = standin._next_extra() if count >= 2 else None
    if extra is not None:
        results = [{
            "url": f"{base}/{extra.lstrip('/')}",
            "title": f"Extra result {extra.rstrip('/').rsplit('/', 1)[-1]}",
            "content": "A search result planted by the test.",
            "score": 0.99, "raw_content": None, "published_date": None,
        }, *results[:-1]]
    return results


def _world_row(slug: str, base: str) -> dict[str, Any]:
    meta = article_meta(slug)
    return {"url": f"{base}/pages/article/{slug}", "title": meta["title"],
            "content": meta["snippet"], "score": 0.97, "raw_content": None,
            "published_date": meta["published"]}


_ARXIV_DATES = re.compile(r"\s+AND\s+submittedDate:\[(\d{8})\d*\s+TO\s+\d+\]", re.IGNORECASE)


def arxiv_terms(search_query: str) -> tuple[str, str | None]:
    """(the terms, the day a `submittedDate:[from TO to]` range starts or None) of an arXiv
    search_query: https://info.arxiv.org/help/api/user-manual.html#query_details"""
    match = _ARXIV_DATES.search(search_query)
    terms = _ARXIV_DATES.sub("", search_query).removeprefix("all:")
    if not match:
        return terms, None
    day = match.group(1)
    return terms, f"{day[:4]}-{day[4:6]}-{day[6:]}"


def s2_since(value: str | None) -> str | None:
    """The first day of Semantic Scholar's `publicationDateOrYear` ("2024-05-01:", "2024:",
    "2020-01-01:2021"), or None."""
    start = (value or "").split(":", 1)[0].strip()
    if not start:
        return None
    return start if len(start) == 10 else f"{start[:4]}-01-01"


def papers(q: str, first: int) -> list[tuple[str, dict[str, str]]]:
    """Two papers per query; arXiv uses numbers 1-2 and Semantic Scholar 3-4."""
    ids = [slug_for(q, k, words=6) for k in (first, first + 1)]
    return [(paper_id, paper_meta(paper_id)) for paper_id in ids]
