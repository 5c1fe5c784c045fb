"""Dates as search APIs write them, read into ISO dates (YYYY-MM-DD)."""

from __future__ import annotations

import re
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")
# Google-style dates as Serper passes them on ("Jan 5, 2024"); relative ones ("3 days ago")
# are left unread rather than guessed.
_WRITTEN = ("%b %d, %Y", "%B %d, %Y", "%d %b %Y", "%d %B %Y")


def iso_date(value: Any) -> str | None:
    """YYYY-MM-DD from an ISO timestamp or an HTTP/RFC 2822 date; None if unreadable."""
    if not value or not isinstance(value, str):
        return None
    text = value.strip()
    if _ISO_DATE.match(text):
        try:
            return datetime.strptime(text[:10], "%Y-%m-%d").date().isoformat()
        except ValueError:
            return None
    try:
        return parsedate_to_datetime(text).date().isoformat()
    except (TypeError, ValueError, IndexError):
        return None


def written_date(value: Any) -> str | None:
    """YYYY-MM-DD from an ISO or HTTP date, or a written one such as "Jan 5, 2024"."""
    found = iso_date(value)
    if found or not isinstance(value, str):
        return found
    for form in _WRITTEN:
        try:
            return datetime.strptime(value.strip(), form).date().isoformat()
        except ValueError:
            continue
    return None
