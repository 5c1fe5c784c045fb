"""The person's own documents as a source: ingestion here, search in `research.search.documents`.

`ingest` takes one file's name and bytes, extracts its text with locations (`extract`), splits
it into passages (`passages`) and stores it with its full-text index (`storage.documents`).
A bad file gives an `Ingested` with `ok=False` and a plain message; it never raises for a
file's content, so a batch goes on past it and nothing already stored is touched.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from research.documents.extract import (
    KINDS,
    MAX_FILE_BYTES,
    DocumentRejected,
    Extracted,
    extract,
)
from research.documents.passages import cited_title, location, split
from storage import Store
from storage import documents as docstore

EXTRACT_WORKERS = 2  # files read at once, each PDF/DOCX in its own child process
NO_TEXT = "no text could be read from it, not even by OCR of its scanned pages"


@dataclass(frozen=True)
class Ingested:
    filename: str
    ok: bool
    message: str
    document_id: str | None = None
    pages: int | None = None
    passages: int = 0


def ingest(store: Store, filename: str, data: bytes, *,
           collection: str | None = None) -> Ingested:
    """Extract, split and store one file. The file is refused (ok=False) with plain words when
    it cannot be used; a scanned PDF is kept but flagged as having no text to search."""
    return ingest_many(store, [(filename, data)], collection=collection, workers=1)[0]


def ingest_many(store: Store, files: Iterable[tuple[str, bytes]], *,
                collection: str | None = None, workers: int = EXTRACT_WORKERS) -> list[Ingested]:
    """`ingest` for several (name, bytes), one result per file in order. Files are read
    `workers` at a time (each PDF or DOCX in its own child process, so this uses the cores);
    they are stored one by one from this thread, so each file is one short transaction."""
    items = [(Path(name).name or "document", data, hashlib.sha256(data).hexdigest())
             for name, data in files]
    results: list[Ingested | None] = []
    todo: list[int] = []
    for name, _, digest in items:
        known = docstore.find_by_hash(store, digest)
        if known is None:
            todo.append(len(results))
            results.append(None)
            continue
        if collection:
            docstore.add_to_collection(store, collection, [known.id])
        results.append(Ingested(name, True, f"already in the library as "
                                f"\u201c{known.title}\u201d", known.id, known.pages,
                                known.passages))
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        read = pool.map(lambda i: _read(items[i][0], items[i][1]), todo)
        for index, found in zip(todo, read, strict=True):
            name, data, digest = items[index]
            results[index] = _store(store, name, data, digest, found, collection)
    return [r for r in results if r is not None]


def _read(name: str, data: bytes) -> Extracted | str:
    """The file's text, or why it cannot be used."""
    try:
        return extract(name, data)
    except DocumentRejected as exc:
        return str(exc)


def _store(store: Store, name: str, data: bytes, digest: str, found: Extracted | str,
           collection: str | None) -> Ingested:
    if isinstance(found, str):
        return Ingested(name, False, found)
    pieces = split(found.sections)
    if not pieces and found.kind != "pdf":
        return Ingested(name, False, "there is no readable text in the file")
    status, message = ("ready", None) if pieces else (
        "no_text", f"{NO_TEXT} ({found.problem})" if found.problem else NO_TEXT)
    # The same file twice in one upload: the first copy is stored, the second points at it.
    known = docstore.find_by_hash(store, digest)
    if known is not None:
        return Ingested(name, True, f"already in the library as \u201c{known.title}\u201d",
                        known.id, known.pages, known.passages)
    doc_id = docstore.add_document(
        store, title=found.title, filename=name, kind=found.kind, size_bytes=len(data),
        pages=found.pages, sha256=digest, status=status, message=message,
        passages=[(p.page, p.section, p.text) for p in pieces], collection=collection,
    )
    words = f"{len(pieces)} passages" + (f" from {found.pages} pages" if found.pages else "")
    scanned = sum(1 for s in found.sections if s.ocr)
    if scanned:
        words += f"; {scanned} scanned {'page' if scanned == 1 else 'pages'} read by OCR"
    if found.problem and pieces:
        words += f"; {found.problem}"
    return Ingested(name, bool(pieces), message or f"added ({words})", doc_id, found.pages,
                    len(pieces))


def files_in(paths: Iterable[Path]) -> Iterator[Path]:
    """Each file named, and the supported files inside each folder named (recursively)."""
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*")
                              if p.is_file() and p.suffix.lower() in KINDS)
        else:
            yield path


def ingest_paths(store: Store, paths: Iterable[Path], *,
                 collection: str | None = None) -> list[Ingested]:
    """Ingest files and folders from disk (the CLI's --docs); one result per file, in order.
    Files are read a few at a time, so a big folder is never all in memory at once."""
    results: list[Ingested] = []
    pending: list[tuple[str, bytes] | Ingested] = []
    for path in files_in(paths):
        pending.append(_load(path))
        if sum(not isinstance(p, Ingested) for p in pending) >= EXTRACT_WORKERS * 2:
            results += _flush(store, pending, collection)
            pending = []
    return results + _flush(store, pending, collection)


def _load(path: Path) -> tuple[str, bytes] | Ingested:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return Ingested(path.name, False, f"the file is larger than the "
                            f"{MAX_FILE_BYTES // (1024 * 1024)} MB limit")
        return path.name, path.read_bytes()
    except OSError as exc:
        return Ingested(path.name, False, f"could not read the file "
                        f"({exc.strerror or type(exc).__name__})")


def _flush(store: Store, pending: list[tuple[str, bytes] | Ingested],
           collection: str | None) -> list[Ingested]:
    done = iter(ingest_many(store, [p for p in pending if not isinstance(p, Ingested)],
                            collection=collection))
    return [p if isinstance(p, Ingested) else next(done) for p in pending]


__all__ = ["Ingested", "cited_title", "files_in", "ingest", "ingest_many", "ingest_paths",
           "location"]
