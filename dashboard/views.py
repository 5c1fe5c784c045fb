"""Store rows -> what the pages show: tables, charts, timings, review feedback, report text.

Pure functions (pandas and plotly, no Streamlit), so they are unit-testable and the pages stay
thin. Text that came from the web or a model is escaped here before it reaches Markdown or a
chart label: it must never become a link, an image or HTML it did not come as.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import pandas as pd
import plotly.graph_objects as go

from research import voice
from research.core.events import Event, from_row
from research.core.records import EventRow, ModelUsage, ReviewIssue, Run, Source, Step, Subtopic
from research.export.doc_passages import anchor as doc_anchor
from research.export.document import ReportDocument, link_citations, map_prose
from research.export.markdown import escape_markdown, neutralise_html, safe_link_url
from research.export.safe_links import clean_document, safe_markdown
from research.runs.status import status_of
from research.untrusted.credibility import KINDS, kind_of
from storage import Store

EVENT_TAIL = 200
STATUS_LABELS = voice.LABELS  # the one table of status words (research/voice.py)
SEVERITIES = ("high", "medium", "low")


# -- plain text helpers ---------------------------------------------------------------------

def plain_words(text: str) -> str:
    """Setting names in engine messages -> the words people know (research.voice)."""
    return voice.plain_words(text)


def md_text(text: Any) -> str:
    """Untrusted text made inert for st.markdown: no links, images, HTML, math or directives.
    Setting names in it become plain words (see `plain_words`)."""
    escaped = escape_markdown(plain_words(str(text or "")))
    return escaped.replace("$", "\\$").replace(":", "\\:")


def md_label(text: Any, limit: int = 80) -> str:
    """Text that is not ours (a question, a title, an error quoting a model) shortened to one
    line and made inert for everything Streamlit renders as Markdown: widget labels, radio
    options, page links, alerts, captions and st.markdown. The one escape for such places."""
    return md_text(label_text(text, limit))


def dollars(text: str) -> str:
    """Our own text with prices for st.markdown (and labels, metrics, progress texts): two
    `$` signs would otherwise typeset what lies between them as maths."""
    return text.replace("$", "\\$")


def label_text(text: Any, limit: int = 60) -> str:
    """Untrusted text for a chart label: plotly reads a few HTML tags in labels, so no < >."""
    clean = " ".join(str(text or "").split()).replace("<", "‹").replace(">", "›")
    return clean if len(clean) <= limit else clean[: limit - 1] + "…"


def domain(url: str) -> str:
    """The web site of a source; "your documents" for a passage of the person's own files."""
    if url.startswith("doc://"):
        return "your documents"
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        host = ""
    return host.removeprefix("www.")


def status_label(status: str) -> str:
    return voice.status_label(status)


def as_shown(run: Run, alive: bool) -> Run:
    """The run with the status a person should see now (research.runs.status_of): a queued
    run nothing executes is interrupted."""
    shown = status_of(run, alive)
    return run if shown == run.status else dataclasses.replace(run, status=shown)


def run_warnings(run: Run) -> list[str]:
    """The stored warnings of a completed run (see research.report.outcome)."""
    return list(run.warnings) if run.status == "completed" else []


def run_status_text(run: Run) -> str:
    """A run's status as every view shows it (and the CLI, the API, the notifications):
    research.voice.run_label."""
    return voice.run_label(run)


