"""Ask, part 6: the exports' appendix "Questions and answers" (issue 35, point 5).

The run's kept answers follow the report in Markdown, PDF and Word, cited and numbered like
the report: their citations are the report's own numbers, so they link to the same Sources
entries; a gathered source only an answer cites joins the Sources list under the number the
answer gave it. The person's question is escaped (it renders as plain words); the answers went
through the check, and the exporters treat them as they treat the report's body.
"""

from __future__ import annotations

import dataclasses
import re

from research.export.document import ReportDocument, ReportSource
from research.export.markdown import escape_markdown
from storage import Store
from storage.conversations import Turn, turns

TITLE = "Questions and answers"
FORMATS = ("md", "pdf", "docx")  # the exports the appendix goes into


def with_answers(store: Store, run_id: str, doc: ReportDocument) -> ReportDocument:
    """`doc` with the run's questions and answers after its body (as it is, without any)."""
    asked = turns(store, run_id)
    if not asked:
        return doc
    lines = ["", "", f"## {TITLE}", ""]
    for i, turn in enumerate(asked, 1):
        lines += [f"### {i}. {escape_markdown(turn.question)}", "", turn.answer.strip(), ""]
        line = str((turn.details.get("check") or {}).get("line") or "")
        if line:
            lines += [f"*{escape_markdown(line)}*", ""]
    return dataclasses.replace(doc, body=doc.body.rstrip() + "\n".join(lines) + "\n",
                               sources=_with_their_sources(doc, asked))


def stamp(store: Store, run_id: str) -> str:
    """What changes when the appendix does (for caches of the exports)."""
    return str(len(turns(store, run_id)))


def _with_their_sources(doc: ReportDocument, asked: list[Turn]) -> tuple[ReportSource, ...]:
    known = {s.number for s in doc.sources}
    extra: dict[int, ReportSource] = {}
    for turn in asked:
        for cited in turn.details.get("sources") or []:
            number = int(cited.get("number") or 0) if isinstance(cited, dict) else 0
            if number and number not in known and number not in extra:
                url = str(cited.get("url") or "")
                extra[number] = ReportSource(
                    number=number, source_id=str(cited.get("source_id") or ""),
                    title=str(cited.get("title") or url), url=url, domain=_domain(url),
                    published=None, subtopic=None)
    return doc.sources + tuple(extra[n] for n in sorted(extra))


def _domain(url: str) -> str:
    match = re.match(r"https?://(?:www\.)?([^/:?#]+)", url)
    return match.group(1) if match else ""
