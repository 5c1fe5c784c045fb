"""Counts degrade, they do not fail: fewer items than asked for is normal model behaviour.

When a model returns fewer subtopics, queries, scores or verdicts than asked for, the step
asks once for the missing ones (a cheap repair), goes on with what came as long as it has
the smallest sane amount (`minimum`, set by each step and documented there), trims extras,
and says what happened in plain words: a Warning event in the run log, which deliver also
copies into the report's notes. Only an answer below the minimum fails the step.
"""

from __future__ import annotations

from research.core.context import RunContext
from research.core.events import Warning, from_row


def note_short(ctx: RunContext, step: str, what: str, got: int, asked: int, outcome: str,
               *, asked_again: bool = True) -> None:
    """Log (and later note in the report) that a step got fewer `what` than it asked for.

    `what` is a plain noun phrase a reader knows ("search queries", "decisions on follow-up
    questions"): the sentence lands in the report, the Library and the CLI, so it names no
    step or internal term.
    """
    again = ", even when asked again for the missing ones" if asked_again else ""
    message = f"Only {got} of the {asked} {what} asked for came back{again}; {outcome}."
    ctx.emit(Warning(ctx.run_id, message, step=step, count_note=True, got=got, asked=asked))


def report_notes(ctx: RunContext) -> list[str]:
    """The count warnings of this run, once each, for the report's notes."""
    notes: list[str] = []
    for row in ctx.store.get_events(ctx.run_id):
        event = from_row(row)
        if isinstance(event, Warning) and event.count_note and event.message not in notes:
            notes.append(event.message)
    return notes
