"""Verify, part 3: applying the verdicts. Each claim's final status, then the verified draft:
removed claims leave (with a note), qualified ones are rewritten or marked, unchecked ones are
marked, subtopics that could not be grounded are marked UNVERIFIED.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from research.core.records import Source
from research.export.document import CITATION_RE, expand_citation, map_prose, strip_foreign_links
from research.phases.verify.claims import FENCE, HEADING, LIST_MARK, Outcome, kind_of, section_kinds
from research.phases.verify.judge import normalised
from research.report.checks import CITATION, has_figure

QUALIFIED = "(qualified after verification)"
SINGLE_SOURCE = "(single source)"
NOT_VERIFIED = "(not verified)"
UNVERIFIED = "(UNVERIFIED)"
INSUFFICIENT = "Insufficient verified data for this section."
NOT_FULLY_SUPPORTED = "(not fully supported by the cited source)"
NO_SOURCE = "(no source cited)"
NOT_COMPLETED = ("*Verification could not be completed: the fact-checkers gave no usable answer "
                 "for most claims; those are marked as not verified and are unchecked, not established fact.*")
# What this phase writes into a report, for translation into the report's language.
MARKS = (QUALIFIED, SINGLE_SOURCE, NOT_VERIFIED, UNVERIFIED, INSUFFICIENT, NOT_FULLY_SUPPORTED,
         NO_SOURCE)
NOTE_PREFIXES = ("- Removed after verification:", "*This subtopic could not be verified",
                 "*Verification could not be completed")
UNCHECKED_STATUSES = ("unchecked", "unverified")  # "unverified": rows stored by older versions

# --- deciding and applying ---------------------------------------------------------------------


def decide(o: Outcome) -> None:
    """Final status from the combined verdict and the critic's judgement.

    A claim citing nothing gathered is removed when it cites only what was never gathered or
    gives a figure, and marked otherwise; a claim no check answered for is "unchecked" (marked,
    never counted as unsupported); one pass alone decides nothing without the critic."""
    if not o.claim.source_ids:
        if o.claim.invalid or has_figure(o.claim.text):
            o.status, o.note = "removed", "It cites no source gathered in this run."
        else:
            o.status, o.note = "uncited", "It cites no source; marked as such."
    elif o.combined == "unchecked":
        o.status, o.note = "unchecked", "Neither check gave a usable answer."
    elif o.combined == "unsupported":
        o.status = "removed"
    elif o.critic == "REJECT":
        o.status = "removed"
    elif not (o.first.verdict and o.second.verdict) and not o.critic:
        o.status, o.note = "unchecked", "Only one check answered and the critic gave no verdict."
    elif o.critic == "DOWNGRADE" or o.combined == "overstated":
        o.status = "qualified"
    elif o.combined == "contested" and o.critic != "SURVIVES":
        o.status, o.note = "qualified", "The checks disagreed and the critic gave no verdict."
    else:
        o.status = "supported"


def mark(sentence: str, marker: str) -> str:
    """Insert '(marker)' before the sentence's trailing citations and full stop (in a table
    row: at the end of its last cell that says something)."""
    if marker.strip("()").lower() in sentence.lower():
        return sentence
    if sentence.lstrip().startswith("|"):
        return _mark_row(sentence, marker)
    match = re.match(r"^(.*?)(\s*(?:\[[^\]]*\]\s*)*)([.!?]*)\s*$", sentence, re.DOTALL)
    if not match:
        return f"{sentence} {marker}"
    body, cites, end = match.groups()
    return f"{body.rstrip()} {marker}{(' ' + cites.strip()) if cites.strip() else ''}{end}"


def _mark_row(row: str, marker: str) -> str:
    cells = row.strip().strip("|").split("|")
    for i in range(len(cells) - 1, -1, -1):
        if re.search(r"[A-Za-z0-9À-ÿ]", CITATION.sub("", cells[i])):
            cells[i] = mark(cells[i].strip(), marker)
            break
    return "| " + " | ".join(c.strip() for c in cells) + " |"


def _clean_line(line: str) -> str | None:
    """A line after sentences were cut from it; None when nothing that says anything is left."""
    if line.lstrip().startswith("|"):
        return line if re.search(r"[A-Za-z0-9À-ÿ]", line) else None
    prefix = LIST_MARK.match(line)
    lead = prefix.group(0) if prefix else line[: len(line) - len(line.lstrip())]
    rest = " ".join(line[len(lead):].split())
    if not re.search(r"[A-Za-z0-9À-ÿ]", CITATION.sub("", rest)):
        return None
    return lead + rest


def apply(text: str, outcomes: Sequence[Outcome], *, numbering: Mapping[int, str],
          sources: Mapping[str, Source], failed_titles: Iterable[str]) -> tuple[str, list[str]]:
    """The verified draft and the titles of the subtopics marked UNVERIFIED."""
    lines = text.splitlines()
    by_line: dict[int, list[Outcome]] = {}
    for o in outcomes:
        by_line.setdefault(o.claim.line, []).append(o)
    dropped: set[int] = set()
    for i, group in by_line.items():
        line = lines[i]
        for o in group:
            if o.status == "removed":
                new = ""
            elif o.status == "qualified":
                new = mark(o.final_text or o.claim.text, QUALIFIED if o.rewritten
                           else NOT_FULLY_SUPPORTED)
            elif o.status in UNCHECKED_STATUSES:
                new = mark(o.claim.text, NOT_VERIFIED)
            elif o.status == "uncited":
                new = mark(o.claim.text, NO_SOURCE)
            else:
                new = o.claim.text
            if o.single_source and o.status != "removed":
                new = mark(new, SINGLE_SOURCE)
            o.final_text = new
            line = line.replace(o.claim.text, new, 1) if new or not o.claim.table_row else ""
        cleaned = _clean_line(line)
        if cleaned is None:
            dropped.add(i)
        else:
            lines[i] = cleaned

    lines = _without_bare_tables([line for i, line in enumerate(lines) if i not in dropped])
    removed = [o for o in outcomes if o.status == "removed"]
    if removed:
        lines = _removal_note(lines, removed)
    lines = _fill_empty_sections(lines)
    unverified = _mark_subtopics(lines, outcomes, failed_titles)  # after the filling: its note is no data
    if incomplete(outcomes):
        title = next((i for i, line in enumerate(lines) if HEADING.match(line)), -1)
        lines[title + 1:title + 1] = ["", NOT_COMPLETED, ""]
    lines = _single_blank_lines(lines)
    body = "\n".join(lines).rstrip() + "\n"
    return _only_gathered(body, numbering, sources), unverified


def incomplete(outcomes: Sequence[Outcome]) -> bool:
    """Verification could not be completed: most claims with a source got no usable verdict."""
    checkable = [o for o in outcomes if o.claim.source_ids]
    unchecked = sum(1 for o in checkable if o.status in UNCHECKED_STATUSES)
    return bool(checkable) and unchecked * 2 > len(checkable)


def _mark_subtopics(lines: list[str], outcomes: Sequence[Outcome],
                    failed_titles: Iterable[str]) -> list[str]:
    """Mark (in place) the ### subtopic headings that could not be grounded; their titles."""
    failed = {normalised(t) for t in failed_titles if t}
    by_subtopic: dict[str, list[Outcome]] = {}
    for o in outcomes:  # unchecked claims carry their own mark: they ground nothing either way
        if o.claim.subtopic and o.status not in UNCHECKED_STATUSES:
            by_subtopic.setdefault(o.claim.subtopic, []).append(o)
    kinds = section_kinds(lines)
    marked: list[str] = []
    notes: dict[int, list[str]] = {}
    kind = "other"
    for i, line in enumerate(list(lines)):
        heading = HEADING.match(line)
        if not heading:
            continue
        level, title = len(heading.group(1)), heading.group(2).strip()
        if level == 2:
            kind = kinds.get(i, "other")
            continue
        if level != 3 or kind != "analysis":
            continue
        name = re.sub(r"^subtopic:\s*", "", title, flags=re.IGNORECASE)
        group = by_subtopic.get(name, [])
        supported = sum(1 for o in group if o.status == "supported")
        grounded = bool(group) and supported * 2 > len(group)
        is_failed = normalised(name) in failed or any(f and f in normalised(name) for f in failed)
        if is_failed or not grounded:
            marked.append(name)
            reason = ("its research failed" if is_failed
                      else "most of its claims were not supported by their sources")
            notes[i] = [f"{heading.group(1)} {title} {UNVERIFIED}", "",
                        f"*This subtopic could not be verified ({reason}); treat what follows as "
                        "unverified, not as established fact.*"]
    for i in sorted(notes, reverse=True):
        lines[i:i + 1] = notes[i]
    return marked


