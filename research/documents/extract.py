"""Text out of an uploaded file, with where each piece sits (PDF page or heading).

Every file is untrusted: a PDF or DOCX is read in a child process under a memory cap and a
time limit (`research.untrusted.sandbox`), a DOCX's zip is measured before it is opened (a zip bomb is
refused unread), HTML goes through trafilatura (never rendered, its links never followed), and every
text loses invisible formatting controls. A scanned page (an image file, or a PDF page with no
text layer) is read by OCR in the same kind of child (`research.documents.ocr`), a batch of
pages per child, each under the same limits; its sections are marked `ocr`. A file that cannot be used raises `DocumentRejected`
with plain words; the caller refuses that one file and goes on with the rest.
"""

from __future__ import annotations

import io
import re
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import PurePath

from research.untrusted.sandbox import ChildAnswer, ChildFailed, ChildLimits, run_child
from research.untrusted.textclean import strip_hidden_controls

MAX_FILE_BYTES = 50 * 1024 * 1024       # an upload larger than this is refused
MAX_PDF_PAGES = 2_000                    # pages read from one PDF
MAX_OCR_PAGES = 200                      # scanned pages (or image frames) read by OCR per file
OCR_BATCH = 10                           # scanned pages per child (about 2 s of CPU each)
CHILD_LIMITS = ChildLimits(timeout_s=60.0, memory_mb=512)  # one PDF or DOCX read
DOCX_MAX_UNZIPPED = 200 * 1024 * 1024   # total uncompressed size of a DOCX's parts
DOCX_MAX_RATIO = 100                     # uncompressed / compressed, over the whole zip
DOCX_MAX_MEMBERS = 2_000

KINDS = {".pdf": "pdf", ".docx": "docx", ".md": "markdown", ".markdown": "markdown",
         ".txt": "text", ".text": "text", ".html": "html", ".htm": "html",
         ".png": "image", ".jpg": "image", ".jpeg": "image", ".tif": "image", ".tiff": "image"}
_MD_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$")


class DocumentRejected(Exception):
    """This file cannot be used; `str(exc)` says why, in plain words."""


@dataclass(frozen=True)
class Section:
    """A run of text with one location: a PDF page, or the heading it sits under."""

    text: str
    page: int | None = None
    heading: str = ""
    ocr: bool = False  # read from a picture of the page, not from a text layer


@dataclass
class Extracted:
    title: str
    kind: str
    pages: int | None
    sections: list[Section] = field(default_factory=list)
    problem: str = ""  # why some scanned pages could not be read, in plain words

    @property
    def has_text(self) -> bool:
        return any(s.text.strip() for s in self.sections)


def kind_of(filename: str) -> str:
    """The file's kind by its extension, or DocumentRejected naming what is accepted."""
    kind = KINDS.get(PurePath(filename).suffix.lower())
    if kind is None:
        raise DocumentRejected("this type of file is not supported; upload PDF, DOCX, Markdown "
                               "(.md), plain text (.txt), HTML or image (PNG, JPEG, TIFF) files")
    return kind


def extract(filename: str, data: bytes) -> Extracted:
    """The file's text in located sections. Raises DocumentRejected for a file we cannot use."""
    kind = kind_of(filename)
    if not data or not data.strip():
        raise DocumentRejected("the file is empty")
    if len(data) > MAX_FILE_BYTES:
        raise DocumentRejected(f"the file is larger than the {MAX_FILE_BYTES // (1024 * 1024)} "
                               "MB limit")
    stem = PurePath(filename).stem.replace("_", " ").strip() or filename
    reader = {"pdf": _pdf, "docx": _docx, "markdown": _markdown, "text": _text,
              "html": _html, "image": _image}[kind]
    found = reader(data, stem)
    cleaned = [Section(_clean(s.text), s.page, _clean(s.heading)[:200], s.ocr)
               for s in found.sections]
    found.sections = [s for s in cleaned if s.text]
    found.title = _clean(found.title)[:300] or stem
    return found


def _clean(text: str) -> str:
    text = strip_hidden_controls(text.replace("\x00", ""))
    return re.sub(r"[ \t]+", " ", text).strip()


def _pdf(data: bytes, stem: str) -> Extracted:
    if not data.lstrip().startswith(b"%PDF"):
        raise DocumentRejected("the file is not a PDF (it does not start like one); it may be "
                               "damaged or misnamed")
    result = _child("research.documents.pdfpages:extract_pages", data, "PDF",
                    str(MAX_PDF_PAGES))
    pages = [str(p) for p in result.get("pages") or []]
    sections = [Section(text, page=n) for n, text in enumerate(pages, start=1) if text.strip()]
    scanned = [n for n, text in enumerate(pages, start=1) if not text.strip()]
    read, problem = _ocr_pdf(data, scanned[:MAX_OCR_PAGES])
    if len(scanned) > MAX_OCR_PAGES and not problem:
        problem = f"only the first {MAX_OCR_PAGES} scanned pages were read by OCR"
    sections += [Section(text, page=n, ocr=True) for n, text in read.items() if text.strip()]
    sections.sort(key=lambda s: s.page or 0)
    return Extracted(str(result.get("title") or stem), "pdf",
                     int(result.get("total_pages") or len(pages)), sections, problem)


