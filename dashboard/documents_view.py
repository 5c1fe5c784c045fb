"""What the Documents page shows and does, kept out of the page so it can be tested plainly.

The page stays thin: it draws widgets and calls these. Uploaded bytes go through
`research.documents.ingest` one file at a time, so a bad file gets its own plain message and
the rest of the upload goes on.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from dashboard import views
from research.documents import Ingested, ingest_many
from research.documents.extract import KINDS, MAX_FILE_BYTES
from research.documents.passages import location
from storage import Store
from storage import documents as docstore
from storage.records import Document, Passage

UPLOAD_TYPES = sorted(k.lstrip(".") for k in KINDS)
KIND_LABELS = {"pdf": "PDF", "docx": "Word", "markdown": "Markdown", "text": "Text",
               "html": "HTML", "image": "Image"}
STATUS_LABELS = {"ready": "Searchable", "no_text": "No text found"}


def size_text(size: int) -> str:
    """Bytes in the unit a person reads: 532 B, 14 KB, 3.2 MB."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.0f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def documents_frame(docs: Sequence[Document]) -> pd.DataFrame:
    """The library table: one row per document, newest first."""
    rows = [{
        "Title": views.label_text(d.title, 120),
        "Type": KIND_LABELS.get(d.kind, d.kind),
        "Size": size_text(d.size_bytes),
        "Pages": d.pages,
        "Passages": d.passages,
        "Added": views.short_date(d.added_at),
        "Status": STATUS_LABELS.get(d.status, d.status),
        "Collections": ", ".join(d.collections),
    } for d in docs]
    columns = ["Title", "Type", "Size", "Pages", "Passages", "Added", "Status", "Collections"]
    frame = pd.DataFrame(rows, columns=columns)
    frame["Pages"] = frame["Pages"].astype("Int64")  # empty for files without pages
    return frame


def collection_for_upload(existing: str, new: str) -> str | None:
    """The collection an upload goes into: a new name typed wins over the one chosen."""
    name = (new or "").strip() or (existing or "").strip()
    return docstore.check_collection_name(name) if name else None


def add_uploads(store: Store, uploads: Iterable[tuple[str, bytes]],
                collection: str | None) -> list[Ingested]:
    """Ingest each uploaded (name, bytes); one result per file, bad files included."""
    return ingest_many(store, uploads, collection=collection)


def result_line(result: Ingested) -> str:
    """One upload result for st.markdown: the file name and what happened, made inert."""
    return f"**{views.md_text(result.filename)}**: {views.md_text(result.message)}"


def upload_help() -> str:
    return (f"PDF, Word (.docx), Markdown, plain text, HTML or images (PNG, JPEG, TIFF); up to "
            f"{MAX_FILE_BYTES // (1024 * 1024)} MB each. Scanned pages and images are read by "
            "OCR. Files are read, never run or shown as web pages, and links inside them are "
            "not followed.")


def hit_heading(hit: docstore.PassageHit) -> str:
    where = location(hit.page, hit.section)
    return views.md_text(hit.title) + (f" · {views.md_text(where)}" if where else "")


def passage_heading(passage: Passage) -> str:
    return location(passage.page, passage.section) or f"passage {passage.seq + 1}"


def show_run_passages(store: Store, run_id: str) -> None:
    """On the Run page's Sources tab: the text of each document passage the run read (a
    passage has no web page to open, so its text is shown here instead)."""
    import streamlit as st

    passages = docstore.run_passages(store, run_id)
    if not passages:
        return
    with st.expander(f"Passages from your documents ({len(passages)})"):
        for passage in passages:
            cited = " · cited" if passage.cited_in else ""
            st.markdown(f"**{views.md_text(passage.title)}**{cited}")
            st.markdown(views.md_text(passage.text[:3000]))
