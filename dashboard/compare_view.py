"""Compare runs: two or three reports side by side in the Library, sections aligned and what
differs marked (issue 39), beside the figures and charts of `compare_table.compare_frame`.

The sections are aligned by their headings (the first report's order, then the headings only
the others have); each column lists its report's sentences in that section, and a sentence no
other compared report has is highlighted. Report text is untrusted: every sentence is escaped
before it reaches Markdown. The section and sentence reading is the versions view's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import streamlit as st

from dashboard import views
from dashboard.versions_view import sections, sentences
from storage import Store

MOST = 3  # reports side by side: more would not fit a laptop's width


@dataclass(frozen=True)
class Row:
    """One aligned section: its heading and, per report, its sentences (None: no such
    section) and which of them no other report has."""
    title: str
    columns: tuple[tuple[str, ...] | None, ...]
    only_here: tuple[frozenset[str], ...]


def aligned(markdowns: Sequence[str]) -> list[Row]:
    """The reports' sections aligned by heading, each sentence marked when only its report
    has it."""
    per = [dict(sections(m)) for m in markdowns]
    order = list(dict.fromkeys(title for m in markdowns for title, _ in sections(m)))
    rows = []
    for title in order:
        columns = tuple(tuple(sentences(p[title])) if title in p else None for p in per)
        only = []
        for i, column in enumerate(columns):
            others = {s for j, c in enumerate(columns) if j != i and c for s in c}
            only.append(frozenset(s for s in column or () if s not in others))
        rows.append(Row(title, columns, tuple(only)))
    return rows


def panel(store: Store, run_ids: Sequence[str], names: Sequence[str], *,
          person: str | None) -> None:
    """The chosen runs' reports side by side (the first MOST of them with a report)."""
    reports = []
    for run_id, name in zip(run_ids, names, strict=True):
        if store.get_run(run_id, person=person) is None:
            continue
        report = store.get_report(run_id)
        if report is not None:
            reports.append((name, report.markdown))
    if len(reports) < 2:
        st.caption("The reports appear side by side here once at least two of the chosen runs "
                   "have finished.")
        return
    shown = reports[:MOST]
    st.markdown("**The reports side by side**")
    st.caption("Sections are lined up by their headings; :orange-background[highlighted] "
               "sentences are in that report only." + (
                   f" (The first {MOST} finished reports of your choice.)"
                   if len(reports) > MOST else ""))
    heads = st.columns(len(shown))
    for column, (name, _) in zip(heads, shown, strict=True):
        column.markdown(f"**{views.md_text(name)}**")
    for row in aligned([markdown for _, markdown in shown]):
        with st.expander(views.md_text(row.title), expanded=False):
            cells = st.columns(len(shown))
            for cell, said, only in zip(cells, row.columns, row.only_here, strict=True):
                if said is None:
                    cell.caption("Not in this report.")
                    continue
                cell.markdown("\n".join(
                    f"- :orange-background[{views.md_text(s)}]" if s in only
                    else f"- {views.md_text(s)}" for s in said) or "(empty)")