def _removal_note(lines: list[str], removed: Sequence[Outcome]) -> list[str]:
    sections = ", ".join(dict.fromkeys(o.claim.section for o in removed))
    note = (f"- Removed after verification: {len(removed)} claim"
            f"{'s' if len(removed) != 1 else ''} that no gathered source supported "
            f"(from: {sections}).")
    for i, line in enumerate(lines):
        heading = HEADING.match(line)
        if heading and len(heading.group(1)) == 2 and kind_of(heading.group(2)) == "skip" \
                and re.search(r"open questions|gaps", heading.group(2), re.IGNORECASE):
            end = i + 1
            while end < len(lines) and not HEADING.match(lines[end]):
                end += 1
            while end > i + 1 and not lines[end - 1].strip():
                end -= 1
            return [*lines[:end], note, *lines[end:]]
    return [*lines, "", "## Open questions and gaps", "", note]


_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")


def _without_bare_tables(lines: list[str]) -> list[str]:
    """Tables whose every row was removed lose their header too (a header and its rule line
    alone said nothing; issue 39)."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        end = i
        while end < len(lines) and lines[end].lstrip().startswith("|"):
            end += 1
        block = lines[i:end]
        if block and len(block) <= 2 and _TABLE_RULE.match(block[-1]):
            i = end  # a header (and its rule) with no row under it
            continue
        out += block or [lines[i]]
        i = max(end, i + 1)
    return out


def _fill_empty_sections(lines: list[str]) -> list[str]:
    """A ## or ### section left with nothing under it says so instead of standing empty."""
    out: list[str] = []
    heads = [(i, len(m.group(1))) for i, m in ((i, HEADING.match(line)) for i, line in enumerate(lines))
             if m and len(m.group(1)) in (2, 3)]
    empty: set[int] = set()
    for n, (i, level) in enumerate(heads):
        end = next((j for j, lv in heads[n + 1:] if lv <= level), len(lines))
        if not any(line.strip() for line in lines[i + 1:end]):
            empty.add(i)
    for i, line in enumerate(lines):
        out.append(line)
        if i in empty:
            out += ["", INSUFFICIENT, ""]
    return out


def _single_blank_lines(lines: list[str]) -> list[str]:
    """No runs of blank lines where sentences were cut (code blocks keep theirs)."""
    out: list[str] = []
    in_fence = False
    for line in lines:
        if FENCE.match(line):
            in_fence = not in_fence
        if not in_fence and not line.strip() and out and not out[-1].strip():
            continue
        out.append(line)
    return out


def _only_gathered(body: str, numbering: Mapping[int, str], sources: Mapping[str, Source]) -> str:
    """Drop citations that do not resolve to a gathered source and links to pages never gathered."""
    valid = {n for n, sid in numbering.items() if sid in sources}

    def renumber(match: re.Match[str]) -> str:
        kept = [n for n in dict.fromkeys(expand_citation(match.group("items"))) if n in valid]
        return match.group("space") + "".join(f"[{n}]" for n in kept) if kept else ""

    body = map_prose(body, lambda chunk: CITATION_RE.sub(renumber, chunk))
    return strip_foreign_links(body, (s.url for s in sources.values()))

