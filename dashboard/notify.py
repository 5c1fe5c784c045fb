"""Tell the person when a run finishes, fails or waits for them, whatever page is open.

A small fragment in the sidebar (app.py) looks at the newest runs every few seconds, compares
their status with what this browser session saw last time, shows a toast for each change
that matters, and puts the state in the browser tab's title, so a person who switched to
another tab notices. Runs that were already finished when the page opened raise no toast.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import streamlit as st

from dashboard import views
from research import voice
from research.core.records import Run

APP_TITLE = "Deep Research Studio"
WATCH_EVERY_S = 4
WATCHED_RUNS = 30            # the newest runs; older ones do not change on their own
_SEEN_KEY = "_notify_seen_statuses"
_LAST_KEY = "_notify_last"

_TOASTS = {  # status -> its icon; the words are the run's label (research/voice.py)
    "completed": "✅", "failed": "❌", "waiting": "❓", "cancelled": "⏹️",
}


@dataclass(frozen=True)
class Notice:
    run_id: str
    status: str
    question: str
    warned: bool = False

    def toast_text(self) -> str:
        """'✅ Completed with warnings: How do …': the label every surface uses."""
        words = voice.WITH_WARNINGS if self.status == "completed" and self.warned \
            else voice.status_label(self.status)
        return f"{_TOASTS[self.status]} {words}: {views.md_label(self.question, 70)}"


def changes(seen: Mapping[str, str], runs: Sequence[Run]) -> list[Notice]:
    """Runs whose status changed, since `seen`, to one the person should hear about. A run
    not seen before only counts when it was seen running: new finished runs (another
    session's old work) stay quiet."""
    notices = []
    for run in runs:
        before, now = seen.get(run.id), run.status
        if before is None or before == now or now not in _TOASTS:
            continue
        notices.append(Notice(run.id, now, run.question, bool(run.warnings)))
    return notices


def tab_title(runs: Sequence[Run], last: Notice | None) -> str:
    """The browser tab's title: what needs the person first, then what is going on."""
    statuses = [r.status for r in runs]
    waiting, running = statuses.count("waiting"), statuses.count("running")
    if waiting:
        return f"❓ {voice.status_label('waiting')} · {APP_TITLE}"
    if running:
        return f"⏳ {voice.status_label('running')} ({running}) · {APP_TITLE}"
    if last is not None and last.status in ("completed", "failed"):
        return f"{_TOASTS[last.status]} {voice.status_label(last.status)} · {APP_TITLE}"
    return APP_TITLE


def check(runs: Sequence[Run]) -> None:
    """One look: toast each change since the last look, then set the tab title."""
    seen: dict[str, str] = st.session_state.setdefault(_SEEN_KEY, {})
    notices = changes(seen, runs)  # the first look has seen nothing: no toasts
    for notice in notices:
        st.toast(notice.toast_text())
    last: Notice | None = notices[-1] if notices else st.session_state.get(_LAST_KEY)
    st.session_state[_LAST_KEY] = last
    st.session_state[_SEEN_KEY] = {r.id: r.status for r in runs}
    st.set_page_config(page_title=tab_title(runs, last))


def watch() -> None:
    """The sidebar fragment's body (app.py runs it every WATCH_EVERY_S seconds)."""
    from dashboard import ui

    try:
        runs = ui.store().list_runs(limit=WATCHED_RUNS, person=ui.viewer())
    except Exception:  # noqa: BLE001 - a busy database: the next look tries again
        return
    check(runs)
