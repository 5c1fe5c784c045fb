"""The Run page's "what should we explore next?" panel, for a run waiting between rounds
(research.phases.decide.steer): tick the lead's proposals, add branches of your own, or say enough."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from dashboard import views
from research import answer_steering
from research.core.errors import ConfigError
from research.core.records import JsonObject
from storage import Store


def panel(store: Store, run_id: str, asked: JsonObject,
          carry_on: Callable[[str], None]) -> None:
    """Draw the choice; on a button, store it and let `carry_on` resume the run."""
    st.subheader(f"Round {asked['round']} is done: what should we explore next?")
    st.caption("Tick the branches the planner proposes that you want followed, add your own (one "
               "per line), or stop here and have the report written.")
    proposals = asked.get("proposals") or []
    with st.form(f"steer_{run_id}_{asked['round']}"):
        ticked = [p["n"] for p in proposals
                  if st.checkbox(views.md_label(p["title"], 150), value=True,
                                 key=f"steer_{run_id}_{p['n']}",
                                 help=views.md_text(p.get("why") or "") or None)]
        if not proposals:
            st.caption("The planner proposes no new branch; add your own or write the report.")
        own = st.text_area("Branches of your own (one per line)", key=f"steer_add_{run_id}",
                           height=80)
        cols = st.columns(2)
        follow = cols[0].form_submit_button("Follow these", type="primary",
                                            icon=":material/play_arrow:")
        enough = cols[1].form_submit_button("Enough: write the report",
                                            icon=":material/edit_document:")
    if not (follow or enough):
        return
    try:
        answer_steering(store, run_id, follow=ticked, add=(own or "").splitlines(),
                        enough=bool(enough))
    except ConfigError as exc:
        st.error(f"Your choice could not be saved: {exc}")
    else:
        carry_on("Your choice was saved")
