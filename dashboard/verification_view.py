"""Verification verdicts -> what the Run page's Verification tab shows (SPEC step 7).

Pure functions (pandas, no Streamlit). Every claim, the verdict of each of the two passes and
of the critic, what became of it, and the source passage that decided it. Text from models
and the web is escaped before it reaches Markdown (dataframes show plain text).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from dashboard.views import label_text, md_text
from research.core.records import Source, Verdict
from research.export.markdown import safe_link_url
from research.phases import verify
from storage import Store

OUTCOMES = {
    "supported": "Supported",
    "qualified": "Qualified",
    "removed": "Removed",
    "unverified": "Not verified",
    "unchecked": "Not verified",
    "uncited": "No source cited",
}
PASS_NAMES = (("verifier", "First check"), ("auditor", "Second check"))


def summary_of(store: Store, run_id: str) -> verify.VerifySummary:
    return verify.summary(store, run_id)


def outcome_label(status: Any) -> str:
    return OUTCOMES.get(str(status or ""), str(status or "—"))


def share_text(summary: verify.VerifySummary) -> str:
    """'19 of 23': the supported claims, short enough for a metric on a phone."""
    if not summary.claims:
        return "—"
    return f"{summary.supported} of {summary.claims}"


def share_label(summary: verify.VerifySummary) -> str:
    """'Supported claims (83%)': the metric's label carries the share."""
    if not summary.claims:
        return "Supported claims"
    return f"Supported claims ({summary.share_supported:.0%})"


def _titles(source_ids: Iterable[str], sources: Mapping[str, Source]) -> str:
    names = [label_text(sources[sid].title if sid in sources and sources[sid].title else sid, 50)
             for sid in source_ids]
    return "; ".join(names) or "—"


def verdicts_frame(rows: Sequence[Verdict],
                   sources: Mapping[str, Source]) -> pd.DataFrame:
    """One row per claim, in report order."""
    records = []
    for n, r in enumerate(rows, start=1):
        records.append({
            "Claim id": r.claim_id,  # the selection's key; not shown (SHOWN_COLUMNS)
            "#": n,
            "Section": r.section or "—",
            "Subtopic": r.subtopic or "",
            "Claim": r.claim,
            "Sources": _titles(r.source_ids, sources),
            "First check": r.verifier_verdict or "—",
            "Second check": r.auditor_verdict or "—",
            "Critic": r.critic_verdict or "",
            "Outcome": outcome_label(r.status),
            "Passage": r.passage or "",
            "In the report": r.final_text or "",
        })
    return pd.DataFrame.from_records(records, columns=["Claim id", *SHOWN_COLUMNS])


# What the table shows: numbered in report order, checks named by what they are (no claim ids,
# no role names such as "auditor").
SHOWN_COLUMNS = ["#", "Section", "Subtopic", "Claim", "Outcome", "Sources", "First check",
                 "Second check", "Critic", "Passage", "In the report"]


def filter_verdicts(frame: pd.DataFrame, *, outcomes: Iterable[str] = (),
                    sections: Iterable[str] = ()) -> pd.DataFrame:
    shown = frame
    chosen = list(outcomes)
    if chosen:
        shown = shown[shown["Outcome"].isin(chosen)]
    chosen = list(sections)
    if chosen:
        shown = shown[shown["Section"].isin(chosen)]
    return shown


def claim_choice_label(row: Verdict, number: int | None = None) -> str:
    """'#3 · Supported · Heat pumps sold 40% more ...' (its number in the report's order)."""
    head = f"#{number} · " if number is not None else ""
    return f"{head}{outcome_label(row.status)} · {label_text(row.claim, 80)}"


def claim_detail_markdown(row: Verdict, sources: Mapping[str, Source]) -> str:
    """The claim next to each verdict, the passage each check quoted and the excerpts shown."""
    details = row.details or {}
    where = md_text(row.section or "—")
    if row.subtopic:
        where += f" › {md_text(row.subtopic)}"
    parts = [f"**Claim** ({where})", "", f"> {md_text(row.claim)}", "",
             f"**Outcome:** {outcome_label(row.status)}"]
    if row.note:
        parts[-1] += f" — {md_text(row.note)}"
    if row.status != "removed" and row.final_text and row.final_text != row.claim:
        parts += ["", "**As it reads in the report**", "", f"> {md_text(row.final_text)}"]
    for key, name in PASS_NAMES:
        verdict = details.get(key) or {}
        line = f"**{name}:** {md_text(verdict.get('verdict') or 'no verdict')}"
        if verdict.get("reason"):
            line += f" — {md_text(verdict['reason'])}"
        if verdict.get("note"):
            line += f" *({md_text(verdict['note'])})*"
        parts += ["", line]
        if verdict.get("quote"):
            parts += ["", f"> “{md_text(verdict['quote'])}”"]
    if row.critic_verdict:
        line = f"**Critic:** {md_text(row.critic_verdict)}"
        if details.get("critic_reason"):
            line += f" — {md_text(details['critic_reason'])}"
        parts += ["", line]
    excerpts: Mapping[str, str] = details.get("excerpts") or {}
    if excerpts:
        parts += ["", "**Source passages the checks read**"]
    for sid, text in excerpts.items():
        source = sources.get(sid)
        title = md_text(label_text((source.title if source else "") or sid, 120))
        url = safe_link_url(source.url if source else "")
        heading = f"[{title}]({url})" if url else title
        parts += ["", f"- {heading}", "", f"  > {md_text(text)}"]
    return "\n".join(parts)
