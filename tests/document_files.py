"""Real document files for the documents tests: PDFs written by WeasyPrint, DOCX files by
python-docx, Markdown, plain text and HTML, plus the bad files a person might upload.

Each file is built once per test process and then reused (`functools.cache`; bytes cannot be
changed by the tests that read them): a WeasyPrint PDF or the 300 MB zip bomb costs about a
CPU-second each, and several test files and every xdist worker ask for the same ones.
"""

from __future__ import annotations

import functools
import io
import zipfile
from html import escape

HEAT_PUMP_PAGES = [
    ("Heat pumps in cold climates",
     "Field trials in Norway measured a seasonal coefficient of performance of 2.9 for air "
     "source heat pumps at outdoor temperatures down to minus 20 degrees Celsius. "
     "Installers reported that modern vapour injection compressors keep heating capacity "
     "above 80 percent of the rated value in such cold weather. ") ,
    ("Adoption in Europe",
     "Heat pump sales in Europe reached about three million units in 2022, a rise of 38 "
     "percent on the year before. Poland and the Netherlands saw the fastest growth of "
     "adoption in homes, driven by subsidies and high gas prices. "),
    ("Costs and payback",
     "An installed air source heat pump for a family house costs between 9,000 and 15,000 "
     "euros. With current subsidies the payback time against a gas boiler is eight to twelve "
     "years, depending on electricity prices. "),
]


Pages = tuple[tuple[str, str], ...]


def pdf_bytes(pages: list[tuple[str, str]] = HEAT_PUMP_PAGES, *, title: str = "Heat Pump "
              "Field Report", repeat: int = 3) -> bytes:
    """A real PDF with one section per page (WeasyPrint), so page numbers are known."""
    return _pdf(tuple((h, t) for h, t in pages), title, repeat)


@functools.cache
def _pdf(pages: Pages, title: str, repeat: int) -> bytes:
    from weasyprint import HTML

    body = "".join(
        f'<section style="page-break-after: always"><h1>{escape(h)}</h1>'
        f"<p>{escape(t * repeat)}</p></section>" for h, t in pages)
    html = f"<html><head><title>{escape(title)}</title></head><body>{body}</body></html>"
    return HTML(string=html).write_pdf()


def docx_bytes(sections: list[tuple[str, str]] = HEAT_PUMP_PAGES, *,
               title: str = "Heat pump market notes") -> bytes:
    """A real Word file with a heading per section (python-docx)."""
    return _docx(tuple((h, t) for h, t in sections), title)


@functools.cache
def _docx(sections: Pages, title: str) -> bytes:
    import docx

    document = docx.Document()
    document.core_properties.title = title
    for heading, text in sections:
        document.add_heading(heading, level=1)
        document.add_paragraph(text * 2)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def markdown_bytes(sections: list[tuple[str, str]] = HEAT_PUMP_PAGES) -> bytes:
    return "\n\n".join(f"## {h}\n\n{t}" for h, t in sections).encode()


@functools.cache
def encrypted_pdf_bytes() -> bytes:
    import pypdf

    writer = pypdf.PdfWriter(clone_from=io.BytesIO(pdf_bytes(repeat=1)))
    writer.encrypt("secret-password")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@functools.cache
def scanned_pdf_bytes() -> bytes:
    """A PDF whose pages carry no text layer (as a scan does): blank pages."""
    import pypdf

    writer = pypdf.PdfWriter()
    writer.add_blank_page(width=595, height=842)
    writer.add_blank_page(width=595, height=842)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@functools.cache
def zip_bomb_docx_bytes() -> bytes:
    """A .docx whose one part inflates from 1.4 MB to 300 MB of zeros (past both the size
    and the ratio limits). Deflated at level 1, not 9: 0.55 CPU-s, not 1.74, and still 220
    times smaller than what it inflates to; made once per test process."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        with archive.open("word/document.xml", "w", force_zip64=True) as part:
            chunk = b"\0" * (1024 * 1024)
            for _ in range(300):
                part.write(chunk)
    return out.getvalue()
