"""Every tunable constant of a research run, with its default, bounds and meaning.

This is the single table the configuration, the dashboard sliders, the CLI flags and the
cost estimate read from. Presets set several constants at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Constant:
    name: str
    default: Any
    kind: type
    minimum: float | None = None
    maximum: float | None = None
    description: str = ""

    @property
    def field(self) -> str:
        """Attribute name on ResearchConfig (lower case)."""
        return self.name.lower()


REVIEW_CYCLES_MAX = 5

_TABLE = (
    Constant("SUBTOPIC_COUNT", 6, int, 3, 10, "How many subtopics the question is split into."),
    Constant("SOURCES_PER_SUBTOPIC", 20, int, 5, 50, "Most sources kept for each subtopic."),
    Constant("SEARCHES_PER_SUBTOPIC", 5, int, 1, 10, "Web searches written for each subtopic."),
    Constant("REVIEW_CYCLES", 2, int, 0, REVIEW_CYCLES_MAX, "Review-and-revise cycles for the draft."),
    Constant("MAX_ROUNDS", 2, int, 1, 5, "Research rounds (follow-up questions get another round)."),
    Constant("BREADTH", 3, int, 1, 10, "Breadth x depth schedule: new subtopics the first "
             "deeper level may add; each level after adds half as many."),
    Constant("DEPTH", 2, int, 1, 5, "Breadth x depth schedule: research levels, the first "
             "included (takes the place of MAX_ROUNDS)."),
    Constant("SOURCE_RELEVANCE_THRESHOLD", 0.6, float, 0.0, 1.0,
             "Sources scored below this relevance (0-1) are dropped."),
    Constant("SOURCE_MAX_AGE_DAYS", 0, int, 0, 36500,
             "Sources older than this many days are dropped (0 = no limit)."),
    Constant("REPORT_MAX_WORDS", 3000, int, 300, 20000, "Upper limit on the report's length in words."),
    Constant("REQUIRE_CLARIFICATION", False, bool, None, None,
             "Ask clarifying questions before planning."),
    Constant("INCLUDE_ACADEMIC_SOURCES", True, bool, None, None,
             "Also search arXiv and Semantic Scholar."),
    Constant("SEARCH_OTHER_SIDE", True, bool, None, None,
             "Also search each subtopic for the other side: criticism, failures, contrary results."),
    Constant("MAX_PARALLEL_WORKERS", 4, int, 1, 16,
             "Subtopics researched at the same time (raise it to research every planned subtopic "
             "at once); "
             "a run also sends at most 16 model requests per worker at once. Lower it for a "
             "provider with tight rate limits or a local model server."),
    Constant("STEP_TIMEOUT_MS", 120_000, int, 1_000, 3_600_000, "Time limit for one step, in ms."),
    Constant("TOTAL_TIMEOUT_MS", 1_800_000, int, 10_000, 86_400_000,
             "Time limit for the whole run, in ms."),
)

CONSTANTS: dict[str, Constant] = {c.name: c for c in _TABLE}


def bounds_text(name: str) -> str:
    """'between 3 and 10' for a constant with bounds, for messages."""
    const = CONSTANTS[name]
    return f"between {_fmt(const.minimum)} and {_fmt(const.maximum)}"


def bound_problem(name: str, value: Any) -> str | None:
    """Why `value` is not allowed for constant `name`, or None when it is.

    The one check every source of a setting goes through (environment, secrets, presets, CLI
    flags, widgets, saved defaults). NaN and infinities are refused explicitly: NaN passes
    every `<`/`>` comparison, so a plain bounds check would wave it through.
    """
    const = CONSTANTS[name]
    if const.kind is bool:
        return None if isinstance(value, bool) else f"{name} must be on or off (got {value!r})."
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{name} must be a number {bounds_text(name)} (got {value!r})."
    if not math.isfinite(value):
        return f"{name} must be a number {bounds_text(name)} (got {value})."
    if const.kind is int and not float(value).is_integer():
        return f"{name} must be a whole number {bounds_text(name)} (got {value})."
    low, high = const.minimum, const.maximum
    if (low is not None and value < low) or (high is not None and value > high):
        return f"{name} must be {bounds_text(name)} (got {value})."
    return None


def _fmt(x: float | None) -> str:
    return "any" if x is None else (str(int(x)) if float(x).is_integer() else str(x))


def _check_presets() -> None:
    """Presets are settings too: a preset outside the bounds is a bug caught at import."""
    for preset, values in PRESETS.items():
        for name, value in values.items():
            problem = bound_problem(name, value)
            if problem:
                raise ValueError(f"Preset {preset}: {problem}")
# SPEC's table by name. Untyped on purpose: each constant has its own type (int, float, bool or
# str), and ResearchConfig's typed fields take these as their defaults, where pydantic checks them.
DEFAULTS: dict[str, Any] = {c.name: c.default for c in _TABLE}

# Settings by name, like `research.core.config.Settings`: validated by ResearchConfig when applied,
# their bounds checked at import (above).
PRESETS: dict[str, dict[str, Any]] = {
    "quick": {
        "SUBTOPIC_COUNT": 3, "SOURCES_PER_SUBTOPIC": 8, "SEARCHES_PER_SUBTOPIC": 3,
        "MAX_ROUNDS": 1, "REVIEW_CYCLES": 0, "REPORT_MAX_WORDS": 1500,
    },
    "standard": {},
    "deep": {
        "SUBTOPIC_COUNT": 8, "SOURCES_PER_SUBTOPIC": 30, "SEARCHES_PER_SUBTOPIC": 6,
        "MAX_ROUNDS": 3, "REVIEW_CYCLES": 3, "REPORT_MAX_WORDS": 5000,
    },
    "exhaustive": {
        "SUBTOPIC_COUNT": 10, "SOURCES_PER_SUBTOPIC": 50, "SEARCHES_PER_SUBTOPIC": 8,
        "MAX_ROUNDS": 5, "REVIEW_CYCLES": 5, "REPORT_MAX_WORDS": 8000,
        "TOTAL_TIMEOUT_MS": 3_600_000,
    },
}

PRESET_LABELS = {
    "quick": "Quick: a short overview in a few minutes",
    "standard": "Standard: balanced depth",
    "deep": "Deep: more subtopics, sources and review",
    "exhaustive": "Exhaustive: everything, slowest and most expensive",
}

MAX_QUESTION_CHARS = 2000

_check_presets()
