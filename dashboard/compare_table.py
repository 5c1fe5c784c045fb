"""Compare's figures: one row per compared run (its settings and outcomes) and the charts of
each outcome per run and against a chosen setting. Pure (pandas and plotly, no Streamlit),
like views.py, whose escaping of model and web text the labels go through."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from dashboard.views import label_text, run_name, run_status_text
from storage import Store

# The settings a comparison can be plotted against, named as on the New research form.
COMPARE_CONSTANTS = {
    "Subtopics": "subtopic_count", "Sources per subtopic": "sources_per_subtopic",
    "Searches per subtopic": "searches_per_subtopic", "Review cycles": "review_cycles",
    "Research rounds": "max_rounds", "Minimum source relevance": "source_relevance_threshold",
    "Longest report (words)": "report_max_words",
}
COMPARE_METRICS = ("Sources", "Citations", "Review cycles used", "Duration (s)", "Cost (USD)")
COUNTED = ("Sources", "Citations", "Review cycles used")


def compare_frame(store: Store, run_ids: Sequence[str], *,
                  person: str | None = None) -> pd.DataFrame:
    """One row per run of `person` (None: anyone's): its constants and outcomes (a few small
    queries per run); another person's run is left out as if it did not exist."""
    rows = []
    for run_id in run_ids:
        run = store.get_run(run_id, person=person)
        if run is None:
            continue
        totals = run.totals
        report = store.get_report(run_id)
        reviews = store.get_reviews(run_id)
        cost = totals.cost_usd
        if cost is None:
            cost = store.usage_totals(run_id).cost_usd
        row: dict[str, Any] = {
            "Run": run_name(run, 40, with_time=True),
            "Run id": run_id,
            "Status": run_status_text(run),
        }
        row.update({name: run.config.get(field) for name, field in COMPARE_CONSTANTS.items()})
        row.update({
            "Sources": store.count_sources(run_id) if totals.sources is None else totals.sources,
            "Citations": report.meta.get("cited_sources") if report else None,
            "Review cycles used": len(reviews),
            "Approved": ("yes" if reviews[-1].approved else "no") if reviews else "—",
            "Duration (s)": run.duration_s,
            "Cost (USD)": round(cost, 4),
        })
        rows.append(row)
    return pd.DataFrame(rows)


def compare_labels(frame: pd.DataFrame) -> list[str]:
    """Each compared run's axis label: its question, shortened, over its date and preset
    ("Run" is "question · date · preset"); runs alike in all three are numbered."""
    labels = []
    for name in frame["Run"]:
        question, _, rest = str(name).partition(" · ")
        labels.append(f"{label_text(question, 28)}<br>{label_text(rest, 40)}")
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if labels.count(label) == 1 else f"{label} ({seen[label]})")
    return out


def compare_charts(frame: pd.DataFrame, constant: str) -> dict[str, go.Figure]:
    """Each outcome per run (bars), and against the chosen constant (scatter)."""
    charts: dict[str, go.Figure] = {}
    # One bar per run, whatever the runs are called: the bars stand on the runs' ids and are
    # labelled by question, date and preset (two runs of one question used to share a bar,
    # their figures added up).
    ids = list(frame["Run id"])
    ticks = compare_labels(frame)
    runs = [t.replace("<br>", " · ") for t in ticks]
    for metric in COMPARE_METRICS:
        values = pd.to_numeric(frame[metric], errors="coerce")
        if metric in COUNTED:
            values = values.fillna(0)  # no report yet: nothing cited, not an empty -1..1 axis
        fig = go.Figure(go.Bar(x=ids, y=values, name=metric, hovertext=runs))
        x = pd.to_numeric(frame[constant], errors="coerce")
        fig.add_trace(go.Scatter(x=ids, y=values, mode="markers", showlegend=False,
                                 text=[f"{constant} = {v}" for v in x], hoverinfo="text+y"))
        fig.update_layout(title=f"{metric} by run (hover: {constant})", height=300,
                          margin={"l": 10, "r": 10, "t": 40, "b": 10}, showlegend=False)
        fig.update_xaxes(type="category", tickmode="array", tickvals=ids, ticktext=ticks)
        fig.update_yaxes(rangemode="tozero")
        charts[metric] = fig
    scatter = go.Figure()
    x = pd.to_numeric(frame[constant], errors="coerce")
    for metric in ("Sources", "Citations"):
        scatter.add_trace(go.Scatter(x=x, y=pd.to_numeric(frame[metric], errors="coerce"),
                                     mode="markers", name=metric, text=runs))
    scatter.update_layout(title=f"Sources and citations vs {constant}", height=320,
                          xaxis_title=constant, margin={"l": 10, "r": 10, "t": 40, "b": 10})
    charts["vs constant"] = scatter
    return charts
