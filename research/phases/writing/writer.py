"""What every writing call shares: the writer's role, the language rule, the shortening
prompt, and how a draft version is saved and named (research/phases/writing/write.py drafts
and revises the whole report, write_sections.py and sections_job.py its sections)."""

from __future__ import annotations

from collections.abc import Sequence

from research.core.context import RunContext
from research.core.events import DraftCompleted
from research.core.records import FailedSubtopic
from research.report.checks import word_count

WRITER_ROLE = (
    "You are the writer of a research team. You write clear, well-structured research "
    "reports in Markdown for non-specialist readers, using only the findings and sources "
    "you are given."
)

LANGUAGE_RULE = """
Write the entire report in {language}: every heading (translate the section names above),
every sentence and the table. The sources may be in any language; keep their titles as
they are."""

SHORTEN_PROMPT = """The report below has {words} words; the limit is {max_words}. Shorten it
to fit, keeping its language, the structure, the key numbers and every citation of what
stays.

{draft}"""


def is_english(language: str) -> bool:
    return language.strip().lower() in ("english", "en", "en-us", "en-gb")



def save(ctx: RunContext, version: int, kind: str, text: str, numbers: dict[str, int],
         counts: dict[str, int] | None = None) -> None:
    ctx.store.save_draft(
        ctx.run_id, version, kind, text, {n: sid for sid, n in numbers.items()}, word_count(text)
    )
    removed = (counts or {}).get("citations_removed", 0)
    note = (f"; {removed} citation(s) or link(s) pointing at nothing gathered in this run removed"
            if removed else "")
    ctx.emit(DraftCompleted(
        ctx.run_id, f"Draft {version} written ({word_count(text)} words{note})",
        step=draft_step(version), version=version, words=word_count(text),
        citations_converted=(counts or {}).get("citations_converted", 0), citations_removed=removed,
    ))


def missing_text(failed: Sequence[FailedSubtopic]) -> str:
    if not failed:
        return ""
    listed = "\n".join(f"- {s.title}: {s.error}" for s in failed)
    return ("\nSUBTOPICS THAT COULD NOT BE RESEARCHED (say so in 'Open questions and "
            f"gaps'; do not fill them from memory):\n{listed}\n")


def draft_step(version: int) -> str:
    """The step that wrote a draft version (its result holds the citation counts)."""
    return "write" if version == 1 else f"revise:{version - 1}"
