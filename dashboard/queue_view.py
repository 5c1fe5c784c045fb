"""A queued run's place in the queue, on the Run page (issue 18, point 5: fair share)."""

from __future__ import annotations

import streamlit as st

from research.core.config import MAX_RUNS_PER_PERSON
from research.durable import QueuePlace


def queue_place_text(place: QueuePlace) -> str:
    """Why the run has not started yet, and when it will: the fair-share rule in plain words."""
    return (f"Waiting for a free worker: {place.describe()} At most {MAX_RUNS_PER_PERSON} of "
            "one person's runs execute at once, so other people's queued runs do not hold "
            "this one back for long.")


def show_queue_place(place: QueuePlace | None) -> None:
    """Nothing unless the run waits in the queue."""
    if place is not None:
        st.info(queue_place_text(place), icon=":material/hourglass_top:")
