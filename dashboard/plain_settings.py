"""The New research form's finer settings in a person's words and units (issue 39).

The constants table (research/core/constants.py) keeps each setting in the unit the engine
uses: milliseconds for time limits. A person reads "Time limit for one step: 120 seconds",
not "Time limit per step (milliseconds) 120000", and each setting says in a sentence what
it does. The form's state keeps the stored value under `c_<NAME>` (what the preset, "Run
again" and the config read); a setting shown in another unit has its own widget under
`u_<NAME>` whose change is written back, converted, to `c_<NAME>`.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st

from research.core.constants import CONSTANTS


@dataclass(frozen=True)
class Plain:
    label: str
    help: str
    unit: str = ""   # the unit shown, when it differs from the stored one
    factor: int = 1  # stored value = shown value x factor


PLAIN = {
    "SEARCHES_PER_SUBTOPIC": Plain(
        "Searches per subtopic", "How many searches are written for each subtopic. More "
        "finds more pages to choose from, and takes a little longer."),
    "MAX_ROUNDS": Plain(
        "Research rounds", "After each round, the questions the findings raised get a round "
        "of their own, up to this many rounds in all."),
    "SOURCE_RELEVANCE_THRESHOLD": Plain(
        "Minimum source relevance", "Every page read gets a score from 0 (off the question) "
        "to 1 (right on it); pages scored below this are not kept."),
    "SOURCE_MAX_AGE_DAYS": Plain(
        "Oldest source allowed (days)", "Pages published longer ago than this many days are "
        "not kept; 0 keeps sources of any age."),
    "REPORT_MAX_WORDS": Plain(
        "Longest report (words)", "The report is written to stay under this many words."),
    "SEARCH_OTHER_SIDE": Plain(
        "Also look for the other side", "Each subtopic is also searched for criticism, "
        "failures and contrary results, so the report can show both sides."),
    "MAX_PARALLEL_WORKERS": Plain(
        "Subtopics researched at once", "More finishes sooner but sends more requests at the "
        "same time; lower it when your account's limits are small or the model runs on your "
        "own computer."),
    "STEP_TIMEOUT_MS": Plain(
        "Time limit for one step", "A single piece of work (a search, reading a page, one "
        "answer of a model) that takes longer is stopped, and the run goes on without it.",
        unit="seconds", factor=1_000),
    "TOTAL_TIMEOUT_MS": Plain(
        "Time limit for the whole run", "When the run has worked this long, it stops; "
        "everything gathered is kept and you can resume it.", unit="minutes", factor=60_000),
    "BREADTH": Plain(
        "Breadth: new subtopics at the first deeper level", "How many new subtopics the "
        "first deeper level may add; each level after it adds half as many."),
    "DEPTH": Plain(
        "Depth: research levels", "How many levels of research, the first included (this "
        "takes the place of research rounds)."),
}


def label(name: str) -> str:
    """The setting's name on the form, with its unit ('Time limit for one step (seconds)')."""
    plain = PLAIN.get(name)
    if plain is None:
        return name.replace("_", " ").capitalize()
    return f"{plain.label} ({plain.unit})" if plain.unit else plain.label


def help_text(name: str) -> str:
    """What the setting does, in a sentence, and its range in the unit shown."""
    const = CONSTANTS[name]
    plain = PLAIN.get(name)
    words = plain.help if plain else const.description
    if const.kind is bool or const.minimum is None or const.maximum is None:
        return words
    low, high = shown(name, const.minimum), shown(name, const.maximum)
    unit = ""
    if plain and plain.unit:  # whole seconds or minutes, as the box takes them
        low, high, unit = max(1, int(low)), int(high), f" {plain.unit}"
    return f"{words} ({low:g} to {high:,g}{unit}.)"


def shown(name: str, stored: float) -> float:
    """A stored value in the unit the form shows."""
    plain = PLAIN.get(name)
    return stored / plain.factor if plain else stored


def stored(name: str, value: float) -> int | float:
    """A value the person typed, in the unit the engine keeps."""
    plain = PLAIN.get(name)
    return int(round(value * plain.factor)) if plain and plain.factor != 1 else value


def widgets(state: MutableMapping[str, Any], names: Sequence[str], *,
            on_change: Callable[[], None], sliders: bool = False) -> None:
    """One widget per setting, in plain words: a toggle, a slider for a share, a number box
    (or a slider, with `sliders`) for a count, and a number box in seconds or minutes for a
    time limit."""
    for name in names:
        const = CONSTANTS[name]
        key = f"c_{name}"
        plain = PLAIN.get(name)
        if const.kind is bool:
            st.toggle(label(name), key=key, help=help_text(name), on_change=on_change)
        elif const.kind is float:
            st.slider(label(name), float(const.minimum or 0.0), float(const.maximum or 1.0),
                      step=0.05, key=key, help=help_text(name), on_change=on_change)
        elif plain is not None and plain.factor != 1:
            _in_unit(state, name, on_change)
        elif sliders:
            st.slider(label(name), int(const.minimum or 1), int(const.maximum or 1), key=key,
                      help=help_text(name), on_change=on_change)
        else:
            st.number_input(label(name), int(const.minimum or 0), int(const.maximum or 10**9),
                            step=1, key=key, help=help_text(name), on_change=on_change)


def _in_unit(state: MutableMapping[str, Any], name: str, on_change: Callable[[], None]) -> None:
    """A time limit in seconds or minutes; the stored milliseconds change only when the
    person changes it (a value between whole units, set elsewhere, is kept as it is)."""
    const = CONSTANTS[name]
    low = max(1, int(shown(name, const.minimum or 0)))
    high = int(shown(name, const.maximum or 0))
    current = state.get(f"c_{name}", const.default)
    state[f"u_{name}"] = min(high, max(low, int(round(shown(name, current)))))

    def changed() -> None:
        state[f"c_{name}"] = stored(name, state[f"u_{name}"])
        on_change()

    st.number_input(label(name), low, high, step=1, key=f"u_{name}", help=help_text(name),
                    on_change=changed)
