"""Scanned documents read by OCR: pages the test draws itself (Pillow), saved as PNG, JPEG, a
two-page TIFF and an image-only PDF (no text layer), read by the real Tesseract in the sandbox;
the text, its page and its OCR mark reach the library, the source list and a report's
citations. A document-only run over the real openai client and the stand-in model."""

from __future__ import annotations

import functools
import io
import re
import textwrap
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from dashboard import documents_view as dv
from research import Credentials, build_config, run_research
from research.documents import Ingested, ingest
from research.documents.choice import with_sources
from research.documents.extract import DocumentRejected, extract
from research.documents.passages import OCR_SECTION, location
from research.export import to_markdown
from research.export.run_document import build_document_for_run
from storage import Store
from storage import documents as docstore
from tests.document_files import HEAT_PUMP_PAGES
from tests.standin import StandinServer

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"  # fonts-dejavu-core (scripts/setup.sh)
QUESTION = "How is heat pump adoption changing in Europe?"


def _words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9.]+", text.lower()))


@functools.cache
def _page(heading: str, text: str) -> Image.Image:
    """A printed page as a scanner sees it: black text on white, no text layer."""
    lines = [heading, "", *textwrap.wrap(text, 58)]
    image = Image.new("L", (1100, 90 + 44 * len(lines)), 255)
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype(FONT, 30)
    for n, line in enumerate(lines):
        draw.text((50, 40 + 44 * n), line, font=font, fill=0)
    return image


def _pages() -> list[Image.Image]:
    return [_page(h, t).copy() for h, t in HEAT_PUMP_PAGES]  # a save marks the image


def _saved(kind: str) -> bytes:
    out = io.BytesIO()
    first, *rest = _pages()
    if kind == "TIFF":
        rest = rest[:1]
    if kind == "PDF":  # 300 dpi: the renderer draws it back at the size it was drawn
        first.save(out, "PDF", resolution=300, save_all=True, append_images=rest)
    elif kind == "TIFF":  # two frames
        first.save(out, "TIFF", save_all=True, append_images=rest)
    else:
        first.save(out, kind)
    return out.getvalue()


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, Ingested]:
    """A store holding one scanned PDF, read once for the module (OCR costs a second a page)."""
    store = Store(tmp_path_factory.mktemp("ocr") / "research.sqlite3")
    return store, ingest(store, "heat-survey.pdf", _saved("PDF"), collection="Scans")


def test_an_image_only_pdf_is_read_by_ocr_page_by_page(
    library: tuple[Store, Ingested],
) -> None:
    import pypdf

    data = _saved("PDF")
    assert all(not (p.extract_text() or "").strip() for p in pypdf.PdfReader(io.BytesIO(data)).pages)
    store, result = library
    assert result.ok and "3 scanned pages read by OCR" in result.message
    [doc] = docstore.list_documents(store)
    assert doc.status == "ready" and doc.pages == 3
    passages = docstore.get_passages(store, doc.id)
    assert {(p.page, p.section) for p in passages} == {(n, OCR_SECTION) for n in (1, 2, 3)}
    text = {n: _words(" ".join(p.text for p in passages if p.page == n)) for n in (1, 2, 3)}
    assert "seasonal coefficient of performance of 2.9" in text[1] and "norway" in text[1]
    assert "three million units in 2022" in text[2] and "norway" not in text[2]
    [hit] = docstore.search_passages(store, "Poland Netherlands", limit=3)
    assert hit.page == 2 and hit.section == OCR_SECTION
    assert location(hit.page, hit.section) == "p. 2, read by OCR"


def test_an_image_file_is_read_by_ocr() -> None:
    found = extract("scan.png", _saved("PNG"))
    assert found.kind == "image" and found.pages == 1
    [section] = found.sections
    assert section.ocr and section.page == 1
    assert "heat pumps in cold climates" in _words(section.text)
    assert "vapour injection compressors" in _words(section.text)


def test_the_documents_page_takes_a_photo_of_a_page(tmp_path: Path) -> None:
    assert {"png", "jpg", "jpeg", "tif", "tiff"} <= set(dv.UPLOAD_TYPES)
    store = Store(tmp_path / "research.sqlite3")
    [added] = dv.add_uploads(store, [("notes photo.jpg", _saved("JPEG"))], None)
    assert added.ok and "1 scanned page read by OCR" in added.message
    frame = dv.documents_frame(docstore.list_documents(store))
    assert frame.loc[0, "Type"] == "Image" and frame.loc[0, "Status"] == "Searchable"
    [hit] = docstore.search_passages(store, "vapour injection compressors", limit=1)
    assert location(hit.page, hit.section) == "p. 1, read by OCR"


def test_each_frame_of_a_tiff_is_a_page() -> None:
    found = extract("scan.tiff", _saved("TIFF"))
    assert found.pages == 2 and [s.page for s in found.sections] == [1, 2]
    assert "adoption in europe" in _words(found.sections[1].text)


def test_an_image_that_is_not_one_or_is_a_bomb_is_refused_in_plain_words() -> None:
    with pytest.raises(DocumentRejected, match="image could not be read"):
        extract("scan.png", b"\x89PNG\r\n\x1a\n" + b"not really" * 50)
    bomb = io.BytesIO()
    Image.new("1", (9000, 7000), 1).save(bomb, "PNG")  # 63 million pixels in a few KB
    assert len(bomb.getvalue()) < 100_000
    with pytest.raises(DocumentRejected, match="far too large to read"):
        extract("scan.png", bomb.getvalue())


def test_a_document_only_run_cites_the_scanned_page(
    standin: StandinServer, standin_env: dict[str, str], library: tuple[Store, Ingested],
) -> None:
    env = {k: v for k, v in standin_env.items() if k != "TAVILY_API_KEY"}
    credentials = Credentials.from_env(env)
    store = library[0]
    config = with_sources(build_config(env=env, preset="quick"), "documents",
                          collection="Scans")
    run_id = run_research(QUESTION, store=store, config=config, credentials=credentials)
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", run and run.error
    assert standin.count("pages") == 0
    sources = store.get_sources(run_id)
    for source in sources:  # each cites the page its text was read from
        cited = re.fullmatch(r"heat-survey, p\. ([123]), read by OCR", source.title)
        assert cited, source.title
        heading = HEAT_PUMP_PAGES[int(cited.group(1)) - 1][0]
        assert _words(heading) in _words(source.text)
    markdown = to_markdown(build_document_for_run(store, run_id))
    assert re.search(r"heat-survey, p\. [123], read by OCR", markdown.split("## Sources", 1)[1])
    assert re.search(r"\[\[\d+\]\]\(#source-\d+\)", markdown)
    checked = store.get_verifications(run_id)
    assert checked and any(set(v.source_ids) & {s.id for s in sources} for v in checked)