def _ocr_pdf(data: bytes, numbers: list[int]) -> tuple[dict[int, str], str]:
    """OCR text of the PDF's scanned pages, a batch per child; and why some are missing."""
    read: dict[int, str] = {}
    for start in range(0, len(numbers), OCR_BATCH):
        batch = numbers[start:start + OCR_BATCH]
        try:
            result = _child("research.documents.ocr:ocr_pdf_pages", data, "scanned PDF",
                            ",".join(map(str, batch)), _ocr_deadline())
        except DocumentRejected as exc:
            return read, str(exc)
        pages = result.get("pages")
        read.update({int(n): str(t) for n, t in (pages.items() if isinstance(pages, dict)
                                                  else ())})
        if not result.get("complete"):
            return read, "reading the scanned pages took too long; the rest were left out"
    return read, ""


def _ocr_deadline() -> str:
    """When an OCR child stops reading: just before the sandbox would stop it."""
    return repr(time.monotonic() + CHILD_LIMITS.timeout_s - 2.0)


def _image(data: bytes, stem: str) -> Extracted:
    result = _child("research.documents.ocr:ocr_image", data, "image", str(MAX_OCR_PAGES),
                    _ocr_deadline())
    pages = [str(p) for p in result.get("pages") or []]
    sections = [Section(text, page=n, ocr=True)
                for n, text in enumerate(pages, start=1) if text.strip()]
    total = int(result.get("total_pages") or len(pages))
    problem = "" if result.get("complete") else \
        "reading the image took too long; some of its pages were left out"
    return Extracted(stem, "image", total, sections, problem)


def check_zip(data: bytes) -> None:
    """Refuse a zip whose parts would inflate past our limits, before anything is unpacked."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError):
        raise DocumentRejected("the Word file could not be read; it may be damaged or not a "
                               ".docx file") from None
    if len(infos) > DOCX_MAX_MEMBERS:
        raise DocumentRejected("the Word file has far too many parts to be a real document")
    unzipped = sum(i.file_size for i in infos)
    packed = max(1, sum(i.compress_size for i in infos))
    if unzipped > DOCX_MAX_UNZIPPED or unzipped / packed > DOCX_MAX_RATIO:
        raise DocumentRejected("the Word file would expand to far more than its size (a "
                               "\u201czip bomb\u201d), so it was not opened")


def _docx(data: bytes, stem: str) -> Extracted:
    check_zip(data)
    result = _child("research.documents.docxtext:extract_docx", data, "Word file")
    sections = [Section(str(text), heading=str(heading))
                for heading, text in result.get("sections") or []]
    return Extracted(str(result.get("title") or stem), "docx", None, sections)


def _child(target: str, data: bytes, what: str, *args: str) -> ChildAnswer:
    """`target` on the file's bytes in the sandboxed child; DocumentRejected in plain words."""
    try:
        result = run_child(target, data, CHILD_LIMITS, args)
    except ChildFailed as exc:
        words = {"timeout": "reading it took too long", "memory": "it needs too much memory",
                 "killed": "it needs too much memory"}.get(exc.reason, "the reader crashed")
        raise DocumentRejected(f"the {what} could not be read: {words}") from None
    if result.get("error"):
        raise DocumentRejected(str(result["error"]))
    return result


def _decode(data: bytes) -> str:
    for encoding in ("utf-8-sig", "utf-16") if data[:2] in (b"\xff\xfe", b"\xfe\xff") else (
            "utf-8-sig",):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1")


def markdown_sections(text: str) -> tuple[str, list[Section]]:
    """Sections under each Markdown heading, and the first heading (a title) if any."""
    sections: list[Section] = []
    title, heading, lines = "", "", list[str]()
    for line in text.splitlines():
        match = _MD_HEADING.match(line)
        if match:
            if any(s.strip() for s in lines):
                sections.append(Section("\n".join(lines), heading=heading))
            heading, lines = match.group(2).strip(), []
            title = title or heading
        else:
            lines.append(line)
    if any(s.strip() for s in lines):
        sections.append(Section("\n".join(lines), heading=heading))
    return title, sections


def _markdown(data: bytes, stem: str) -> Extracted:
    title, sections = markdown_sections(_decode(data))
    return Extracted(title or stem, "markdown", None, sections)


def _text(data: bytes, stem: str) -> Extracted:
    return Extracted(stem, "text", None, [Section(_decode(data))])


def _html(data: bytes, stem: str) -> Extracted:
    import trafilatura

    html = _decode(data)
    body = trafilatura.extract(html, output_format="markdown", include_links=False,
                               include_images=False, include_comments=False,
                               favor_recall=True) or ""
    meta = trafilatura.extract_metadata(html)
    title, sections = markdown_sections(body)
    page_title = (meta.title if meta is not None else None) or title or stem
    return Extracted(page_title, "html", None, sections)
