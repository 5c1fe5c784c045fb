"""Verify, part 1: finding the claims of a draft and the source excerpts each is judged against.

Every factual statement is a claim: a sentence, list item or table row that cites a source, or
that states a fact or a figure without citing one (SPEC: "Every factual statement ... is a claim,
whether or not the writer cited it"). Headings, the open-questions and sources sections, quotes,
code and the engine's own notes and marks are not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from research.report.checks import (
    CITATION,
    cited_numbers,
    claim_sentences,
    data_rows,
    factual_row,
    has_figure,
)
from research.untrusted.excerpts import excerpt as passages

PASSAGE_CHARS = 500           # excerpt of each cited source shown with a claim: its passages
                              # nearest the claim (the deciding one is one or two sentences)
MAX_SOURCES_PER_CLAIM = 3     # a claim citing more is judged against its most relevant three

# --- claims ---------------------------------------------------------------------------------


@dataclass
class Claim:
    id: str
    text: str                 # the sentence exactly as in the draft
    line: int                 # index of its line in the draft
    section: str              # the ## heading it sits under
    kind: str                 # executive | findings | analysis | recommendations | other
    subtopic: str | None      # the ### heading, under "Analysis by subtopic"
    numbers: list[int]        # one citation number per cited gathered source...
    source_ids: list[str]     # ...and the source ids, in the same order
    invalid: list[int]        # citation numbers that do not
    excerpts: dict[str, str] = field(default_factory=dict)  # source id -> excerpt shown
    table_row: bool = False   # the claim is a whole table row (the line itself)


@dataclass
class PassVerdict:
    verdict: str              # one of Verdict, or "" when this pass gave none
    quote: str = ""
    source: str = ""
    reason: str = ""
    note: str = ""            # what the deterministic guard changed


@dataclass
class Outcome:
    claim: Claim
    first: PassVerdict
    second: PassVerdict
    combined: str             # supported | overstated | unsupported | contested | unchecked
    critic: str = ""          # SURVIVES | DOWNGRADE | REJECT, or "" when not challenged
    critic_reason: str = ""
    status: str = ""          # supported | qualified | removed | unchecked | uncited
    final_text: str = ""
    rewritten: bool = False
    single_source: bool = False
    note: str = ""


_SECTION_KINDS = (
    ("executive", re.compile(r"executive summary|summary", re.IGNORECASE)),
    ("findings", re.compile(r"key findings|findings", re.IGNORECASE)),
    ("analysis", re.compile(r"analysis by subtopic|analysis", re.IGNORECASE)),
    ("recommendations", re.compile(r"recommendation", re.IGNORECASE)),
    ("skip", re.compile(r"open questions|gaps|^\s*(?:sources|references|bibliography|works cited)\b",
                        re.IGNORECASE)),
)
# The writer's required order (write.STRUCTURE), used when headings are not in English.
_POSITIONAL = {0: "executive", 1: "findings", 2: "analysis", 5: "recommendations", 6: "skip"}
CRITICAL_KINDS = ("executive", "findings", "recommendations")
LOAD_BEARING_KINDS = ("executive", "findings")
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def kind_of(title: str) -> str | None:
    for kind, pattern in _SECTION_KINDS:
        if pattern.search(title):
            return kind
    return None


def section_kinds(lines: Sequence[str]) -> dict[int, str]:
    """Kind of every `##` heading, by name; by position when no name is recognised."""
    headings = [(i, HEADING.match(line)) for i, line in enumerate(lines)]
    level2 = [(i, m.group(2).strip()) for i, m in headings if m and len(m.group(1)) == 2]
    named = {i: kind_of(title) for i, title in level2}
    if any(named.values()):
        return {i: kind or "other" for i, kind in named.items()}
    return {i: _POSITIONAL.get(pos, "other") for pos, (i, _) in enumerate(level2)}


def split_claims(text: str, numbering: Mapping[int, str], known: Iterable[str]) -> list[Claim]:
    """Every factual statement outside headings, quotes, code and the open-questions and sources
    sections, with its section, subtopic and cited source ids: sentences and list items that cite
    or state facts, table rows that cite or give figures (`is_factual`)."""
    known_ids = set(known)
    lines = text.splitlines()
    kinds = section_kinds(lines)
    rows = data_rows(lines)
    claims: list[Claim] = []
    section, kind, subtopic = "Introduction", "other", None
    in_fence = False
    for i, line in enumerate(lines):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        heading = HEADING.match(line)
        if heading:
            level, title = len(heading.group(1)), heading.group(2).strip()
            if level == 2:
                section, kind, subtopic = title, kinds.get(i, "other"), None
            elif level >= 3 and kind == "analysis":
                subtopic = re.sub(r"^subtopic:\s*", "", title, flags=re.IGNORECASE)
            continue
        if kind == "skip":
            continue
        if i in rows:
            statements = [line.strip()] if factual_row(line) else []
        else:
            statements = [s for s in claim_sentences(line) if s in line and is_factual(s, kind)]
        for sentence in statements:
            numbers = list(dict.fromkeys(cited_numbers(sentence)))
            first_number: dict[str, int] = {}  # source id -> its first number in the sentence
            for n in numbers:
                if numbering.get(n) in known_ids:
                    first_number.setdefault(numbering[n], n)
            claims.append(Claim(
                id=f"c{len(claims) + 1}", text=sentence, line=i, section=section, kind=kind,
                subtopic=subtopic, numbers=list(first_number.values()),
                source_ids=list(first_number), invalid=[n for n in numbers
                                                        if numbering.get(n) not in known_ids],
                table_row=i in rows,
            ))
    return claims


_OWN_TEXT = re.compile(r"insufficient (?:verified )?data|^\*?this subtopic could not|"
                       r"^\*?verification could not be completed|"
                       r"^removed after verification|^- removed after verification", re.IGNORECASE)
FACT_KINDS = ("executive", "findings", "analysis")


def is_factual(sentence: str, kind: str) -> bool:
    """A statement that must rest on a source: anything cited; uncited, anything giving a figure,
    and every statement of the summary, findings and analysis. Admitted gaps ("insufficient
    data") and the engine's own notes are not claims."""
    if _OWN_TEXT.search(sentence.strip()):
        return False
    if CITATION.search(sentence):
        return True
    if sentence.rstrip(" *_").endswith("?"):
        return False  # a question (the research question restated, an open question)
    return has_figure(sentence) or kind in FACT_KINDS


# --- excerpts and the quote guard ---------------------------------------------------------------

def excerpt(source_text: str, claim: str, limit: int = PASSAGE_CHARS) -> str:
    """The sentences of a source that share the most words and figures with the claim, in page
    order, up to `limit` characters (the start of the page when nothing overlaps)."""
    return passages(source_text, claim, limit)

