"""Benchmark section "docs": ingest a document library and search it.

    .venv/bin/python -m bench.benchmark --only docs

Generates 200 documents (a mix of PDF, DOCX and Markdown; 2,000 pages in all, a page being
about 350 words; a DOCX or Markdown "page" is a heading with that much text), ingests them
through `research.documents.ingest_many` as an upload would (each PDF and DOCX read in a
sandboxed child process, two files at a time) into a fresh store, then times passage searches over the whole library. Prints pages per
second for ingestion and p50/p95 search latency. Targets: at least 20 pages/s; p95 under 50 ms.
Figures only: nothing here passes or fails the run.
"""

from __future__ import annotations

import argparse
import io
import random
import statistics
import time
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bench.benchmark import Row

DOCUMENTS = 200
PAGES = 2_000
WORDS_PER_PAGE = 350
SEARCHES = 300
TOPICS = ("heat pump", "solar panel", "battery storage", "grid tariff", "wind turbine",
          "insulation", "district heating", "hydrogen", "subsidy", "carbon price")


def vocabulary(rng: random.Random, size: int = 6_000) -> list[str]:
    """Made-up words with a natural (Zipf-like) frequency once sampled by `weights`."""
    letters = "abcdefghiklmnoprstuvw"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(3, 10))) for _ in range(size)]


def page_text(rng: random.Random, vocab: list[str], weights: list[float]) -> str:
    words = rng.choices(vocab, weights=weights, k=WORDS_PER_PAGE)
    topic = rng.choice(TOPICS)
    for at in rng.sample(range(len(words)), 6):
        words[at] = topic
    return " ".join(words)


def simple_pdf(pages: list[str]) -> bytes:
    """A real PDF with a text layer, one page per text, written directly (fast, no layout):
    each page shows its text as lines of Helvetica."""
    objects: list[bytes] = []
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(len(pages)))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for i, text in enumerate(pages):
        words = text.split()
        lines = [" ".join(words[j:j + 12]) for j in range(0, len(words), 12)]
        body = "BT /F1 9 Tf 40 800 Td 11 TL " + " ".join(f"({line}) '" for line in lines) + " ET"
        stream = zlib.compress(body.encode("latin-1"))
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources "
                       f"<< /Font << /F1 3 0 R >> >> /Contents {5 + 2 * i} 0 R >>".encode())
        objects.append(f"<< /Length {len(stream)} /Filter /FlateDecode >>\nstream\n".encode()
                       + stream + b"\nendstream")
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for n, obj in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(f"{n} 0 obj\n".encode() + obj + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    out.write("".join(f"{o:010d} 00000 n \n" for o in offsets).encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF"
              .encode())
    return out.getvalue()


def docx_file(pages: list[str]) -> bytes:
    import docx

    document = docx.Document()
    for n, text in enumerate(pages, start=1):
        document.add_heading(f"Part {n}", level=1)
        document.add_paragraph(text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def markdown_file(pages: list[str]) -> bytes:
    return "\n\n".join(f"## Part {n}\n\n{t}" for n, t in enumerate(pages, start=1)).encode()


def library(seed: int = 7) -> tuple[list[tuple[str, bytes]], list[str]]:
    """(file name, bytes) for every document, and the vocabulary they were written from."""
    rng = random.Random(seed)
    vocab = vocabulary(rng)
    weights = [1 / (rank + 1) for rank in range(len(vocab))]
    per_doc = PAGES // DOCUMENTS
    files: list[tuple[str, bytes]] = []
    for n in range(DOCUMENTS):
        pages = [page_text(rng, vocab, weights) for _ in range(per_doc)]
        kind = ("pdf", "docx", "md")[n % 3]
        data = {"pdf": simple_pdf, "docx": docx_file, "md": markdown_file}[kind](pages)
        files.append((f"doc-{n:03d}.{kind}", data))
    return files, vocab


def bench_docs(args: argparse.Namespace, tmp: Path) -> list[Row]:
    from bench.benchmark import Row, say
    from research.documents import ingest_many
    from storage import Store
    from storage import documents as docstore

    started = time.perf_counter()
    files, vocab = library()
    say(f"  generated {len(files)} documents ({PAGES} pages) in "
        f"{time.perf_counter() - started:.1f} s (not timed)")
    store = Store(tmp / "docs.db")
    started = time.perf_counter()
    results = ingest_many(store, files)
    ingest_s = time.perf_counter() - started
    failed = [r for r in results if not r.ok]
    passages = sum(r.passages for r in results)
    rate = PAGES / ingest_s
    say(f"  ingested in {ingest_s:.1f} s: {rate:.1f} pages/s, {passages} passages, "
        f"{len(failed)} failed")

    rng = random.Random(11)
    common = vocab[:300]
    queries = [" ".join(rng.sample(common, 2) + [rng.choice(TOPICS)] + rng.sample(vocab, 2))
               for _ in range(SEARCHES)]
    docstore.search_passages(store, queries[0])  # warm the connection and the page cache
    times: list[float] = []
    found = 0
    for query in queries:
        begin = time.perf_counter()
        hits = docstore.search_passages(store, query, limit=10)
        times.append((time.perf_counter() - begin) * 1000)
        found += bool(hits)
    p50 = statistics.median(times)
    p95 = statistics.quantiles(times, n=20)[18]
    say(f"  {SEARCHES} searches over {passages} passages: p50 {p50:.1f} ms, p95 {p95:.1f} ms "
        f"({found} found something)")
    return [
        Row("docs", f"ingest {len(files)} docs / {PAGES} pages", f"{rate:.1f} pages/s",
            ">= 20 pages/s", "ok" if rate >= 20 else "SLOW"),
        Row("docs", "ingest failures", str(len(failed)), "0", "ok" if not failed else "FAIL"),
        Row("docs", f"search p50 / p95 ({passages} passages)", f"{p50:.1f} / {p95:.1f} ms",
            "p95 < 50 ms", "ok" if p95 < 50 else "SLOW"),
    ]
