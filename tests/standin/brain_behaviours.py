"""Switchable model behaviours: the stand-in answers the way common real models do.

`StandinServer.set_behaviour(name)` (cleared by `reset()`) makes every LLM answer follow one:

  house              the engine's own contract: [n] citations, exact counts (the default)
  cite_markdown      the writer cites with markdown links to the gathered pages: ([domain](url))
  cite_footnotes     footnotes [^n] with "[^n]: title, url" definitions at the end
  cite_source_label  "(Source n)" labels
  cite_bare_url      bare URLs in parentheses: (https://...)
  cite_fullwidth     full-width brackets: 【n†source】
  cite_title         no numbers; each claim names its source by title: (according to Title)
  cite_own_list      its own numbering (reversed) plus a "## References" list of URLs
  sparse_citations   the writer leaves every fourth citation out and adds a table row of figures
                     with no source
  think              every answer starts with a <think>...</think> block
  fenced_json        structured answers come in ```json fences
  extra_keys         structured answers carry keys nobody asked for
  fewer_items        every list in a structured answer is one item short
  more_items         every list gets one item more (about ids that do not exist where ids matter)
  truncated          the writer's answer is cut in half, finish_reason "length"
  refusal            the writer refuses (message.refusal, no content)
  loose_quotes       the verifier quotes loosely: curly quotes, an ellipsis, odd whitespace
  sloppy_verdicts    both fact-checkers write verdicts in their own words ("supported",
                     "Partially supported") and answer about ids that do not exist for every
                     third claim (those claims get no verdict)

Everything is built from the prompt only, like the rest of the brain.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

BEHAVIOURS = (
    "house", "cite_markdown", "cite_footnotes", "cite_source_label", "cite_bare_url",
    "cite_fullwidth", "cite_title", "cite_own_list", "sparse_citations", "think", "fenced_json", "extra_keys",
    "fewer_items", "more_items", "truncated", "refusal", "loose_quotes", "sloppy_verdicts",
)
CITATION_STYLES = tuple(b for b in BEHAVIOURS if b.startswith("cite_"))
_GROUP = re.compile(r"[ \t]*((?:\[\d+\])+)")
_LISTED = re.compile(r"^\[(\d+)\] (.+?) — (\S+)$", re.MULTILINE)
_PUBLISHED = re.compile(r"\s*\(published [^)]*\)\s*$")


def listed_sources(user: str) -> dict[int, tuple[str, str]]:
    """n -> (title, url) from the writer's SOURCES block."""
    return {int(n): (_PUBLISHED.sub("", t).strip(), u) for n, t, u in _LISTED.findall(user)}


def restyle(report: str, user: str, style: str) -> str:
    """The stand-in writer's [n] report, re-cited in another model's style."""
    listed = listed_sources(user)
    if style == "sparse_citations":
        return sparse(report)
    if style not in CITATION_STYLES or not listed:
        return report
    order = sorted(listed, reverse=True)
    own = {n: i for i, n in enumerate(order, start=1)}  # cite_own_list: the model's numbering
    used: list[int] = []

    def group(match: re.Match[str]) -> str:
        numbers = [int(n) for n in re.findall(r"\d+", match.group(1)) if int(n) in listed]
        used.extend(n for n in numbers if n not in used)
        if not numbers:
            return match.group(0)
        return _styled(style, numbers, listed, own)

    body = _GROUP.sub(group, report)
    if style == "cite_footnotes":
        body += "\n\n" + "\n".join(f"[^{n}]: {listed[n][0]}, {listed[n][1]}" for n in used)
    elif style == "cite_own_list":
        body += "\n\n## References\n\n" + "\n".join(
            f"[{own[n]}] {listed[n][0]} — {listed[n][1]}" for n in sorted(used, key=own.get))
    return body + "\n"


