""""How this report was made": the short method section every report ends with.

Readers (and reviewers of a report) ask how it was produced before they trust it: when, with
which model, which search services, how many rounds, how many pages were read and kept, how
many claims were checked and what the checks found, and which settings differ from the preset.
Everything here is counted from the store, never taken from a model, and said in plain words
(the same words as the dashboard's sliders, never the constants' names).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from research.core.config import ROLES, ResearchConfig
from research.core.constants import CONSTANTS, DEFAULTS, PRESETS
from research.core.records import Query, RunTotals
from storage import Store

METHOD_TITLE = "How this report was made"
WORDS_PER_MINUTE = 230  # a common average for reading non-fiction prose silently

# The constants in the words the New research form uses for them.
PLAIN_NAMES = {
    "SUBTOPIC_COUNT": "subtopics",
    "SOURCES_PER_SUBTOPIC": "sources per subtopic",
    "SEARCHES_PER_SUBTOPIC": "searches per subtopic",
    "REVIEW_CYCLES": "review cycles",
    "MAX_ROUNDS": "research rounds",
    "BREADTH": "breadth (new subtopics at the first deeper level)",
    "DEPTH": "depth (research levels)",
    "SOURCE_RELEVANCE_THRESHOLD": "minimum source relevance",
    "SOURCE_MAX_AGE_DAYS": "oldest source allowed (days, 0 = any age)",
    "REPORT_MAX_WORDS": "longest report (words)",
    "REQUIRE_CLARIFICATION": "clarifying questions first",
    "INCLUDE_ACADEMIC_SOURCES": "academic sources",
    "MAX_PARALLEL_WORKERS": "subtopics researched at once",
    "STEP_TIMEOUT_MS": "time limit per step",
    "TOTAL_TIMEOUT_MS": "time limit for the whole run",
}
PROVIDER_NAMES = {
    "tavily": "Tavily", "web": "DuckDuckGo web search", "arxiv": "arXiv",
    "semanticscholar": "Semantic Scholar", "documents": "your own documents",
    "searxng": "SearXNG", "brave": "Brave Search", "exa": "Exa", "serper": "Serper (Google)",
    "openai": "OpenAI", "gemini": "Google Gemini", "anthropic": "Anthropic Claude",
}
OUTCOME_WORDS = {
    "supported": "supported", "qualified": "qualified", "removed": "removed",
    "unverified": "not verified", "unchecked": "not verified", "uncited": "without a source",
}


def plain_name(constant: str) -> str:
    """A constant's name as a person reads it ('SUBTOPIC_COUNT' -> 'subtopics')."""
    return PLAIN_NAMES.get(constant, constant.replace("_", " ").lower())


def plain_value(constant: str, value: Any) -> str:
    """A setting's value in plain words (yes/no, minutes instead of milliseconds)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if constant.endswith("_MS") and isinstance(value, int | float):
        minutes = value / 60_000
        return f"{minutes:g} min" if minutes >= 1 else f"{value / 1000:g} s"
    return f"{value:g}" if isinstance(value, float) else str(value)


def reading_minutes(words: int) -> int:
    """Estimated minutes to read `words` words (at least one)."""
    return max(1, math.ceil(words / WORDS_PER_MINUTE))


def reading_time_line(words: int) -> str:
    minutes = reading_minutes(words)
    return f"Estimated reading time: {minutes} minute{'s' if minutes != 1 else ''}."


def settings_changed(config: ResearchConfig) -> list[str]:
    """'subtopics: 4 (preset: 6)' for every setting that differs from the run's preset."""
    preset = {**DEFAULTS, **PRESETS.get(config.preset, {})}
    values = config.constants()
    return [f"{plain_name(name)}: {plain_value(name, values[name])} "
            f"(preset: {plain_value(name, preset[name])})"
            for name in CONSTANTS if values[name] != preset[name]]


def _count_words(counts: Mapping[str, int]) -> str:
    merged: Counter[str] = Counter()
    for status, n in counts.items():
        merged[OUTCOME_WORDS.get(status, status or "not verified")] += n
    return ", ".join(f"{n} {word}" for word, n in merged.most_common())


def _providers(queries: Iterable[Query]) -> list[str]:
    """Search services that answered at least one search, in order of first use."""
    used = [q.provider for q in queries if not q.error]
    return [PROVIDER_NAMES.get(p, p) for p in dict.fromkeys(used) if p]


def method_lines(store: Store, run_id: str, config: ResearchConfig, *,
                 date: str, cited: int) -> list[str]:
    """The method section's lines, in plain words, counted from what the run stored."""
    models = dict.fromkeys(f"{PROVIDER_NAMES.get(m.provider, m.provider)} {m.model}"
                           for m in (config.role(r) for r in ROLES))
    rounds = max((s.round or 1 for s in store.get_plan(run_id) or []), default=1)
    kept = store.count_sources(run_id)
    read = kept + len(store.get_skipped(run_id))
    lines = [
        f"Date: {date}.",
        f"Model: {', '.join(models)}.",
        f"Search services used: {', '.join(_providers(store.get_queries(run_id))) or 'none'}.",
        f"Research rounds: {rounds}.",
        f"Sources: {read} pages read, {kept} kept, {cited} cited in this report.",
    ]
    verdicts = Counter(v.outcome for v in store.get_verifications(run_id))
    total = sum(verdicts.values())
    lines.append(f"Claims checked against their sources: {total}"
                 + (f" ({_count_words(verdicts)})." if total else "."))
    run = store.get_run(run_id)
    lines += goal_lines(config, run.totals if run else RunTotals())
    changed = settings_changed(config)
    lines.append(f"Preset: {config.preset}"
                 + (f"; changed settings: {'; '.join(changed)}." if changed
                    else ", with no settings changed."))
    lines.append(f"Run id: {run_id} (to find this run in the Library or the command line).")
    return lines


def goal_lines(config: ResearchConfig, totals: RunTotals) -> list[str]:
    """The person's desired output and exit case, and whether (and when) it was met."""
    lines = []
    if config.want.strip():
        lines.append(f"Desired output: {' '.join(config.want.split())}.")
    if config.done_when.strip():
        judged = totals.goal
        if judged and judged.met:
            outcome = f"met after round {judged.round}, so research stopped there"
        elif judged:
            outcome = f"not met (last judged after round {judged.round})"
        else:
            outcome = "not judged"
        why = f" ({judged.why})" if judged and judged.why else ""
        lines.append(f"Done when: {' '.join(config.done_when.split())}: {outcome}{why}.")
    return lines
