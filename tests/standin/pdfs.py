"""PDFs the stand-in serves, written by hand (correct xref offsets): an ordinary one-page
report, a 500-page one, and a hostile small file whose content stream inflates to megabytes
of text-drawing commands (the decompression bomb of PDF text extraction)."""

from __future__ import annotations

import functools
import zlib

PDF_SENTENCE = "In 2025 the survey counted 4812 respondents across 37 towns."
PDF_TITLE = "Stand-in survey report"


@functools.lru_cache(maxsize=1)
def pdf_bytes() -> bytes:
    """A real one-page PDF with one line of text, written by hand (correct xref offsets)."""
    content = f"BT /F1 12 Tf 72 720 Td ({PDF_SENTENCE}) Tj ET".encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length " + str(len(content)).encode() + b" >>\nstream\n" + content
        + b"\nendstream",
        f"<< /Title ({PDF_TITLE}) /CreationDate (D:20250612093000Z) >>".encode("latin-1"),
    ]
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n".encode()
    out += b"0000000000 65535 f \n"
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += (f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R /Info {len(objects)} 0 R >>\n"
            f"startxref\n{xref}\n%%EOF\n").encode()
    return bytes(out)


@functools.lru_cache(maxsize=2)
def pdf_pages(count: int) -> bytes:
    """A real PDF of `count` pages, each with one line of text."""
    objects: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    first_page = 4
    kids = " ".join(f"{first_page + 2 * i} 0 R" for i in range(count))
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {count} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for i in range(count):
        content = f"BT /F1 12 Tf 72 720 Td (Page {i + 1} of the long report.) Tj ET".encode()
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R"
            b" >> >> /Contents " + str(first_page + 2 * i + 1).encode() + b" 0 R >>")
        objects.append(b"<< /Length " + str(len(content)).encode() + b" >>\nstream\n" + content
                       + b"\nendstream")
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n".encode() + b"0000000000 65535 f \n"
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += (f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\n"
            f"startxref\n{xref}\n%%EOF\n").encode()
    return bytes(out)


INFLATING_MB = 5


@functools.lru_cache(maxsize=1)
def inflating_pdf() -> bytes:
    """About 16 KB on the wire; its one page's content stream inflates to 5 MB of `Tj`
    operators, which keeps a PDF text extractor busy for many seconds and hundreds of MB."""
    line = b"BT /F1 12 Tf 72 720 Td (Figures for every town in the region) Tj ET\n"
    content = line * (INFLATING_MB * 2**20 // len(line))
    packed = zlib.compress(content, 9)
    return _pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length " + str(len(packed)).encode() + b" /Filter /FlateDecode >>\nstream\n"
        + packed + b"\nendstream",
    ])


def _pdf(objects: list[bytes]) -> bytes:
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n".encode() + b"0000000000 65535 f \n"
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += (f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\n"
            f"startxref\n{xref}\n%%EOF\n").encode()
    return bytes(out)
