"""The stand-in judge of the quality benchmark (bench/quality_*.py): RACE's criterion scores,
FACT's citation extraction, de-duplication and support labels, and the supported-claims check.

Each answer follows a plain rule on the words in the prompt, so a test can work out the score
by hand ("words" are lower-case runs of letters and digits, four or more long):
- RACE: an article scores 10 x the share of a criterion's words that occur in it (5 when the
  criterion has none).
- Extraction: each sentence of the report's body that carries [n] marks or an inline link gives
  one (sentence, URL) pair per source, the URL read from the report's list of sources.
- De-duplication: the first of statements equal once lower-cased and spaced alike.
- Support: "unknown" when the page is empty or says "page not found"; "supported" when at least
  half of the statement's words occur in the page; otherwise "unsupported".
- Claims: supported when every word of the claim occurs in its passages.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.standin import brain

_WORD = re.compile(r"[a-z0-9]{4,}")
_CRITERIA = re.compile(r"<criteria>\s*(.*?)\s*</criteria>", re.S)
_BLOCK = re.compile(r'<untrusted_source id="([^"]*)"[^\n]*>\n(.*?)\n</untrusted_source', re.S)
_NUMBERED = re.compile(r"^(\d+)\. (.*)$", re.M)
_SOURCES = re.compile(r"^#{1,6}\s*(sources|references)\b", re.I | re.M)
_LISTED = re.compile(r"^\s*(?:\[(\d+)\]|(\d+)\.)\s.*?(https?://[^\s)>\]]+)", re.M)
_MARKS = re.compile(r"\[\[?(\d+(?:\s*,\s*\d+)*)\]\]?(?:\(#[^)\s]*\))?")
_INLINE = re.compile(r"\[([^\]]+)\]\((https?://[^)\s]+)\)")
_SPACE_BEFORE = re.compile(r"\s+([.,;:!?])")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_CLAIM = re.compile(r"^Claim (\d+): (.*)$", re.M)


def words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def blocks(user: str) -> dict[str, str]:
    return {name: text for name, text in _BLOCK.findall(user)}


def criterion_score(criterion: str, article: str) -> float:
    wanted = words(criterion)
    if not wanted:
        return 5.0
    return round(10 * len(wanted & words(article)) / len(wanted), 2)


def race(user: str) -> dict[str, Any]:
    criteria = json.loads(_CRITERIA.search(user)[1])  # type: ignore[index]
    texts = blocks(user)
    one, two = texts.get("article_1", ""), texts.get("article_2", "")
    return {dim: [{"criterion": c["criterion"], "analysis": "compared by shared words",
                   "article_1_score": criterion_score(c["criterion"] + " " + c["explanation"], one),
                   "article_2_score": criterion_score(c["criterion"] + " " + c["explanation"], two)}
                  for c in items] for dim, items in criteria.items()}


def extract(user: str) -> dict[str, Any]:
    report = blocks(user).get("report", "")
    heading = _SOURCES.search(report)
    body, listing = (report[: heading.start()], report[heading.start():]) if heading else (report, "")
    urls = {int(a or b): url for a, b, url in _LISTED.findall(listing)}
    pairs = []
    for sentence in (s.strip() for s in _SENTENCE.split(body)):
        if sentence.startswith(("#", "|")) or not sentence:
            continue
        cited = [urls[int(n)] for group in _MARKS.findall(sentence)
                 for n in group.split(",") if int(n) in urls]
        cited += [url for _, url in _INLINE.findall(sentence)]
        fact = _SPACE_BEFORE.sub(r"\1", " ".join(_MARKS.sub("", _INLINE.sub(r"\1", sentence)).split()))
        pairs += [{"fact": fact, "url": url} for url in dict.fromkeys(cited)]
    return {"citations": pairs}


def dedupe(user: str) -> dict[str, Any]:
    text = blocks(user).get("statements", "")
    seen: set[str] = set()
    keep = []
    for number, statement in _NUMBERED.findall(text):
        key = " ".join(statement.lower().split())
        if key not in seen:
            seen.add(key)
            keep.append(int(number))
    return {"keep": keep}


def support(user: str) -> dict[str, Any]:
    texts = blocks(user)
    statements = _NUMBERED.findall(texts.pop("statements", ""))
    page = " ".join(texts.values())
    verdicts = []
    for number, statement in statements:
        if not page.strip() or "page not found" in page.lower():
            result = "unknown"
        else:
            wanted = words(statement)
            found = len(wanted & words(page))
            result = "supported" if wanted and 2 * found >= len(wanted) else "unsupported"
        verdicts.append({"idx": int(number), "result": result})
    return {"verdicts": verdicts}


def claims(user: str) -> dict[str, Any]:
    marks = list(_CLAIM.finditer(user))
    verdicts = []
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(user)
        passages = " ".join(text for _, text in _BLOCK.findall(user[mark.end():end]))
        wanted = words(mark[2])
        verdicts.append({"idx": int(mark[1]),
                         "supported": bool(wanted) and wanted <= words(passages)})
    return {"verdicts": verdicts}


brain.register("RaceJudgement", race)
brain.register("CitationList", extract)
brain.register("UniqueStatements", dedupe)
brain.register("SupportVerdicts", support)
brain.register("JudgedClaims", claims)
