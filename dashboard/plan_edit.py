"""The plan editor of a waiting run: one card per subtopic, in the order the person sets.

Pure functions (no Streamlit). The cards are a list of subtopic ids in the person's order (a
new card gets an id of its own, "new-1"...) and what each card's fields hold; the person
renames, removes, adds and reorders subtopics and edits their questions (one per line, or
separated by "; "). The engine's `approve_plan` validates the result and keeps the original
plan. Cards read on a phone as well as on a laptop, where a table did not.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from research.core.records import Subtopic

NEW = "new-"  # the id prefix of a card the person added
_SPLIT = re.compile(r"\s*(?:\n|;\s)\s*")


@dataclass(frozen=True)
class CardText:
    """What one card's fields hold."""
    title: str = ""
    questions: str = ""  # one per line
    description: str = ""


def card_text(sub: Subtopic | None) -> CardText:
    """A card's first text: the planned subtopic's, or empty for a card the person added."""
    if sub is None:
        return CardText()
    return CardText(sub.title, "\n".join(sub.questions), sub.description)


def split_questions(text: str | None) -> list[str]:
    """'a; b' or 'a\\nb' -> ['a', 'b'] (a ";" inside a question stays when no space follows)."""
    if not text or not text.strip():
        return []
    return [q.strip(" ;") for q in _SPLIT.split(text) if q.strip(" ;")]


def moved(order: Sequence[str], position: int, step: int) -> list[str]:
    """The order with the card at `position` moved `step` places (kept within the list)."""
    out = list(order)
    target = max(0, min(len(out) - 1, position + step))
    out.insert(target, out.pop(position))
    return out


def added(order: Sequence[str]) -> list[str]:
    """The order with a new, empty card at the end."""
    taken = {int(k.removeprefix(NEW)) for k in order if k.startswith(NEW)
             and k.removeprefix(NEW).isdigit()}
    return [*order, f"{NEW}{max(taken, default=0) + 1}"]


def subtopics_from_cards(order: Sequence[str], texts: Mapping[str, CardText]) -> list[Subtopic]:
    """The cards as `approve_plan` takes them, in the person's order. A card without a title is
    dropped by the engine (it says so when nothing is left); an added card has no id yet."""
    out = []
    for key in order:
        text = texts.get(key, CardText())
        out.append(Subtopic(id="" if key.startswith(NEW) else key, title=text.title.strip(),
                            description=text.description.strip(),
                            questions=tuple(split_questions(text.questions))))
    return out
