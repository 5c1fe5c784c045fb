"""Full runs whose writer cites the way real systems do (issue 32, point 3), in the forms the
stand-in's own behaviours do not write: the report cites the gathered sources the writer meant.

The stand-in writer's `[n]` report is re-cited in each form (our own renderings of the styles
in /work/shared/real-outputs/styles.py), its own list of references included; the run goes
through every phase with the in-process fakes. A citation mapped to the wrong source would be
judged unsupported by the stand-in's fact-checkers and removed, so "most claims kept their
source" checks the mapping, not only the form.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from tests import fakes
from tests.runs import Runner
from tests.standin import StandinServer
from tests.standin.brain_behaviours import is_writer_call, listed_sources
from tests.test_model_behaviours import assert_report_is_ours_and_consistent

_GROUP = re.compile(r"[ \t]*((?:\[\d+\])+)")
_NAMES = ("Halvorsen", "Lindqvist", "Moreau", "Okafor", "Tanaka", "Silva", "Novak", "Keller")
Listed = dict[int, tuple[str, str]]


def _author(n: int) -> tuple[str, int]:
    return _NAMES[n % len(_NAMES)], 2000 + n  # one (name, year) per source


def _own(listed: Listed) -> dict[int, int]:
    """The writer's own numbering: ours reversed."""
    return {n: i for i, n in enumerate(sorted(listed, reverse=True), start=1)}


# Each form: (the citation group for our numbers, the list written after the text).
Form = tuple[Callable[[list[int], Listed], str], Callable[[list[int], Listed], str]]
FORMS: dict[str, Form] = {
    "bracketed links (DeepScholar)": (
        lambda ns, ls: " " + "".join(f"\\[[{_author(n)[0]}' {_author(n)[1]}-03-04]({ls[n][1]})\\]" for n in ns),
        lambda used, ls: "\n".join(f"\\[[{_author(n)[0]}' {_author(n)[1]}-03-04]({ls[n][1]})\\] {ls[n][0]}"
                                   for n in used)),
    "title links and Key Citations (Grok)": (
        lambda ns, ls: " (" + ", ".join(f"[{ls[n][0]}]({ls[n][1]})" for n in ns) + ")",
        lambda used, ls: "### Key Citations\n" + "\n".join(f"- [{ls[n][0]}]({ls[n][1]})" for n in used)),
    "numbered links (Onyx)": (
        lambda ns, ls: " " + "".join(f"[[{_own(ls)[n]}]]({ls[n][1]})" for n in ns),
        lambda used, ls: ""),
    "superscripts and works cited (Gemini)": (
        lambda ns, ls: "<sup>" + ", ".join(str(_own(ls)[n]) for n in ns) + "</sup>",
        lambda used, ls: "#### Works cited\n" + "\n".join(
            f"{_own(ls)[n]}. {ls[n][0]}, accessed March 3, 2025, <{ls[n][1]}>"
            for n in sorted(used, key=_own(ls).get))),
    "author-year and references": (
        lambda ns, ls: " (" + "; ".join(f"{_author(n)[0]}, {_author(n)[1]}" for n in ns) + ")",
        lambda used, ls: "## References\n" + "\n".join(
            f"- {_author(n)[0]}, J. ({_author(n)[1]}). {ls[n][0]}. {ls[n][1]}" for n in used)),
    "own numbers and a list with no heading (Claude)": (
        lambda ns, ls: " " + "".join(f"[{_own(ls)[n]}]" for n in ns),
        lambda used, ls: "\n".join(f"[{_own(ls)[n]}] {ls[n][1]} - {ls[n][0]}"
                                   for n in sorted(used, key=_own(ls).get))),
    "collected information (STORM)": (
        lambda ns, ls: " " + "".join(f"[{_own(ls)[n]}]" for n in ns),
        lambda used, ls: "## References\n" + "\n".join(
            f"[{_own(ls)[n]}] (reference {n} from collected information)" for n in used)),
    "glued numbered links and a URL list (Perplexity)": (
        lambda ns, ls: "".join(f"[{_own(ls)[n]}]({ls[n][1]})" for n in ns),
        lambda used, ls: "\n".join(f"{_own(ls)[n]}. [{ls[n][1]}]({ls[n][1]})"
                                   for n in sorted(used, key=_own(ls).get))),
}


def _words(line: str) -> str:
    return " ".join(re.sub(r"[^\w]+", " ", re.sub(r"\[\d+\]", " ", line)).split())


def _writer_citing(form: Form, monkeypatch: pytest.MonkeyPatch) -> dict[str, set[str]]:
    """The writer re-cites in `form`; returns, per line it wrote, the URLs the line meant."""
    answer = fakes.llm_answer
    cite, listing = form
    meant: dict[str, set[str]] = {}

    def restyled(standin: StandinServer, fault: Any, system: str, user: str,
                 schema: dict | None) -> tuple[str, Any, str]:
        text, special, finish = answer(standin, fault, system, user, schema)
        listed = listed_sources(user)
        if not is_writer_call(schema, user) or not listed:
            return text, special, finish
        used: list[int] = []
        for line in text.splitlines():
            numbers = [int(n) for n in re.findall(r"\[(\d+)\]", line) if int(n) in listed]
            if numbers:
                meant.setdefault(_words(line), set()).update(listed[n][1] for n in numbers)

        def group(m: re.Match[str]) -> str:
            numbers = [int(n) for n in re.findall(r"\d+", m.group(1)) if int(n) in listed]
            used.extend(n for n in numbers if n not in used)
            return cite(numbers, listed) if numbers else m.group(0)

        body = _GROUP.sub(group, text)
        return body.rstrip() + "\n\n" + listing(used, listed) + "\n", special, finish

    monkeypatch.setattr(fakes, "llm_answer", restyled)
    return meant


@pytest.mark.parametrize("form", FORMS)
def test_a_run_whose_writer_cites_in_a_real_systems_form_cites_what_it_meant(
        standin: StandinServer, runs: Runner, monkeypatch: pytest.MonkeyPatch, form: str) -> None:
    meant = _writer_citing(FORMS[form], monkeypatch)
    store, run_id = runs(preset="quick", review_cycles=1)
    facts = assert_report_is_ours_and_consistent(store, run_id)
    summary, body = facts["summary"], facts["doc"].body
    assert summary.uncited == 0  # every citation was read
    # ... as the source the writer meant: each line of the first draft cites the URLs its line
    # in the writer's answer cited
    draft = next(d for d in store.get_drafts(run_id) if d.kind == "draft")
    url = {s.id: s.url for s in store.get_sources(run_id, with_text=False)}
    checked = 0
    for line in draft.text.splitlines():
        numbers = [int(n) for n in re.findall(r"\[(\d+)\]", line)]
        if numbers and _words(line) in meant:
            # `meant` gathers every writer answer of the run: a line written twice (a section
            # asked again on a busy machine) may have meant other sources the other time, so
            # each source the line cites must be one the writer meant for it.
            cited = {url[draft.numbering[n]] for n in numbers}
            assert cited and cited <= meant[_words(line)], (line, meant[_words(line)])
            checked += 1
    assert checked >= 5
    assert not re.search(r"Key Citations|Works cited|References|collected information|accessed March"
                         r"|\\\[|<sup>|Halvorsen,|https?://", body)
