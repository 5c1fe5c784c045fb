"""Citation normalisation (research/report/citations.py): every common style becomes [n].

The examples are our own, written in the styles real models use (see the style table in
/work/shared/real-outputs/README.md); the last test runs over those real texts when present.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from research.core.records import Source
from research.export.document import CITATION_RE, map_prose
from research.report.citations import normalise

SOURCES = {
    "a": Source("a", "https://www.energy.example/reports/heat-pumps", title="The Future of Heat Pumps in Europe"),
    "b": Source("b", "https://example.org/study?id=3", title="Cold climate field study"),
    "c": Source("c", "http://stats.example.com/data/", title="Heat pump sales statistics 2024"),
}
NUMBERING = {1: "a", 2: "b", 3: "c"}


def _norm(text: str) -> tuple[str, int, int]:
    result = normalise(text, NUMBERING, SOURCES)
    return result.text, result.converted, result.removed


@pytest.mark.parametrize(("written", "expected"), [
    # the [n] family: glued after the full stop, adjacent, lists and ranges
    ("Sales grew 40%.[1][3] Then fell.", "Sales grew 40% [1][3]. Then fell."),
    ("Sales grew 40% [1, 3]. Prices [2-3].", "Sales grew 40% [1][3]. Prices [2][3]."),
    ("Sales grew 40%[1]; prices fell[2].", "Sales grew 40% [1]; prices fell [2]."),
    (r"Escaped \[1\]\[2\] markers.", "Escaped [1][2] markers."),
    # markdown links to gathered pages (OpenAI web search, Grok, GREP, Onyx, Perplexity UI)
    ("Sales grew ([energy.example](https://energy.example/reports/heat-pumps?utm_source=openai)).",
     "Sales grew [1]."),
    ("Sales grew [[2]](https://example.org/study?id=3).", "Sales grew [2]."),
    ("Sales grew [(3)](https://stats.example.com/data).", "Sales grew [3]."),
    ("According to [the field study](https://example.org/study?id=3#:~:text=grew), sales grew.",
     "According to the field study [2], sales grew."),
    ("Sales grew ([Field study](https://example.org/study?id=3); [Stats](https://stats.example.com/data)).",
     "Sales grew [2][3]."),
    (r"Sales grew \[[Smith' 2024](https://example.org/study?id=3)\].", "Sales grew [2]."),
    # bare URLs and autolinks
    ("Sales grew (https://stats.example.com/data).", "Sales grew [3]."),
    ("Sales grew, see <https://example.org/study?id=3>.", "Sales grew, see [2]."),
    # labels and other brackets
    ("Sales grew (Source 1). Prices fell [Source 2].", "Sales grew [1]. Prices fell [2]."),
    ("Sales grew (Sources 1, 3).", "Sales grew [1][3]."),
    ("Sales grew 40%【1】 and prices fell【3†source】.", "Sales grew 40% [1] and prices fell [3]."),
    ("Sales grew【2:0†source】.", "Sales grew [2]."),
    ("Sales grew.<sup>2</sup> Then fell.", "Sales grew [2]. Then fell."),
    ("Sales grew^3^.", "Sales grew [3]."),
    ("Sales grew.¹ Then fell.", "Sales grew [1]. Then fell."),
    ("Sales grew [cite: 2].", "Sales grew [2]."),
    ("Sales grew [citation:2][citation:3].", "Sales grew [2][3]."),   # DeepSeek web-search prompts
    ("Sales grew【2:0†source】 and fell.", "Sales grew [2] and fell."),
    ("Sales grew (2).", "Sales grew [2]."),
    ("Sales grew.2 Then fell.", "Sales grew [2]. Then fell."),
    # a citation naming a source by its title
    ("Sales grew [Cold climate field study].", "Sales grew [2]."),
    ("The Cold Climate Field Study shows that sales grew.",
     "The Cold Climate Field Study shows that sales grew [2]."),
])
def test_common_styles_become_house_citations(written: str, expected: str) -> None:
    text, converted, removed = _norm(written)
    assert text == expected
    assert removed == 0


def test_footnotes_map_through_their_definitions_which_are_removed() -> None:
    text, _, removed = _norm("Sales grew [^a] and prices fell[^b].\n\n"
                             "[^a]: https://stats.example.com/data\n"
                             "[^b]: Cold climate field study, https://example.org/study?id=3\n")
    assert text.strip() == "Sales grew [3] and prices fell [2]."
    assert removed == 0


def test_the_models_own_reference_list_renumbers_its_citations() -> None:
    text, _, removed = _norm("Sales grew [1]. Prices fell [2].\n\n## References\n"
                             "[1] https://example.org/study?id=3\n"
                             "2. [Stats](https://stats.example.com/data) - sales data\n")
    assert text.strip() == "Sales grew [2]. Prices fell [3]."
    assert removed == 0 and "References" not in text


def test_what_points_at_nothing_gathered_is_removed_and_counted_never_a_live_link() -> None:
    text, _, removed = _norm("A study found 40% [9] ([fake study](https://invented.example/x)). "
                             "See https://elsewhere.example/page and [^7].\n\n"
                             "[^7]: https://invented.example/y\n")
    assert removed == 4
    assert "invented.example" not in text and "elsewhere.example" not in text
    assert "[9]" not in text and "](" not in text
    assert text.startswith("A study found 40%")


def test_reference_style_definitions_map_and_go() -> None:
    text, _, removed = _norm("Sales grew [1] and fell [2].\n\n[1]: https://example.org/study?id=3\n"
                             "[2]: https://invented.example/z\n")
    assert text.strip() == "Sales grew [2] and fell." and removed == 1


def test_the_word_source_with_a_year_or_in_lower_case_is_not_a_citation() -> None:
    text, _, removed = _norm("The open source 3D printer and Source 2020 data [1].")
    assert text == "The open source 3D printer and Source 2020 data [1]." and removed == 0


def test_chatgpt_raw_citation_tokens_are_removed_and_counted() -> None:
    text, _, removed = _norm("Sales grew \ue200cite\ue202turn0search3\ue201 last year [1].")
    assert text == "Sales grew last year [1]." and removed == 1


def test_prose_link_to_a_page_never_gathered_keeps_its_words_as_plain_text() -> None:
    text, _, removed = _norm("The [national agency](https://agency.example/page) counts sales [1].")
    assert text == "The national agency counts sales [1]." and removed == 1


def test_numbers_that_cannot_be_citations_are_kept_as_text() -> None:
    text, _, removed = _norm("The 2030 target [2030] stands [1]. Steps: (1) plan, (2) build.")
    assert text == "The 2030 target (2030) stands [1]. Steps: (1) plan, (2) build."
    assert removed == 0
    text, _, _ = _norm("Version 3.12 shipped. Growth was 4.5 percent.")
    assert text == "Version 3.12 shipped. Growth was 4.5 percent."


def test_think_blocks_and_code_are_left_alone_or_dropped() -> None:
    text, _, _ = _norm("<think>maybe cite [9]</think>Sales grew [1].\n\n```\nx = [9]\n```\n")
    assert text.startswith("Sales grew [1].") and "x = [9]" in text and "think" not in text


def test_tables_keep_their_shape() -> None:
    text, _, _ = _norm("| Country | Sales | Source |\n| --- | --- | --- |\n"
                       "| Norway | 40% | [Stats](https://stats.example.com/data) |\n")
    assert "| Norway | 40% | [3] |" in text


def test_a_table_cell_naming_a_source_cites_it() -> None:
    text, _, _ = _norm("| Sales | 40% | Heat pump sales statistics 2024 |\n")
    assert text == "| Sales | 40% | Heat pump sales statistics 2024 [3] |\n"


def test_hosted_style_and_house_style_are_idempotent() -> None:
    once, _, _ = _norm("Sales grew ([energy.example](https://energy.example/reports/heat-pumps)).")
    assert _norm(once)[0] == once


REAL = Path("/work/shared/real-outputs")
_URL = re.compile(r"https?://[^\s<>\"'`\]\)]+")


@pytest.mark.skipif(not REAL.is_dir(), reason="the real-outputs folder is not on this machine")
def test_real_model_outputs_end_up_in_house_form() -> None:
    """Over every real text: with the URLs it cites taken as the gathered sources, no foreign
    marker style is left, no gathered URL stays a link, and texts that cite keep citations."""
    texts = cited = 0
    for path in sorted(REAL.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            text = "\n".join(t for t in record["text"].splitlines() if not t.startswith("<<<TRUNCATED"))
            urls = list(dict.fromkeys(u.rstrip(".,;:") for u in _URL.findall(text)))
            if not urls:
                continue  # nothing it cites could have been gathered
            sources = {f"s{i}": Source(f"s{i}", u) for i, u in enumerate(urls, 1)}
            result = normalise(text, {i: f"s{i}" for i in range(1, len(urls) + 1)}, sources)
            texts += 1
            assert "\x00" not in result.text
            assert not re.search(r"\[\^[\w-]+\]|【\s*\d|<sup>\s*\d|\ue200cite", result.text), record["item_id"]
            prose = map_prose(result.text, lambda chunk: chunk, lambda code: "")
            for match in CITATION_RE.finditer(prose):
                assert re.fullmatch(r"\d+", match.group("items").strip()), match.group(0)
            cited += bool(re.search(r"\[\d+\]", result.text))
    assert texts >= 100
    assert cited / texts >= 0.95
