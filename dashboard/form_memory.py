"""The New research form remembered while the person is on another page.

Streamlit forgets a widget's value once a page is drawn without it, so a person who typed a
question, saw Start disabled ("test the key on the Settings page"), fixed the key and came
back found an empty form (issue 39, walked in tests/test_browser_journey.py). The form's
values are copied to a key of their own after each drawing and put back where Streamlit has
dropped them; a started run clears the copy, so the next question starts from the defaults.
See https://docs.streamlit.io/develop/concepts/architecture/widget-behavior#widget-life-cycle
("save the value to a placeholder key").
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping
from typing import Any

KEPT = "_new_research_kept"


def restore(state: MutableMapping[str, Any]) -> None:
    """Put back the remembered values Streamlit dropped (the ones still there win)."""
    for key, value in dict(state.get(KEPT) or {}).items():
        if key not in state:
            state[key] = value


def keep(state: MutableMapping[str, Any], keys: Iterable[str]) -> None:
    """Remember the form's current values (call after the form is drawn)."""
    state[KEPT] = {key: state[key] for key in keys if key in state}


def forget(state: MutableMapping[str, Any]) -> None:
    """A run was started: the next visit starts from the defaults."""
    state.pop(KEPT, None)
