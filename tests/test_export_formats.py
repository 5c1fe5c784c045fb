"""Word, BibTeX, RIS and the claim evidence table (CSV, XLSX), each read back by its own parser;
the method section ("How this report was made"); the CLI's --format choices end to end."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import bibtexparser
import docx
import pypdf
import pytest
import rispy
from bibtexparser.middlewares import LatexDecodingMiddleware

from research.core.config import build_config
from research.core.records import Source, Verdict
from research.export import build_document
from research.export.bibliography import find_doi, to_bibtex, to_ris
from research.export.docx import bookmark_name, to_docx
from research.export.evidence import HEADERS, evidence_rows, to_csv, to_xlsx
from research.export.formats import FORMATS, export_run, file_stem
from research.export.markdown import to_markdown
from research.export.method import method_lines, reading_minutes, settings_changed
from research.export.pdf import to_pdf
from storage import Store
from tests.cli_helpers import RunCli
from tests.dashboard_fixtures import EVIL_TITLE, dash_env_fixture, finished_run  # noqa: F401

NASTY = "Heat {pumps} & 50% \\relax\nER  - injected"
DRAFT = """## Findings

Heat pumps save energy [1] and **cut** costs, see [the study](https://b.example/paper) [2][3].

| Climate | COP |
|---|---|
| Cold [1] | 2.5 |
| Mild | 4.0 |

- first point
- second point
"""
SOURCES = [
    Source("a", "https://a.example/x?q=1", title=NASTY, published="2023-04-05", provider="web"),
    Source("b", "https://b.example/paper", title="A study", published=None,
           provider="semanticscholar"),
    Source("c", "https://arxiv.org/abs/2101.00001v2", title="An arXiv paper",
           published="2021-01-02", provider="arxiv"),
]


def _doc() -> object:
    return build_document(run_id="r1", question="Do heat pumps work?",
                          created_at="2024-05-01T10:00:00+00:00", parameters_line="preset quick",
                          draft=DRAFT, numbering={1: "a", 2: "b", 3: "c"}, sources=SOURCES,
                          reading_time="Estimated reading time: 1 minute.",
                          method_title="How this report was made",
                          method=["Date: 2024-05-01.", "Research rounds: 1."])


def test_word_has_headings_tables_clickable_links_and_numbered_citations() -> None:
    word = docx.Document(io.BytesIO(to_docx(_doc())))  # type: ignore[arg-type]
    styles = {p.text: p.style.name for p in word.paragraphs}
    assert styles["Findings"] == "Heading 2" and styles["Sources"] == "Heading 1"
    assert styles["How this report was made"] == "Heading 1"
    assert styles["first point"] == "List Bullet"
    assert "Estimated reading time: 1 minute." in styles
    table = word.tables[0]
    assert [[c.text for c in row.cells] for row in table.rows] == [
        ["Climate", "COP"], ["Cold [1]", "2.5"], ["Mild", "4.0"]]
    body = next(p for p in word.paragraphs if p.text.startswith("Heat pumps save"))
    links = [(h.text, h.address, h.fragment) for h in body.hyperlinks]
    assert ("[1]", "", bookmark_name(1)) in links and ("[3]", "", bookmark_name(3)) in links
    assert ("the study", "https://b.example/paper", "") in links
    xml = word.element.xml
    for n in (1, 2, 3):  # every citation jumps to a bookmark that exists
        assert f'w:name="{bookmark_name(n)}"' in xml
    entries = [p for p in word.paragraphs if p.text.startswith("[1] ")]
    assert entries and "\\relax" in entries[0].text
    assert entries[0].hyperlinks[0].address == "https://a.example/x?q=1"


def test_bibtex_and_ris_list_the_cited_sources_and_survive_hostile_titles() -> None:
    doc = _doc()
    library = bibtexparser.parse_string(to_bibtex(doc),  # type: ignore[arg-type]
                                        append_middleware=[LatexDecodingMiddleware()])
    assert not library.failed_blocks
    entries = library.entries
    assert len(entries) == 3
    first = entries[0].fields_dict
    assert first["title"].value == " ".join(NASTY.split())
    assert first["url"].value == "https://a.example/x?q=1" and first["year"].value == "2023"
    assert entries[0].entry_type == "misc" and entries[2].entry_type == "article"
    assert entries[2].fields_dict["doi"].value == "10.48550/arXiv.2101.00001"
    assert entries[1].entry_type == "article"  # a Semantic Scholar result is a paper

    records = rispy.loads(to_ris(doc))  # type: ignore[arg-type]
    assert [r["title"] for r in records] == [" ".join(NASTY.split()), "A study", "An arXiv paper"]
    assert records[0]["type_of_reference"] == "ELEC" and records[2]["type_of_reference"] == "JOUR"
    assert records[2]["doi"] == "10.48550/arXiv.2101.00001"
    assert records[0]["urls"] == ["https://a.example/x?q=1"] and records[0]["year"] == "2023"


@pytest.mark.parametrize(("url", "doi"), [
    ("https://doi.org/10.1038/s41586-020-2649-2", "10.1038/s41586-020-2649-2"),
    ("https://link.example/article/10.1007/978-3-030-12345-6", "10.1007/978-3-030-12345-6"),
    ("https://arxiv.org/pdf/2401.12345", "10.48550/arXiv.2401.12345"),
    ("https://news.example/heat-pumps", None),
])
def test_doi_is_found_in_the_url(url: str, doi: str | None) -> None:
    assert find_doi(url) == doi


def _verified(store: Store) -> str:
    run_id = finished_run(store)
    store.save_verifications(run_id, [
        Verdict("c1", "Solar capacity grew fast in 2024.", ("s0001",), "SUPPORTED",
                status="supported", passage="capacity grew 30%", section="Executive summary"),
        Verdict("c2", "=HYPERLINK(\"http://evil.example\",\"click\")", ("s0002",), "UNSUPPORTED",
                status="removed", passage="+1 bad\x07 bell", section="Key findings"),
    ])
    return run_id


def test_evidence_table_as_csv_and_xlsx_reads_back_and_never_makes_formulas(dash_env: Store) -> None:
    import openpyxl

    run_id = _verified(dash_env)
    table = list(csv.reader(io.StringIO(export_run(dash_env, run_id, "csv").decode("utf-8-sig"))))
    assert table[0] == list(HEADERS)
    assert table[1][:3] == ["Solar capacity grew fast in 2024.", "supported", "capacity grew 30%"]
    assert table[1][3].startswith("[1] ") and table[1][5] == "Executive summary"
    assert table[2][0].startswith("'=HYPERLINK") and table[2][1] == "removed"
    assert table[2][2].startswith("'+1")

    sheet = openpyxl.load_workbook(io.BytesIO(export_run(dash_env, run_id, "xlsx"))).active
    rows = [[c.value for c in row] for row in sheet.iter_rows()]
    assert rows[0] == list(HEADERS) and len(rows) == 3
    assert rows[2][0] == "=HYPERLINK(\"http://evil.example\",\"click\")"
    assert sheet["A3"].data_type == "s" and rows[2][2] == "+1 bad bell"


def test_every_format_exports_a_finished_run(dash_env: Store) -> None:
    run_id = _verified(dash_env)
    exported = {key: export_run(dash_env, run_id, key) for key in FORMATS}
    assert all(exported.values()), [key for key, data in exported.items() if not data]
    assert exported["pdf"].startswith(b"%PDF")  # the one render above (each costs a child)
    rows = evidence_rows(dash_env.get_verifications(run_id), build_document(
        run_id=run_id, question="q", created_at="", parameters_line="", draft="x", numbering={},
        sources=[]), dash_env.get_sources(run_id, with_text=False))
    assert rows[0].source == " ".join(EVIL_TITLE.split())  # not cited in this document: no [n]
    assert rows[0].source_url == "https://example1.org/article-1"
    assert to_csv([]) and to_xlsx([])


def test_method_section_counts_the_run_in_plain_words(dash_env: Store) -> None:
    run_id = _verified(dash_env)
    config = build_config(env={}, preset="quick", SUBTOPIC_COUNT=5, REQUIRE_CLARIFICATION=True)
    lines = method_lines(dash_env, run_id, config, date="2024-07-01", cited=3)
    text = "\n".join(lines)
    assert "Date: 2024-07-01." in text
    assert "Search services used: DuckDuckGo web search." in text
    assert "Sources: 8 pages read, 6 kept, 3 cited" in text
    assert "Claims checked against their sources: 2 (1 supported, 1 removed)." in text
    assert "subtopics: 5 (preset: 3)" in text and "clarifying questions first: yes (preset: no)" in text
    assert "SUBTOPIC_COUNT" not in text and "None" not in text
    assert settings_changed(build_config(env={}, preset="deep")) == []
    assert reading_minutes(0) == 1 and reading_minutes(231) == 2


def test_cli_writes_word_with_a_method_section_and_a_bibliography(
    run_cli: RunCli, standin_env: dict[str, str], tmp_path: Path
) -> None:
    db = tmp_path / "cli.db"
    env = {**standin_env, "DEEP_RESEARCH_DB": str(db)}
    out = tmp_path / "report.docx"
    result = run_cli(["How do heat pumps perform in cold climates?", "--preset", "quick",
                   "--subtopics", "3", "--sources", "5", "--reviews", "0", "--format", "docx",
                   "--out", str(out)], env, tmp_path)
    assert result.returncode == 0, result.stderr
    run_id = result.stdout.strip().splitlines()[-1]
    word = docx.Document(str(out))
    texts = [p.text for p in word.paragraphs]
    assert "How this report was made" in texts
    method = texts[texts.index("How this report was made") + 1:]
    assert any(t.startswith("Research rounds:") for t in method)
    assert any(t.startswith("Estimated reading time:") for t in texts[:8])
    assert any(h.fragment.startswith("source_") for p in word.paragraphs for h in p.hyperlinks)
    assert not list(tmp_path.glob(".*.part"))  # the temporary file was moved into place
    store = Store(db)
    report = store.get_report(run_id)
    assert report is not None and "## How this report was made" in report.markdown
    cited = len(rispy.loads(export_run(store, run_id, "ris").decode()))
    assert cited == report.meta.get("cited_sources")


def test_no_format_carries_terminal_control_sequences(dash_env: Store) -> None:
    """Issue 19.6 for the newer formats: an OSC 52 clipboard write and a hide-text CSI in a
    model's claim reach no export, whichever format is chosen."""
    import openpyxl

    run_id = finished_run(dash_env)
    dash_env.save_verifications(run_id, [
        Verdict("c1", "Grew \x1b]52;c;ZXZpbA==\x07fast\x1b[8m hidden", ("s0001",), "SUPPORTED",
                status="supported", passage="grew \x1b[31mred\x9b", section="Executive summary")])
    for key in ("md", "csv", "bib", "ris"):
        data = export_run(dash_env, run_id, key)
        assert b"\x1b" not in data and "\x9b".encode() not in data, key
    assert "Grew" in export_run(dash_env, run_id, "csv").decode("utf-8-sig")
    sheet = openpyxl.load_workbook(io.BytesIO(export_run(dash_env, run_id, "xlsx"))).active
    cells = [str(c.value or "") for row in sheet.iter_rows() for c in row]
    assert any(c.startswith("Grew") for c in cells)
    assert not any("\x1b" in c or "\x9b" in c for c in cells)
    text = "\n".join(p.text for p in docx.Document(io.BytesIO(export_run(dash_env, run_id, "docx"))).paragraphs)
    assert "\x1b" not in text


def test_files_open_with_the_question_and_date_not_a_run_id_and_a_parameter_dump() -> None:
    """A reader opens the report on its title and date; the run id and the settings are said
    in plain words in "How this report was made" at its end. Word and PDF name the app as
    their author (not "python-docx")."""
    doc = _doc()
    text = to_markdown(doc)  # type: ignore[arg-type]
    head = text.split("---", 1)[0]
    assert "r1" not in head and "preset quick" not in head and "Parameters" not in head
    word = docx.Document(io.BytesIO(to_docx(doc)))  # type: ignore[arg-type]
    paragraphs = [p.text for p in word.paragraphs]
    top = paragraphs[:paragraphs.index("Findings")]
    assert not any("r1" in p or "preset quick" in p for p in top)
    assert word.core_properties.author == "Deep Research Studio"
    assert word.core_properties.last_modified_by == "Deep Research Studio"
    pdf = pypdf.PdfReader(io.BytesIO(to_pdf(doc)))  # type: ignore[arg-type]
    assert pdf.metadata is not None and pdf.metadata.author == "Deep Research Studio"
    cover = pdf.pages[0].extract_text().split("Findings", 1)[0]
    assert "Run: r1" not in cover and "preset quick" not in cover
    assert "preset quick" in text.split("How this report was made", 1)[1]  # said at the end
    # Without a method section (an older report), the settings line stays in the header.
    bare = build_document(run_id="r1", question="q", created_at="", parameters_line="preset quick",
                          draft="x", numbering={}, sources=[])
    assert "preset quick" in to_markdown(bare).split("---", 1)[0]


def test_download_names_tell_reports_apart() -> None:
    assert (file_stem("How is heat-pump adoption changing in Europe?", "2026-11-27T10:00:00Z")
            == "how-is-heat-pump-adoption-changing-in-europe-2026-11-27")
    assert file_stem("Café prices: ¿qué pasó?", "") == "cafe-prices-que-paso"
    assert file_stem("热泵在欧洲的普及情况", "2026-01-02T00:00:00") == "report-2026-01-02"
    long = file_stem("word " * 40, "")
    assert len(long) <= 60 and long.startswith("word-word")
