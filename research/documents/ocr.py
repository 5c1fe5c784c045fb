"""Text of scanned pages by OCR, run in a child process (see `research.untrusted.sandbox`).

An image file (PNG, JPEG, TIFF, one page per frame) or a PDF page with no text layer is a
picture of text: Tesseract reads it (https://tesseract-ocr.github.io/tessdoc/Command-Line-Usage.html,
`tesseract stdin stdout -l eng`). A PDF page is first drawn as an image with pypdfium2
(https://pypdfium2.readthedocs.io/en/stable/python_api.html, `PdfPage.render(scale=...)`).

Everything here runs in the sandbox's child under its memory cap and deadline. Tesseract is a
program of its own: it inherits the child's address-space cap (RLIMIT_AS survives exec), gets at
most the time left before the child's deadline, and dies with the child (PR_SET_PDEATHSIG), so a
child killed at its deadline leaves no Tesseract behind. An image is drawn at most `MAX_SIDE`
pixels on its long side, and Pillow refuses an image of more than `MAX_PIXELS` pixels (a
"decompression bomb") before decoding it.

This module imports only Pillow, pypdfium2 and the standard library: it is what the child loads,
imported once by the sandbox's starter before it forks the child (so each child starts with
both loaded).
"""

from __future__ import annotations

import ctypes
import io
import os
import shutil
import signal
import subprocess
import time
from typing import TYPE_CHECKING

import pypdfium2
from PIL import Image as PILImage
from PIL import ImageSequence, UnidentifiedImageError

if TYPE_CHECKING:  # the child loads this module alone: nothing of research at run time
    from research.untrusted.sandbox import ChildAnswer

MAX_SIDE = 3500            # pixels on the long side of a page as Tesseract gets it
MAX_PIXELS = 60_000_000    # an image file larger than this is refused unread
RENDER_DPI = 300           # PDF pages are drawn at this resolution (Tesseract's sweet spot)
_PR_SET_PDEATHSIG = 1
NO_TESSERACT = ("OCR is not available on this computer (the Tesseract program is not "
                "installed; scripts/setup.sh installs it)")


def ocr_image(payload: bytes, max_pages: str, deadline: str) -> ChildAnswer:
    """{"pages": [text of frame 1, ...], "total_pages", "complete"} or {"error": words}."""
    PILImage.MAX_IMAGE_PIXELS = MAX_PIXELS
    try:
        image = PILImage.open(io.BytesIO(payload))  # reads the header only
        if image.width * image.height > MAX_PIXELS:
            raise PILImage.DecompressionBombError
        total = int(getattr(image, "n_frames", 1) or 1)
        texts: list[str] = []
        for frame in ImageSequence.Iterator(image):
            if len(texts) >= int(max_pages):
                break
            text = _read(frame, float(deadline))
            if text is None:
                return {"pages": texts, "total_pages": total, "complete": False}
            texts.append(text)
    except MemoryError:
        raise
    except PILImage.DecompressionBombError:
        return {"error": "the image is far too large to read (more than "
                         f"{MAX_PIXELS // 1_000_000} million pixels)"}
    except UnidentifiedImageError:
        return {"error": "the image could not be read; it may be damaged or not an image"}
    except _NoTesseract:
        return {"error": NO_TESSERACT}
    except Exception as exc:  # noqa: BLE001 - Pillow raises many kinds on broken files
        detail = " ".join(str(exc).split()) or type(exc).__name__
        return {"error": f"the image could not be read; it may be damaged ({detail[:160]})"}
    return {"pages": texts, "total_pages": total, "complete": True}


def ocr_pdf_pages(payload: bytes, numbers: str, deadline: str) -> ChildAnswer:
    """{"pages": {"3": text, ...}, "complete"} for the 1-based page numbers "3,7,..." or
    {"error": words}. Pages are read in order until the deadline nears."""
    wanted = [int(n) for n in numbers.split(",") if n.strip()]
    found: dict[str, str] = {}
    try:
        pdf = pypdfium2.PdfDocument(payload)
        try:
            for number in wanted:
                page = pdf[number - 1]
                try:
                    width, height = page.get_size()
                    scale = min(RENDER_DPI / 72, MAX_SIDE / max(1.0, width, height))
                    bitmap = page.render(scale=scale, grayscale=True)
                    image = bitmap.to_pil()
                finally:
                    page.close()
                text = _read(image, float(deadline))
                if text is None:
                    return {"pages": found, "complete": False}
                found[str(number)] = text
        finally:
            pdf.close()
    except MemoryError:
        raise
    except _NoTesseract:
        return {"error": NO_TESSERACT}
    except Exception as exc:  # noqa: BLE001 - pdfium raises its own kinds on broken files
        detail = " ".join(str(exc).split()) or type(exc).__name__
        return {"error": f"the scanned pages could not be read ({detail[:160]})"}
    return {"pages": found, "complete": True}


class _NoTesseract(Exception):
    pass


def _read(image: PILImage.Image, deadline: float) -> str | None:
    """Tesseract's text of one image; None when the deadline came first."""
    program = shutil.which("tesseract")
    if program is None:
        raise _NoTesseract
    left = deadline - time.monotonic() - 1.0  # a second to answer the parent
    if left <= 0:
        return None
    image = image.convert("L")
    if max(image.size) > MAX_SIDE:
        image.thumbnail((MAX_SIDE, MAX_SIDE))
    png = io.BytesIO()
    image.save(png, "PNG")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "OMP_THREAD_LIMIT": "1",
           "LANG": "C.UTF-8"}
    try:
        done = subprocess.run([program, "stdin", "stdout", "-l", "eng"], input=png.getvalue(),
                              capture_output=True, timeout=left, env=env,
                              preexec_fn=_die_with_parent, check=False)
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        raise RuntimeError(f"Tesseract failed ({done.stderr.decode('utf-8', 'replace')[-160:]})")
    return done.stdout.decode("utf-8", "replace").strip()


def _die_with_parent() -> None:
    """In Tesseract's process before exec: end when the child that started it ends."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
