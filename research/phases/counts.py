"""Counts degrade, they do not fail: fewer items than asked for is normal model behaviour.

When a model returns fewer subtopics, queries, scores or verdicts than asked for, the step
asks once for the missing ones (a cheap repair), goes on with what came as long as it has
the smallest sane amount (`minimum`, set by each step and documented there), trims extras,
and says what happened in plain words: a Warning event in the run log, which deliver also
copies into the report's notes. Only an answer below the minimum fails the step.
"""

from __future__ import annotations

from typing import Any

from research.context import RunContext
from research.events import Warning

NOTE_KEY = "count_note"  # Warning events with this data key become report notes


def note_short(ctx: RunContext, step: str, what: str, got: int, asked: int, outcome: str,
               *, asked_again: bool = True) -> None:
    """Log (and later note in the report) that a step got fewer `what` than it asked for."""
    again = " (after one request for the missing ones)" if asked_again else ""
    message = f"The model gave {got} {what} where {asked} were asked for{again}; {outcome}."
    ctx.emit(Warning(ctx.run_id, message, step=step, data={NOTE_KEY: True, "got": got,
                                                           "asked": asked}))


def report_notes(ctx: RunContext) -> list[str]:
    """The count warnings of this run, once each, for the report's notes."""
    notes: list[str] = []
    for event in ctx.store.get_events(ctx.run_id):
        data: dict[str, Any] = event.get("data") or {}
        if event.get("type") == "warning" and data.get(NOTE_KEY) and event["message"] not in notes:
            notes.append(event["message"])
    return notes
