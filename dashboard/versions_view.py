"""A report's versions on the Run page and in the Library (issue 36, research/living/).

Under a finished report: "Update with what's new" starts an update (research/living/
update.py), and when the report has other versions they are listed, and this version can be
compared with the one before it, section by section: which sections are new, gone or
changed, and in a changed one the sentences added and removed (citation numbers set aside,
as they are renumbered in every version). Not a diff of raw Markdown.

The Library keeps the versions of one report together (`grouped`, `version_labels`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import streamlit as st

from dashboard import ui, views
from research.core.errors import ConfigError
from research.core.records import Run
from storage import Store
from storage.versions import version_link, versions_of

Status = Literal["added", "removed", "changed", "same"]
_CITATION = re.compile(r"\s*\[\[\d+\]\]\(#source-\d+\)|\s*\[\d+(?:[,–-]\s*\d+)*\]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"“(])")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
WHAT_CHANGED = "what changed since"
STATUS_WORDS = {"added": "new in this version", "removed": "not in this version",
                "changed": "changed", "same": "unchanged"}


@dataclass(frozen=True, slots=True)
class SectionChange:
    """One section of two versions of a report, and how it changed."""

    title: str
    status: Status
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()


def sections(markdown: str) -> list[tuple[str, str]]:
    """(title, text) of each '## ' section of a report's body (after its header block),
    leaving out an update's own "What changed since" section."""
    body = markdown.split("\n---\n", 1)[1] if "\n---\n" in markdown[:4000] else markdown
    found: list[tuple[str, list[str]]] = []
    for line in body.split("\n"):
        if line.startswith("## "):
            found.append((line[3:].strip(), []))
        elif found:
            found[-1][1].append(line)
    return [(title, "\n".join(lines).strip()) for title, lines in found
            if not title.lower().startswith(WHAT_CHANGED)]


def sentences(text: str) -> list[str]:
    """The sentences (and list items, table rows) of a section, citation marks removed."""
    out: list[str] = []
    for line in text.split("\n"):
        line = _LIST_MARK.sub("", _CITATION.sub("", line)).strip()
        if not line or set(line) <= set("|-: "):
            continue
        out += [s.strip() for s in _SENTENCE_END.split(line) if s.strip()]
    return out


def section_diff(old: str, new: str) -> list[SectionChange]:
    """How each section of the `new` report differs from the `old` one, in the new one's
    order, then the sections it no longer has."""
    before = dict(sections(old))
    after = sections(new)
    changes: list[SectionChange] = []
    for title, text in after:
        if title not in before:
            changes.append(SectionChange(title, "added", tuple(sentences(text))))
            continue
        was, now = sentences(before[title]), sentences(text)
        added = tuple(s for s in now if s not in set(was))
        removed = tuple(s for s in was if s not in set(now))
        changes.append(SectionChange(title, "changed" if added or removed else "same",
                                     added, removed))
    titles = {t for t, _ in after}
    changes += [SectionChange(title, "removed", removed=tuple(sentences(text)))
                for title, text in before.items() if title not in titles]
    return changes


def grouped(runs: Sequence[Run], groups: Mapping[str, str]) -> list[Run]:
    """`runs` with the versions of one report together (`groups`: an update's id -> its
    first version's id), each group where its first-listed member was, in list order."""
    order: dict[str, list[Run]] = {}
    for run in runs:
        order.setdefault(groups.get(run.id, run.id), []).append(run)
    return [run for members in order.values() for run in members]


def version_labels(store: Store, runs: Sequence[Run], groups: Mapping[str, str]) -> list[str]:
    """"Version 2 of 3" for a run whose report has several versions; "" otherwise."""
    counted: dict[str, list[str]] = {}
    labels = []
    for run in runs:
        first = groups.get(run.id, run.id)
        if first not in counted:
            counted[first] = versions_of(store, first)
        versions = counted[first]
        labels.append(f"Version {versions.index(run.id) + 1} of {len(versions)}"
                      if len(versions) > 1 and run.id in versions else "")
    return labels


def previous_version(store: Store, run_id: str) -> str | None:
    link = version_link(store, run_id)
    return link.previous_run_id if link else None


def panel(store: Store, run: Run, markdown: str, *, person: str | None) -> None:
    """Under a finished report: the update button, the versions, and the comparison."""
    from research.living.update import start_update  # the job engine: the Run page has it

    with st.container(border=True):
        st.markdown("**Update with what's new.** A new version of this report: the same "
                    "question, plan and sources, searched again for what was published since, "
                    "reading only pages not read before. It says what changed at the top.")
        if st.button("Update with what's new", icon=":material/update:", key=f"upd_{run.id}"):
            try:
                new = start_update(ui.jobs(), run.id, person=person,
                                   credentials=ui.credentials(), prices=ui.prices())
            except ConfigError as exc:
                st.error(f"Nothing was started: {views.md_text(exc)}")
            else:
                ui.open_run(new)
        versions = [v for v in versions_of(store, run.id)
                    if store.get_run(v, person=person) is not None]
        if len(versions) < 2:
            return
        links = " · ".join(
            f"[Version {i}](/run?run={v})" if v != run.id else f"**Version {i} (this one)**"
            for i, v in enumerate(versions, 1))
        st.markdown(f"Versions of this report: {links}")
        previous = previous_version(store, run.id)
        earlier = store.get_report(previous) if previous else None
        if earlier is None or not st.toggle("Compare with the previous version",
                                            key=f"cmp_{run.id}"):
            return
        show_diff(section_diff(earlier.markdown, markdown))


def show_diff(changes: Sequence[SectionChange]) -> None:
    if all(c.status == "same" for c in changes):
        st.caption("The two versions have the same sections and sentences.")
        return
    for change in changes:
        title = f"**{views.md_text(change.title)}**: {STATUS_WORDS[change.status]}"
        if change.status == "same":
            st.caption(f"{views.md_text(change.title)}: unchanged")
            continue
        st.markdown(title)
        lines = [f"- Added: {views.md_text(s)}" for s in change.added]
        lines += [f"- Removed: ~~{views.md_text(s)}~~" for s in change.removed]
        if lines:
            st.markdown("\n".join(lines))
