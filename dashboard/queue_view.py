"""A queued run's place in the queue, on the Run page (issue 18, point 5: fair share)."""

from __future__ import annotations

import streamlit as st

from research.core.config import MAX_RUNS_PER_PERSON
from research.runs import QueuePlace


def queue_place_text(place: QueuePlace) -> str:
    """Why the run has not started yet, and when it will: the fair-share rule in plain words,
    only when other runs are queued ahead of it (a person alone hears just "starting")."""
    if place.place == 1 and place.ahead == 0:
        return "Starting: a worker picks this run up in a moment."
    return (f"Waiting for a free worker: {place.describe()} At most {MAX_RUNS_PER_PERSON} of "
            "one person's runs execute at once, so other people's queued runs do not hold "
            "this one back for long.")


def show_queue_place(place: QueuePlace | None) -> None:
    """Nothing unless the run waits in the queue; a small line when nothing is ahead of it."""
    if place is None:
        return
    if place.place == 1 and place.ahead == 0:
        st.caption(f":material/hourglass_top: {queue_place_text(place)}")
    else:
        st.info(queue_place_text(place), icon=":material/hourglass_top:")