def parse_ts(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def short_date(value: Any) -> str:
    moment = parse_ts(value)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M") if moment else ""


def duration_text(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    minutes, sec = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {sec:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


# -- live panel -----------------------------------------------------------------------------

def timing(run: Run, pct: int, now: datetime | None = None) -> tuple[float | None, float | None]:
    """(elapsed seconds, estimated remaining seconds or None)."""
    now = now or datetime.now(UTC)
    if run.duration_s is not None and run.status in ("completed", "failed", "cancelled"):
        return run.duration_s, 0.0
    started = parse_ts(run.started_at)
    if started is None:
        return None, None
    elapsed = max(0.0, (now - started).total_seconds())
    if run.status not in ("running", "paused") or pct <= 0:
        return elapsed, None
    return elapsed, elapsed * (100 - pct) / pct


def steps_frame(steps: Sequence[Step]) -> pd.DataFrame:
    rows = [{
        "Step": s.label or s.key,
        "State": status_label(s.status),
        "Duration": duration_text(s.duration_s) if s.duration_s is not None else "",
        "Sources": str(s.source_count) if s.kind == "research" else "",
        "Attempts": s.attempts or 1,
        "Problem": voice.plain_error(s.error or ""),  # our own message: no exception names
    } for s in steps]
    return pd.DataFrame(rows, columns=["Step", "State", "Duration", "Sources", "Attempts", "Problem"])


def tail_events(store: Store, run_id: str, *, n: int = EVENT_TAIL) -> list[Event]:
    """The run's last `n` events, typed, without reading its whole log."""
    return typed_events(store.last_events(run_id, n))


def typed_events(rows: Sequence[EventRow]) -> list[Event]:
    return [from_row(row) for row in rows]


def events_frame(events: Sequence[Event]) -> pd.DataFrame:
    rows = [{
        "Time": short_date(e.ts)[11:] or "",
        "Event": voice.event_words(e.type),
        "Message": plain_words(e.message),
    } for e in reversed(events)]
    return pd.DataFrame(rows, columns=["Time", "Event", "Message"])


# -- sources --------------------------------------------------------------------------------

SOURCE_COLUMNS = ["#", "Title", "Link", "Domain", "Subtopic", "Relevance", "Published",
                  "Provider", "Kind", "Signals", "Cited in"]


def subtopic_names(plan: Sequence[Subtopic] | None) -> dict[str, str]:
    return {s.id: s.title or s.id for s in plan or []}


def sources_frame(sources: Sequence[Source], plan: Sequence[Subtopic] | None = None,
                  ) -> pd.DataFrame:
    names = subtopic_names(plan)
    rows = []
    for i, s in enumerate(sources, 1):
        url = s.url
        rows.append({
            "#": i,
            "Title": " ".join(s.title.split()) or domain(url) or url,
            "Link": url if safe_link_url(url) else None,
            "Domain": domain(url),
            "Subtopic": names.get(str(s.subtopic_id), s.subtopic_id or ""),
            "Relevance": s.relevance,
            "Published": (s.published or "")[:10] or None,
            "Provider": s.provider,
            "Kind": kind_of(s),
            "Signals": ", ".join(s.signals),
            "Cited in": ", ".join(s.cited_in),
        })
    return pd.DataFrame(rows, columns=SOURCE_COLUMNS)


def kinds_present(frame: pd.DataFrame) -> list[str]:
    """The kinds this run's sources have, strongest first (research.untrusted.credibility.KINDS order)."""
    present = set(frame["Kind"]) if "Kind" in frame else set()
    return [kind for kind in KINDS if kind in present]


def filter_sources(frame: pd.DataFrame, *, subtopics: Iterable[str] = (), domains: Iterable[str] = (),
                   min_relevance: float = 0.0, kinds: Iterable[str] = ()) -> pd.DataFrame:
    subtopics, domains, kinds = list(subtopics), list(domains), list(kinds)
    mask = frame["Relevance"] >= min_relevance
    if kinds:
        mask &= frame["Kind"].isin(kinds)
    if subtopics:
        mask &= frame["Subtopic"].isin(subtopics)
    if domains:
        mask &= frame["Domain"].isin(domains)
    return frame[mask]


def _bar(labels: Sequence[Any], values: Sequence[Any], title: str, *, horizontal: bool = False,
         x_title: str = "", y_title: str = "") -> go.Figure:
    labels = [label_text(v) for v in labels]
    bar = go.Bar(y=labels, x=values, orientation="h") if horizontal else go.Bar(x=labels, y=values)
    fig = go.Figure(bar)
    fig.update_layout(title=title, margin={"l": 10, "r": 10, "t": 40, "b": 10}, height=320,
                      xaxis_title=x_title, yaxis_title=y_title)
    if horizontal:
        fig.update_yaxes(autorange="reversed")
    return fig


def source_charts(frame: pd.DataFrame) -> dict[str, go.Figure]:
    """Sources per subtopic, relevance distribution, top domains, publication dates."""
    per_sub = frame["Subtopic"].value_counts()
    domains = frame["Domain"].value_counts().head(15)
    relevance = go.Figure(go.Histogram(x=frame["Relevance"], xbins={"start": 0, "end": 1.0001, "size": 0.05}))
    relevance.update_layout(title="Relevance of the sources kept", height=320,
                            margin={"l": 10, "r": 10, "t": 40, "b": 10},
                            xaxis_title="relevance (0-1)", yaxis_title="sources")
    months = Counter(p[:7] for p in frame["Published"].dropna() if re.match(r"\d{4}-\d{2}", str(p)))
    undated = int(frame["Published"].isna().sum())
    month_keys = sorted(months)
    dates = _bar(month_keys, [months[k] for k in month_keys],
                 f"Publication dates ({undated} undated)", x_title="month", y_title="sources")
    return {
        "subtopics": _bar(list(per_sub.index), list(per_sub.values), "Sources per subtopic",
                          horizontal=True, x_title="sources"),
        "relevance": relevance,
        "domains": _bar(list(domains.index), list(domains.values), "Top domains",
                        horizontal=True, x_title="sources"),
        "dates": dates,
    }


# -- review ---------------------------------------------------------------------------------

def group_issues(issues: Iterable[ReviewIssue]) -> dict[str, list[ReviewIssue]]:
    groups: dict[str, list[ReviewIssue]] = {sev: [] for sev in SEVERITIES}
    for issue in issues:
        groups.setdefault(issue.severity, []).append(issue)
    return {sev: items for sev, items in groups.items() if items}


def checks_rows(checks: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The deterministic checks in plain words: (check, result)."""
    if not checks:
        return []
    rows: list[tuple[str, str]] = []
    unresolved = checks.get("unresolved_citations") or []
    rows.append(("Every citation points to a gathered source",
                 "yes" if not unresolved else "no: " + ", ".join(f"[{n}]" for n in unresolved)))
    if "cited_share" in checks:
        rows.append(("Sentences with a citation", f"{float(checks['cited_share']):.0%} "
                     f"({checks.get('cited_sentences', '?')} of {checks.get('sentences', '?')})"))
    if "word_count" in checks:
        rows.append(("Words", f"{checks['word_count']} (limit {checks.get('max_words', '?')})"))
    stale = checks.get("stale_sources")
    if stale is not None:
        count = len(stale) if isinstance(stale, list) else int(stale)
        rows.append(("Stale sources cited", str(count)))
    if "undated_sources" in checks:
        rows.append(("Undated sources cited", str(checks["undated_sources"])))
    if "passed" in checks:
        rows.append(("All checks passed", "yes" if checks["passed"] else "no"))
    return rows


def draft_diff(old: str, new: str, *, old_name: str, new_name: str, max_lines: int = 400) -> str:
    """A unified diff of two drafts (shown with st.code, so it is plain text)."""
    lines = list(difflib.unified_diff(old.splitlines(), new.splitlines(), old_name, new_name,
                                      lineterm="", n=1))
    if len(lines) > max_lines:
        lines = lines[:max_lines] + [f"… {len(lines) - max_lines} more lines not shown"]
    return "\n".join(lines)


def diff_stats(old: str, new: str) -> tuple[int, int]:
    """(lines added, lines removed)."""
    added = removed = 0
    for line in difflib.ndiff(old.splitlines(), new.splitlines()):
        if line.startswith("+ "):
            added += 1
        elif line.startswith("- "):
            removed += 1
    return added, removed


# -- report ---------------------------------------------------------------------------------

_IMAGE_START = re.compile(r"!(?=\[)")
_HEADING = re.compile(r"^( {0,3})(#{1,5})(?=[ \t])", re.MULTILINE)
_DOLLAR = re.compile(r"(?<!\\)\$")


def report_markdown(doc: ReportDocument) -> str:
    """The report body for st.markdown: citations link to their source, nothing runs as HTML.

    `build_document` already dropped links to pages that were not gathered and every image;
    here raw HTML is escaped, stray image syntax is defused, `$` is escaped so prices are
    not typeset as maths, and headings move one level down to sit under the page's title.
    """
    doc = clean_document(doc)
    urls = {s.number: safe_link_url(s.url) or doc_anchor(s) for s in doc.sources}

    def render(n: int) -> str:
        return f"[[{n}]]({urls[n]})" if urls.get(n) else f"[{n}]"

    body = neutralise_html(doc.body)
    body = map_prose(body, lambda chunk: _HEADING.sub(r"\1#\2", _DOLLAR.sub(r"\\$", _IMAGE_START.sub(r"\\!", chunk))))
    return safe_markdown(link_citations(body, [s.number for s in doc.sources], render).strip())


def sources_markdown(doc: ReportDocument) -> str:
    lines = []
    for s in doc.sources:
        url = safe_link_url(s.url) or doc_anchor(s)  # a document passage: shown on the page
        title = md_text(s.title or s.url)
        entry = f"[{title}]({url})" if url else title
        details = [md_text(p) for p in (s.domain, s.published) if p]
        if details:
            entry += " — " + ", ".join(details)
        lines.append(f"{s.number}\\. {entry}")
    return "  \n".join(lines) if lines else "No sources were cited."


def usage_frame(usage: Sequence[ModelUsage]) -> pd.DataFrame:
    rows = [{
        "Role": voice.role_name(u.role), "Provider": u.provider, "Model": u.model, "Calls": u.calls,
        "Input tokens": u.input_tokens, "Output tokens": u.output_tokens,
        "Cost (USD)": u.cost_usd,
    } for u in usage]
    return pd.DataFrame(rows, columns=["Role", "Provider", "Model", "Calls", "Input tokens",
                                       "Output tokens", "Cost (USD)"])


# -- library and comparison -----------------------------------------------------------------

def run_constants(run: Run) -> dict[str, Any]:
    config = run.config  # the stored settings: older runs may lack a key
    return {
        "Preset": config.get("preset", ""),
        "Subtopics": config.get("subtopic_count"),
        "Sources/subtopic": config.get("sources_per_subtopic"),
        "Reviews": config.get("review_cycles"),
        "Model": f"{config.get('provider', '')}/{config.get('model', '')}".strip("/"),
    }


STATUS_ICONS = {"completed": ":material/task_alt:", "failed": ":material/error:",
                "cancelled": ":material/stop_circle:", "waiting": ":material/help:",
                "interrupted": ":material/pause_circle:", "paused": ":material/pause_circle:"}


def status_icon(run: Run) -> str:
    if run.status == "completed" and run.warnings:
        return ":material/warning:"
    return STATUS_ICONS.get(run.status, ":material/pending:")


def library_line(run: Run, version: str = "", parent_question: str | None = None) -> str:
    """The line under a run in the Library: status, date, preset, sources, cost, version."""
    parts = [run_status_text(run), short_date(run.created_at)]
    if run.preset:
        parts.append(run.preset.capitalize())
    if run.totals.sources:
        parts.append(f"{run.totals.sources} sources")
    if run.totals.cost_usd:
        parts.append(voice.money(run.totals.cost_usd))
    if version:
        parts.append(version)
    if run.parent_run_id:
        parts.append("builds on " + (label_text(parent_question or "", 50) or "a deleted run"))
    return " · ".join(p for p in parts if p)


def library_frame(runs: Sequence[Run], *, url_for: Any = None,
                  parents: Mapping[str, str] | None = None) -> pd.DataFrame:
    """One row per run; `parents` maps a parent run id to its question ("Builds on")."""
    parents = parents or {}
    rows = []
    for run in runs:
        parent = run.parent_run_id
        rows.append({
            "Open": url_for(run.id) if url_for else run.id,
            "Question": " ".join(run.question.split()),
            "Date": short_date(run.created_at),
            "Status": run_status_text(run),
            **run_constants(run),
            "Sources": run.totals.sources,
            "Duration": duration_text(run.duration_s),
            "Cost (USD)": run.totals.cost_usd,
            "Builds on": (label_text(parents.get(parent) or "", 50) or "a deleted run")
                         if parent else "",
        })
    columns = ["Open", "Question", "Date", "Status", "Preset", "Subtopics", "Sources/subtopic",
               "Reviews", "Model", "Sources", "Duration", "Cost (USD)", "Builds on"]
    return pd.DataFrame(rows, columns=columns)


def run_name(run: Run, limit: int = 80, *, with_time: bool = False) -> str:
    """How a person tells runs apart: question, date and preset (never the run's id)."""
    preset = run.preset.capitalize()
    when = short_date(run.created_at)
    parts = [label_text(run.question or "Untitled run", limit),
             when if with_time else when[:10]]
    if preset:
        parts.append(preset)
    return " · ".join(p for p in parts if p)
