"""The person's own documents as a source: ingestion here, search in `research.search.documents`.

`ingest` takes one file's name and bytes, extracts its text with locations (`extract`), splits
it into passages (`passages`) and stores it with its full-text index (`storage.documents`).
A bad file gives an `Ingested` with `ok=False` and a plain message; it never raises for a
file's content, so a batch goes on past it and nothing already stored is touched.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from research.documents.extract import KINDS, MAX_FILE_BYTES, DocumentRejected, extract
from research.documents.passages import cited_title, location, split
from storage import Store
from storage import documents as docstore

NO_TEXT = ("no text layer: this looks like a scanned PDF (images of pages); run it through "
           "OCR and upload the result to make it searchable")


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
    name = Path(filename).name or "document"
    digest = hashlib.sha256(data).hexdigest()
    known = docstore.find_by_hash(store, digest)
    if known is not None:
        if collection:
            docstore.add_to_collection(store, collection, [known["id"]])
        return Ingested(name, True, f"already in the library as \u201c{known['title']}\u201d",
                        known["id"], known["pages"], known["passages"])
    try:
        found = extract(name, data)
    except DocumentRejected as exc:
        return Ingested(name, False, str(exc))
    pieces = split(found.sections)
    status, message = ("ready", None) if pieces else ("no_text", NO_TEXT if found.kind == "pdf"
                                                      else "no readable text in the file")
    if not pieces and found.kind != "pdf":
        return Ingested(name, False, "there is no readable text in the file")
    doc_id = docstore.add_document(
        store, title=found.title, filename=name, kind=found.kind, size_bytes=len(data),
        pages=found.pages, sha256=digest, status=status, message=message,
        passages=[(p.page, p.section, p.text) for p in pieces], collection=collection,
    )
    words = f"{len(pieces)} passages" + (f" from {found.pages} pages" if found.pages else "")
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
    """Ingest files and folders from disk (the CLI's --docs); one result per file."""
    results: list[Ingested] = []
    for path in files_in(paths):
        try:
            size = path.stat().st_size
            if size > MAX_FILE_BYTES:
                results.append(Ingested(path.name, False, f"the file is larger than the "
                                        f"{MAX_FILE_BYTES // (1024 * 1024)} MB limit"))
                continue
            data = path.read_bytes()
        except OSError as exc:
            results.append(Ingested(path.name, False, f"could not read the file "
                                    f"({exc.strerror or type(exc).__name__})"))
            continue
        results.append(ingest(store, path.name, data, collection=collection))
    return results


__all__ = ["Ingested", "cited_title", "files_in", "ingest", "ingest_paths", "location"]
