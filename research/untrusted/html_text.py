"""A page's HTML to its (title, text, published, author), by trafilatura: the extraction kept
for the last pages read, a crude tag-stripping fallback when trafilatura finds no article, and
the extractor's imports warmed once per process (research.untrusted.fetch reads the pages)."""

from __future__ import annotations

import datetime as dt
import hashlib
import html
import re
import threading
from typing import Any

_WARM_LOCK = threading.Lock()
_warmed = False


def warm_up() -> None:
    """Import the HTML extractor and load its list of web suffixes, once per process.

    Both take a second or more; run as a task of the run's executor at the start of a run,
    they happen while the run waits on the model (the plan) instead of holding up the first
    pages the workers read. Under a lock, because the suffix list has none: courlan reads it
    through `tld` on first use (for a host its pattern cannot split, such as an address), and
    the worker threads' first pages arriving together each parsed a copy of their own (thirty
    in a quick run against the stand-in, half the run's Python work)."""
    global _warmed
    with _WARM_LOCK:
        if _warmed:
            return
        try:
            import trafilatura  # noqa: F401 - the import is the point
            from courlan import extract_domain  # trafilatura's URL helper, loaded by it anyway

            extract_domain("https://example.org/")  # the first look-up loads the suffix list
        except Exception:  # noqa: BLE001 - the first page then imports it (and says why not)
            pass
        _warmed = True


PageText = tuple[str | None, str, str | None, str | None]  # (title, text, published, author)

_PARSED_KEEP = 256  # pages whose extraction is kept, per process
_parsed: dict[tuple[str, bytes], PageText] = {}
_parsed_lock = threading.Lock()


def html_to_text(markup: str, url: str) -> PageText:
    """The extraction of a page, kept for the last pages read (keyed by the address and a hash
    of the markup): the same page read again, by the next run on a topic or by a run's second
    round, is the same text without trafilatura's second pass over it (its extraction depends
    on nothing else)."""
    key = (url, hashlib.blake2b(markup.encode("utf-8", "surrogatepass"), digest_size=20).digest())
    with _parsed_lock:
        known = _parsed.pop(key, None)
        if known is not None:
            _parsed[key] = known  # most recently used last
            return known
    known = _extract(markup, url)
    with _parsed_lock:
        _parsed[key] = known
        while len(_parsed) > _PARSED_KEEP:
            del _parsed[next(iter(_parsed))]
    return known


def _extract(markup: str, url: str) -> PageText:
    warm_up()  # once per process, and never by several threads at once
    import trafilatura  # slow to import; only needed once a page arrives

    try:
        text = trafilatura.extract(
            markup, url=url, output_format="txt", include_tables=True,
            favor_precision=False, include_comments=False,
        )
        meta = trafilatura.extract_metadata(markup, default_url=url, extensive=False)
    except Exception:  # noqa: BLE001 - a parser crash on odd markup: use the fallback
        text, meta = None, None
    title = getattr(meta, "title", None) or _html_title(markup)
    published = _iso_date(getattr(meta, "date", None))
    if not text:
        text = _crude_text(markup)
    author = getattr(meta, "author", None)
    return title, text, published, author if isinstance(author, str) else None


def _html_title(markup: str) -> str | None:
    match = re.search(r"<title[^>]*>(.*?)</title>", markup, re.I | re.S)
    return html.unescape(match.group(1)).strip() or None if match else None


def _crude_text(markup: str) -> str:
    markup = re.sub(r"<!--.*?-->", " ", markup, flags=re.S)
    markup = re.sub(r"<(script|style|noscript|template|head|svg)\b.*?</\1\s*>", " ", markup,
                    flags=re.I | re.S)
    markup = re.sub(r"<(br|/p|/div|/h\d|/li|/tr)\b[^>]*>", "\n", markup, flags=re.I)
    text = html.unescape(re.sub(r"<[^>]*>", " ", markup))
    lines = (" ".join(line.split()) for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def _iso_date(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    match = re.match(r"(\d{4})-(\d{2})-(\d{2})", value.strip())
    if not match:
        return None
    try:
        return dt.date(*(int(g) for g in match.groups())).isoformat()
    except ValueError:
        return None
