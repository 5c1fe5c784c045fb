"""Every citation form of the real-outputs style table (issue 32, point 3) becomes a numbered
citation of a gathered source, and the model's own reference list is read, then removed.

The examples are our own, one or more per style key of /work/shared/real-outputs/styles.py,
through the real normaliser and the report builder. The last test runs every real text of that
folder (skipped when absent) with its URLs moved onto fake gathered sources.

Run as a script (`python tests/test_citation_forms.py`) it prints the corpus figures.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from research.core.records import Source
from research.export.document import build_document
from research.report.citations import normalise
from research.untrusted.urls import canonical_url

SOURCES = {
    "heat": Source("heat", "https://www.energy.example/reports/heat-pumps",
                   title="The Future of Heat Pumps in Europe", author="Ingrid Halvorsen",
                   published="2023-05-02"),
    "cold": Source("cold", "https://example.org/study?id=3", title="Cold climate field study",
                   author="Lindqvist, Anna", published="2022-11-20"),
    "stats": Source("stats", "http://stats.example.com/data/", title="Heat pump sales statistics 2024"),
    "grid": Source("grid", "https://grid.example.net/load", title="Winter grid load and heat pumps | Grid News"),
}
NUMBERING = {1: "heat", 2: "cold", 3: "stats", 4: "grid"}
GHOST = "https://ghost.example/never-gathered"
REAL = Path(__file__).resolve().parents[1] / ".." / "shared" / "real-outputs"


def cite(text: str) -> tuple[str, int]:
    """The text as the report will carry it, and how many citations or links were removed."""
    result = normalise(text, NUMBERING, SOURCES)
    assert "\x00" not in result.text and "\x01" not in result.text
    return result.text.strip(), result.removed


def resolved(text: str) -> list[str]:
    """The gathered sources the delivered report lists, in order: what the citations resolve to."""
    doc = build_document(run_id="r", question="q", created_at="", parameters_line="",
                         draft=normalise(text, NUMBERING, SOURCES).text, numbering=NUMBERING,
                         sources=list(SOURCES.values()))
    return [s.source_id for s in doc.sources]


# --- in-text forms, one example (or more) per style key ---------------------------------------

FORMS = [
    ("br_n", "Heat pumps sold well [3].", "Heat pumps sold well [3]."),
    ("br_adj", "Heat pumps sold well.[1][3] Prices fell.", "Heat pumps sold well [1][3]. Prices fell."),
    ("br_list", "Heat pumps sold well [1, 3].", "Heat pumps sold well [1][3]."),
    ("br_range", "Heat pumps sold well [2-4].", "Heat pumps sold well [2][3][4]."),
    ("br_esc", r"Heat pumps sold well \[2\]\[4\].", "Heat pumps sold well [2][4]."),
    ("fullwidth", "Heat pumps sold well【4†source】.", "Heat pumps sold well [4]."),
    ("fullwidth", "Heat pumps sold well 【4†L10-L20】 and [2†source].", "Heat pumps sold well [4] and [2]."),
    ("fn_ref", "Heat pumps sold well[^2^][^4^].", "Heat pumps sold well [2][4]."),
    ("num_link", "Sold well ([1](https://example.org/study?id=3), [2](https://grid.example.net/load)).",
     "Sold well [2][4]."),
    ("num_link", "Heat pumps sold well [[2]](https://example.org/study?id=3).", "Heat pumps sold well [2]."),
    ("num_link", "Heat pumps sold well[7](https://grid.example.net/load).", "Heat pumps sold well [4]."),
    ("num_link", "Heat pumps sold well [(9)](https://stats.example.com/data).", "Heat pumps sold well [3]."),
    ("paren_domain_link", "Heat pumps sold well ([stats.example.com](https://stats.example.com/data?utm_source=openai)).",
     "Heat pumps sold well [3]."),
    ("utm_openai", "Sales grew ([grid.example.net](https://grid.example.net/load?utm_source=chatgpt.com)).",
     "Sales grew [4]."),
    ("hidden_fn_span", 'Sales grew[^2].<span style="display:none">[^1][^2][^3]</span>\n\n'
     "[^2]: https://example.org/study?id=3\n", "Sales grew [2]."),
    ("paren_title_link", "Heat pumps sold well ([Nordic Field Notes, 2022](https://example.org/study?id=3)).",
     "Heat pumps sold well [2]."),
    ("paren_title_link", r"Heat pumps sold well ([Field study \[PDF\]](https://example.org/study?id=3)).",
     "Heat pumps sold well [2]."),
    ("bracket_md_link", r"Heat pumps sold well \[[Halvorsen' 2023-05-02](https://energy.example/reports/heat-pumps)\].",
     "Heat pumps sold well [1]."),
    ("bracket_md_link", r"Sold well \[[Lindqvist' 2022](https://example.org/study?id=3)\]\[[Grid' 2024](https://grid.example.net/load)\].",
     "Sold well [2][4]."),
    ("md_link", "The [Nordic grid operator](https://grid.example.net/load) reported peaks.",
     "The Nordic grid operator [4] reported peaks."),
    ("according_title", "According to [the field study](https://example.org/study?id=3), sales grew.",
     "According to the field study [2], sales grew."),
    ("according_title", "According to the Cold Climate Field Study, sales grew.",
     "According to the Cold Climate Field Study, sales grew [2]."),
    ("url_fragment", "Sales grew ([field study](https://example.org/study?id=3#:~:text=sales)).", "Sales grew [2]."),
    ("bare_url", "Sales grew (https://stats.example.com/data).", "Sales grew [3]."),
    ("bare_url", "Sales grew, see https://stats.example.com/data.", "Sales grew, see [3]."),
    ("autolink", "Sales grew <https://grid.example.net/load>.", "Sales grew [4]."),
    ("sup_html", "Sales grew.<sup>4</sup> Prices fell.", "Sales grew [4]. Prices fell."),
    ("sup_unicode", "Sales grew.³ Prices fell.", "Sales grew [3]. Prices fell."),
    ("trailing_num", "Sales grew in Norway.2 Prices fell.", "Sales grew in Norway [2]. Prices fell."),
    ("trailing_num", "Sales were “strong”.3,4 Prices fell.", "Sales were “strong” [3][4]. Prices fell."),
    ("cite_tag", "[cite_start]Sales grew [cite: 3].", "Sales grew [3]."),
    ("paren_source_n", "Sales grew (Source 4). Prices fell (Ref. 2).", "Sales grew [4]. Prices fell [2]."),
    ("source_label", "Sales grew (Source: Heat pump sales statistics 2024).", "Sales grew [3]."),
    ("source_label", "Sales grew (来源：Cold climate field study).", "Sales grew [2]."),
    ("source_label", "*Source: [Grid News](https://grid.example.net/load)*", "*Source: Grid News [4]*"),
    ("author_year", "Sales grew (Lindqvist, 2022). Prices fell (Halvorsen et al., 2023).",
     "Sales grew [2]. Prices fell [1]."),
    ("author_year", "Halvorsen (2023) found that sales grew.", "Halvorsen (2023) [1] found that sales grew."),
]


@pytest.mark.parametrize(("style", "written", "expected"), FORMS)
def test_each_in_text_form_becomes_a_citation_of_the_gathered_source(style: str, written: str,
                                                                      expected: str) -> None:
    text, removed = cite(written)
    assert text == expected, style
    assert removed == 0
    meant = dict.fromkeys(NUMBERING[int(n)] for n in re.findall(r"\[(\d+)\]", expected))
    assert resolved(written) == list(meant)  # the report's Sources: the gathered pages meant


def test_a_link_matches_its_page_however_the_address_is_spelled() -> None:
    sources = {"paper": Source("paper", "http://arxiv.org/abs/2108.02755v1", title="A paper"),
               "doi": Source("doi", "https://doi.org/10.1000/XYZ.12", title="A journal article"),
               "wiki": Source("wiki", "https://en.wikipedia.org/wiki/Caf%C3%A9", title="Café")}
    numbering = {1: "paper", 2: "doi", 3: "wiki"}
    written = ("Policy learned [a](https://arxiv.org/pdf/2108.02755v2.pdf), "
               "[b](https://dx.doi.org/10.1000/xyz.12) and [c](https://en.wikipedia.org/wiki/Café). "
               "Not [d](https://arxiv.org/abs/2108.02756).")
    result = normalise(written, numbering, sources)
    assert result.text == "Policy learned a [1], b [2] and c [3]. Not d."
    assert result.removed == 1


def test_footnotes_with_a_turn_prefix_map_through_their_definitions() -> None:
    text, removed = cite("Sales grew[^1_4]. Prices fell[^1_9].\n\n"
                         "[^1_4]: https://grid.example.net/load\n"
                         "[^1_9]: Cold climate field study\n")
    assert text == "Sales grew [4]. Prices fell [2]."
    assert removed == 0


def test_an_author_year_citation_with_no_entry_and_no_such_source_stays_words() -> None:
    text, removed = cite("Sales grew (Moreau, 2019).")
    assert text == "Sales grew (Moreau, 2019)." and removed == 0


# --- the model's own reference list: matched, remapped, removed --------------------------------

OWN_LISTS = {
    "markdown heading": "## References\n[1] https://example.org/study?id=3\n[2] https://grid.example.net/load\n",
    "numbered heading": "## 7. References\n1. Cold climate field study\n2. Winter grid load and heat pumps\n",
    "roman label": "**IX. References/Bibliography**\n\n\\[1\\] https://example.org/study?id=3\n"
                   "\\[2\\] https://grid.example.net/load\n",
    "chinese label": "参考文献：\n[1] https://example.org/study?id=3 - 田野研究\n[2] https://grid.example.net/load - 电网\n",
    "works cited": "#### Works cited\n1. Cold climate field study, accessed March 3, 2025, "
                   "<https://example.org/study?id=3>\n2. Grid, accessed March 3, 2025, <https://grid.example.net/load>\n",
    "german heading": "## Quellen\n[1] https://example.org/study?id=3\n[2] https://grid.example.net/load\n",
    "spanish label": "**Referencias:**\n1. https://example.org/study?id=3\n2. https://grid.example.net/load\n",
    "tag": "<references>\n[1] https://example.org/study?id=3\n[2] https://grid.example.net/load\n</references>\n",
    "no heading": "[1] https://example.org/study?id=3 - Cold climate field study\n"
                  "[2] https://grid.example.net/load - Grid load\n",
    "no heading, footer": "[1] https://example.org/study?id=3\n[2] https://grid.example.net/load\n\n---\n",
    "titles only": "Sources:\n[1] Cold climate field study — example.org\n"
                   "[2] Winter grid load and heat pumps — Grid News\n",
    "collected information": "## References\n[1] (reference 2 from collected information)\n"
                             "[2] (reference 4 from collected information)\n",
    "two-line entries": "## Sources\n1. Cold climate field study\n   https://example.org/study?id=3\n"
                        "2. Grid load\n   https://grid.example.net/load\n",
    "reference definitions": "[1]: https://example.org/study?id=3\n[2]: https://grid.example.net/load\n",
}


@pytest.mark.parametrize("shape", OWN_LISTS)
def test_the_models_own_list_renumbers_its_markers_and_leaves_the_body(shape: str) -> None:
    text, removed = cite("Sales grew [1]. Prices fell [2].\n\n" + OWN_LISTS[shape])
    assert text == "Sales grew [2]. Prices fell [4].", shape
    assert removed == 0
    assert resolved("Sales grew [1]. Prices fell [2].\n\n" + OWN_LISTS[shape]) == ["cold", "grid"]


def test_links_in_prose_are_the_citations_and_the_key_citations_list_goes() -> None:
    written = ("Sales grew, says the [field study](https://example.org/study?id=3), and the grid "
               "strained ([Grid load](https://grid.example.net/load)).\n\n### Key Citations\n"
               "- [Field study](https://example.org/study?id=3)\n- [Grid load](https://grid.example.net/load)\n"
               "- [Heat pump outlook](https://energy.example/reports/heat-pumps)\n")
    assert cite(written) == ("Sales grew, says the field study [2], and the grid strained [4].", 0)
    assert resolved(written) == ["cold", "grid"]


def test_a_closing_list_of_bracketed_links_with_titles_goes() -> None:
    written = ("Sales grew \\[[Lindqvist' 2022-11-20](https://example.org/study?id=3)\\].\n\n"
               "\\[[Lindqvist' 2022-11-20](https://example.org/study?id=3)\\] Cold climate field study\n"
               "\\[[Grid' 2024-01-02](https://grid.example.net/load)\\] Winter grid load\n")
    assert cite(written) == ("Sales grew [2].", 0)


def test_a_list_with_windows_line_ends_is_read_and_removed_too() -> None:
    text, _ = cite("Sales grew [1].\r\n\r\n## References\r\n[1] https://grid.example.net/load\r\n")
    assert text == "Sales grew [4]."


def test_author_year_citations_find_their_entry_in_the_models_list() -> None:
    text, removed = cite("Sales grew (Moreau & Petit, 2024). Prices fell (Berg et al., 2021; Moreau & Petit, 2024).\n\n"
                         "## References\n"
                         "- Moreau, P., & Petit, L. (2024). Winter grid load and heat pumps. Grid News.\n"
                         "- Berg, K. (2021). *Notes on a cold winter*. https://example.org/study?id=3\n")
    assert text == "Sales grew [4]. Prices fell [2][4]."
    assert removed == 0


def test_a_list_entry_pointing_at_an_ungathered_page_takes_its_markers_along() -> None:
    text, removed = cite("Sales grew [1]. Prices fell [2].\n\n## Sources\n"
                         f"1. [Invented]({GHOST})\n2. [Grid load](https://grid.example.net/load)\n")
    assert text == "Sales grew. Prices fell [4]."
    assert removed == 1


def test_a_writer_citing_only_in_an_end_list_cites_nothing_in_its_text() -> None:
    """The list is removed like any other: no in-text citation comes from it (the review asks
    for them, research/phases/writing/review.py)."""
    text, _ = cite("Heat pumps sold well in Norway.\n\n### Key Citations\n"
                   "- [Field study](https://example.org/study?id=3)\n- [Stats](https://stats.example.com/data)\n")
    assert text == "Heat pumps sold well in Norway."
    assert resolved("Heat pumps sold well in Norway.\n\n## Sources\n- https://example.org/study?id=3\n"
                    "- https://stats.example.com/data\n") == []


def test_a_closing_numbered_list_of_advice_is_not_taken_for_a_reference_list() -> None:
    written = "Sales grew [2].\n\n## Recommendations\n1. Insulate first.\n2. Size the pump to the house.\n"
    assert cite(written)[0] == written.strip()


def test_a_closing_list_of_advice_giving_urls_or_starting_with_links_stays_prose() -> None:
    written = ("Sales grew.\n\n## Recommendations\n"
               "1. Insulate first, as the field study shows https://example.org/study?id=3\n"
               "2. Size the pump to the house https://grid.example.net/load\n"
               "- [Apply for the grant](https://energy.example/reports/heat-pumps) before March, when it closes.\n")
    assert cite(written)[0] == (
        "Sales grew.\n\n## Recommendations\n1. Insulate first, as the field study shows [2]\n"
        "2. Size the pump to the house [4]\n- Apply for the grant [1] before March, when it closes.")


def test_prose_after_a_labelled_list_of_sources_stays() -> None:
    text, _ = cite("Sales grew [1].\n\nSources:\n[1] https://example.org/study?id=3\n\n"
                   "Prices are expected to fall next year [1].\n")
    assert text == "Sales grew [2].\n\nPrices are expected to fall next year [2]."


def test_a_heading_ending_in_sources_before_a_numbered_line_is_no_citation() -> None:
    written = "### Industry Sources\n\n3. **Grid operators** - load data\n"
    assert cite(written)[0] == written.strip()


def test_a_lone_closing_think_tag_and_answer_tags_are_not_part_of_the_report() -> None:
    text, _ = cite("draft with [9] and https://ghost.example/x\n</think>\n<answer>\nSales grew [2].\n</answer>\n")
    assert text == "Sales grew [2]."


# --- nothing ungathered survives, in any form ------------------------------------------------

@pytest.mark.parametrize("written", [
    f"Sales grew ([Invented report]({GHOST})).",
    f"Sales grew [[5]]({GHOST}).",
    f"Sales grew \\[[Nobody' 2020]({GHOST})\\].",
    f"The [invented agency]({GHOST}) says so.",
    f"Sales grew ({GHOST}).",
    f"Sales grew <{GHOST}>.",
    f"Sales grew[^1].\n\n[^1]: {GHOST}\n",
    f"Sales grew [1].\n\n## References\n[1] {GHOST}\n",
    "Sales grew [12].",
    "Sales grew \ue200cite\ue202turn0search3\ue201.",  # chatgpt_token: its own search turns, never ours
])
def test_a_citation_of_a_page_never_gathered_is_removed_and_counted(written: str) -> None:
    text, removed = cite(written)
    assert "ghost.example" not in text and "](" not in text
    assert not re.search(r"\[\d+\]", text)
    assert removed >= 1
    assert text.startswith(("Sales grew", "The invented agency"))
    assert not re.search(r"\s[.,]", text)  # no space left where the citation was


# Style keys covered by the tests above other than by name in the first one's table.
COVERED_ELSEWHERE = {
    "fn_ref": "footnotes with a turn prefix", "fn_def": "footnotes with a turn prefix",
    "md_link_list": "key citations list", "bare_url_list": "own lists", "ref_heading": "own lists",
    "reflist_bracket": "own lists", "reflist_numbered": "own lists", "accessed": "works cited",
    "chatgpt_token": "never gathered",
}


@pytest.mark.skipif(not REAL.is_dir(), reason="the real-outputs folder is not on this machine")
def test_every_style_of_the_real_outputs_table_has_an_example_here() -> None:
    keys = {key for key, _, _ in _styles().STYLES} - {"truncated"}
    named = {style for style, _, _ in FORMS}
    assert keys - named - set(COVERED_ELSEWHERE) == set()


# --- every real text ------------------------------------------------------------------------

_URL = re.compile(r"https?://[^\s<>\"'`\]\)]+(?:\([^\s()<>]*\)[^\s<>\"'`\]\)]*)*")
_ENTRY = re.compile(r"^\s*\\?\[(\d{1,3})\\?\][ \t]+(.{12,200}?)\s*$", re.MULTILINE)
_GATHER_EVERY = 4  # every fourth URL a text cites is one this run never gathered
_NUMBERS_ONLY = 12  # a text with nothing to match: the sources a writer was given, by number


@dataclass
class Outcome:
    system: str
    item: str
    cites_in_text: bool
    resolved: int
    leaked: bool
    unknown: list[int]


def _styles() -> ModuleType:
    spec = importlib.util.spec_from_file_location("real_output_styles", REAL / "styles.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _gathered_run(text: str) -> tuple[str, dict[int, str], dict[str, Source]]:
    """The text with each URL moved onto a fake gathered page (every fourth onto one never
    gathered); a text citing no URL gets pages with the titles its own list gives, or plain
    numbered pages, as a writer citing what it was given."""
    pages: dict[str, int] = {}

    def move(m: re.Match[str]) -> str:
        url, tail = m.group(0), ""
        while url and url[-1] in ".,;:!?*_~'\"":
            url, tail = url[:-1], url[-1] + tail
        i = pages.setdefault(canonical_url(url), len(pages) + 1)
        return (f"https://gathered{i}.example.net/page" if i % _GATHER_EVERY
                else f"https://ungathered{i}.invalid/page") + tail

    moved = _URL.sub(move, text)
    sources = {f"s{i}": Source(f"s{i}", f"https://gathered{i}.example.net/page", title=f"Gathered page {i}")
               for i in range(1, len(pages) + 1) if i % _GATHER_EVERY}
    if not pages:
        titles = dict(_ENTRY.findall(text))
        sources = {f"s{i}": Source(f"s{i}", f"https://gathered{i}.example.net/page",
                                   title=titles.get(str(i), f"Gathered page {i}"))
                   for i in range(1, max(_NUMBERS_ONLY, *map(int, titles or {"0": ""})) + 1)}
    return moved, {int(sid[1:]): sid for sid in sources}, sources


def corpus_outcomes() -> list[Outcome]:
    styles = _styles()
    out = []
    for path in sorted(REAL.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            text = "\n".join(t for t in record["text"].splitlines() if not t.startswith("<<<TRUNCATED"))
            moved, numbering, sources = _gathered_run(text)
            draft = normalise(moved, numbering, sources).text
            doc = build_document(run_id="r", question="q", created_at="", parameters_line="",
                                 draft=draft, numbering=numbering, sources=list(sources.values()))
            cited = {int(n) for n in re.findall(r"\[(\d+)\]", draft)}
            out.append(Outcome(record["system"], str(record["item_id"]),
                               bool(styles.classify(record["text"]) & styles.INTEXT), len(doc.sources),
                               "ungathered" in doc.body,
                               sorted(cited - set(numbering))))
    return out


def figures(outcomes: list[Outcome]) -> str:
    return (f"{len(outcomes)} texts: {sum(o.resolved >= 1 for o in outcomes)} end with >=1 resolved "
            f"citation, {sum(o.resolved >= 3 for o in outcomes)} with >=3")


@pytest.mark.skipif(not REAL.is_dir(), reason="the real-outputs folder is not on this machine")
def test_every_real_text_that_cites_in_its_text_ends_with_resolved_citations() -> None:
    outcomes = corpus_outcomes()
    print(figures(outcomes))
    assert len(outcomes) >= 200
    assert [o for o in outcomes if o.cites_in_text and not o.resolved] == []
    assert [o for o in outcomes if o.leaked or o.unknown] == []


if __name__ == "__main__":
    if not REAL.is_dir():
        sys.exit("the real-outputs folder is not on this machine")
    print(figures(corpus_outcomes()))