def sparse(report: str) -> str:
    """Every fourth citation left out; an uncited row of figures in the first table."""
    count = 0

    def drop(match: re.Match[str]) -> str:
        nonlocal count
        count += 1
        return "" if count % 4 == 0 else match.group(0)

    lines = _GROUP.sub(drop, report).splitlines()
    for i, line in enumerate(lines):
        if line.startswith("| ---"):
            lines.insert(i + 1, "| Overall | Sales grew 42% in 2025 | |")
            break
    return "\n".join(lines) + "\n"


def _styled(style: str, numbers: list[int], listed: dict[int, tuple[str, str]],
            own: dict[int, int]) -> str:
    if style == "cite_markdown":
        return " (" + "; ".join(f"[{urlsplit(listed[n][1]).hostname}]({listed[n][1]})"
                                for n in numbers) + ")"
    if style == "cite_footnotes":
        return "".join(f"[^{n}]" for n in numbers)
    if style == "cite_source_label":
        label = "Sources" if len(numbers) > 1 else "Source"
        return f" ({label} {', '.join(map(str, numbers))})"
    if style == "cite_bare_url":
        return "".join(f" ({listed[n][1]})" for n in numbers)
    if style == "cite_fullwidth":
        return "".join(f"【{n}†source】" for n in numbers)
    if style == "cite_title":
        return " (according to " + "; ".join(listed[n][0] for n in numbers) + ")"
    return " " + "".join(f"[{own[n]}]" for n in numbers)  # cite_own_list


def adjust(payload: dict[str, Any], title: str, behaviour: str) -> dict[str, Any]:
    """A structured answer changed the way real models change them."""
    if behaviour == "extra_keys":
        return _with_extra_keys(payload)
    if behaviour in ("fewer_items", "more_items"):
        return {k: _resized(v, behaviour) if isinstance(v, list) else v for k, v in payload.items()}
    if behaviour == "loose_quotes" and title in ("ClaimVerdicts", "AuditVerdicts"):
        for verdict in payload.get("verdicts", []):
            verdict["quote"] = loosen(str(verdict.get("quote") or ""))
    if behaviour == "sloppy_verdicts" and title in ("ClaimVerdicts", "AuditVerdicts"):
        for verdict in payload.get("verdicts", []):
            number = int(re.sub(r"\D", "", str(verdict["claim_id"])) or 0)
            if number % 3 == 0:
                verdict["claim_id"] = f"claim-{number}-of-another-report"
            verdict["verdict"] = {"SUPPORTED": "supported", "OVERSTATED": "Partially supported",
                                  "UNSUPPORTED": "not_supported"}.get(verdict["verdict"], verdict["verdict"])
    return payload


def _with_extra_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {**{k: _with_extra_keys(v) for k, v in value.items()}, "confidence_note": "extra"}
    if isinstance(value, list):
        return [_with_extra_keys(v) for v in value]
    return value


def _resized(items: list[Any], behaviour: str) -> list[Any]:
    if behaviour == "fewer_items":
        return items[:-1] if len(items) > 1 else items
    if not items:
        return items
    extra = items[-1]
    if isinstance(extra, dict):
        extra = {k: _other(k, v) for k, v in extra.items()}
    elif isinstance(extra, str):
        extra = f"{extra} (another angle)"
    return [*items, extra]


def _other(key: str, value: Any) -> Any:
    """One more item: ids point at nothing that exists, titles are new."""
    if key.endswith("_id") or key == "id":
        return f"{value}-unknown"
    if key == "title" and isinstance(value, str):
        return f"{value} (more)"
    return value


def loosen(quote: str) -> str:
    """A passage quoted the way models do: typographic quotes, an ellipsis, spaces and breaks."""
    words = quote.replace("'", "\u2019").replace('"', "\u201c").split()
    if len(words) > 14:
        words = [*words[:6], "…", *words[-6:]]
    return "\u201c" + "  ".join(words[:3]) + "\n " + " ".join(words[3:]) + "\u201d"


def is_writer_call(schema: dict | None, user: str) -> bool:
    """The report itself (not the shortening pass, not a structured task)."""
    return schema is None and "The report below has" not in user and "SOURCES" in user

