"""The shape of the report a person asked for ("I want ...": a one-page brief, a comparison
table, a memo, a literature review), read from their words, and what each shape means for the
writer: its sections, their order and its length.

A shape is a plain reading of the desired output, not a model's guess: the words a person
types for these forms are few and well known, and a rule gives the same answer every time
(the estimate, the outline, the review's check and the exports agree). Words that name no
shape leave the full report, which then only hears the wish as part of the question.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Part:
    """One section of a shape: which of the writer's parts writes it, with what headings."""
    key: str                 # write_sections' part key (key_findings, comparison, closing, gaps)
    task: str                # what the part covers, for its writer
    headings: tuple[str, ...]
    weight: float            # its share of the report's length


@dataclass(frozen=True)
class Shape:
    key: str
    name: str                # in the person's words ("a one-page brief")
    max_words: int | None    # the shape's own length cap (None: the run's REPORT_MAX_WORDS)
    frame: tuple[str, ...]   # the title pass's headings (a second "## " one leads into the subtopics)
    frame_task: str
    parts: tuple[Part, ...]  # the sections across subtopics, in the report's order
    subtopics: bool          # one section per subtopic, placed after the first part
    table: bool = False      # the report must hold a Markdown table (checked by the review)

    def words(self, report_max_words: int) -> int:
        """The report's length cap: the shape's, never above the run's own setting."""
        return min(report_max_words, self.max_words) if self.max_words else report_max_words


REPORT = Shape(
    "report", "a full report", None,
    ("# <a clear title>", "## Executive summary", "## Analysis by subtopic"),
    "the title, the executive summary (from the key findings below) and the lead-in to the "
    "analysis",
    (Part("key_findings", "the key findings, by theme across the subtopics",
          ("## Key findings",), 1.5),
     Part("comparison", "the comparison (a Markdown table where it helps)", ("## Comparison",), 1.0),
     Part("closing", "where sources disagree, and the recommendations",
          ("## Where sources disagree", "## Recommendations"), 1.0),
     Part("gaps", "the open questions and gaps, and the confidence assessment",
          ("## Open questions and gaps", "## Confidence assessment"), 1.0)),
    subtopics=True,
)

BRIEF = Shape(
    "brief", "a one-page brief", 450,
    ("# <a clear title>", "## In short"),
    "the title and the answer in two or three sentences (from the key points below)",
    (Part("key_findings", "the key points: four to six short bullet points, each cited",
          ("## Key points",), 2.0),
     Part("closing", "what to do about it: two or three short bullet points",
          ("## What to do",), 1.0)),
    subtopics=False,
)

MEMO = Shape(
    "memo", "a memo", 900,
    ("# <a subject line>", "## Bottom line"),
    "the subject line as title and the bottom line in two or three sentences (from the "
    "findings below)",
    (Part("key_findings", "the findings that matter for a decision, by theme",
          ("## Findings",), 2.0),
     Part("closing", "the recommendation and why", ("## Recommendation",), 1.0),
     Part("gaps", "the risks and open questions, briefly", ("## Risks and open questions",), 0.6)),
    subtopics=False,
)

COMPARISON = Shape(
    "comparison", "a comparison table", 1200,
    ("# <a clear title>", "## Executive summary"),
    "the title and the executive summary (from the key findings below)",
    (Part("comparison", "a Markdown table that sets the options side by side on the criteria "
          "the question implies (one row per option, a cited figure or fact in each cell "
          "where the sources give one, \"no data\" where they do not), then two or three "
          "sentences on what the table shows", ("## Comparison",), 2.0),
     Part("key_findings", "the key findings behind the table", ("## Key findings",), 1.0),
     Part("closing", "which option suits whom, and why", ("## Recommendations",), 0.7)),
    subtopics=False, table=True,
)

LITERATURE_REVIEW = Shape(
    "literature_review", "a literature review", None,
    ("# <a clear title>", "## Introduction", "## Themes in the literature"),
    "the title, the introduction (scope and what the literature covers, from the synthesis "
    "below) and the lead-in to the themes",
    (Part("key_findings", "the synthesis: what the body of work shows as a whole",
          ("## Synthesis",), 1.5),
     Part("closing", "where studies disagree, and why", ("## Where studies disagree",), 1.0),
     Part("gaps", "the gaps in the literature and the research they call for",
          ("## Gaps and future research",), 1.0)),
    subtopics=True,
)

SHAPES = {s.key: s for s in (REPORT, BRIEF, MEMO, COMPARISON, LITERATURE_REVIEW)}

# The words that name each shape, most specific first.
_RULES: tuple[tuple[re.Pattern[str], Shape], ...] = (
    (re.compile(r"\bliterature review\b|\breview of the (?:literature|research)\b|"
                r"\blit(?:erature)?\.? review\b"), LITERATURE_REVIEW),
    (re.compile(r"\bcomparison table\b|\btable (?:comparing|that compares)\b|"
                r"\bcompar\w* (?:\w+ ){0,4}(?:in|as) a table\b|\bside[- ]by[- ]side table\b"),
     COMPARISON),
    (re.compile(r"\bmemo(?:randum)?\b"), MEMO),
    (re.compile(r"\bone[- ]pag(?:e|er)\b|\bbrief(?:ing)?\b|\btl;?dr\b|\bshort summary\b|"
                r"\bexecutive summary only\b"), BRIEF),
)


def shape_of(want: str) -> Shape:
    """The shape the desired output names; the full report when it names none."""
    text = " ".join(want.lower().split())
    for pattern, shape in _RULES:
        if pattern.search(text):
            return shape
    return REPORT
