"""The one place stored rows become what the `Store` returns.

Today every getter returns plain dicts (JSON columns already decoded by `storage.schema.Json`);
the few columns whose stored form differs from what callers use are fixed here: citation
numberings come back with int keys, review flags as bools. The engine's typed records
(`research/records.py`: Subtopic, Source, Finding, Draft...) are built from these rows by their
`from_row`, there and only there: the store does not import the engine (no arrow back up).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import RowMapping

Row = dict[str, Any]  # a row as the Store returns it (a JSON-like edge; see module docstring)


def plain_rows(rows: Iterable[RowMapping | Mapping[str, Any]]) -> list[Row]:
    return [dict(row) for row in rows]


def numbering_out(value: Mapping[str, str] | None) -> dict[int, str]:
    """A stored citation numbering {"1": source_id} as {1: source_id}."""
    return {int(n): sid for n, sid in (value or {}).items()}


def numbering_in(numbering: Mapping[int, str]) -> dict[str, str]:
    return {str(int(n)): sid for n, sid in numbering.items()}


def draft(row: Row) -> Row:
    row["numbering"] = numbering_out(row["numbering"])
    return row


def engine_report(row: Row) -> Row:
    row["numbering"] = numbering_out(row["numbering"])
    return row


def review(row: Row) -> Row:
    row["approved"] = bool(row["approved"])
    row["model_approved"] = bool(row["model_approved"])
    return row


def activity(row: Row | None) -> Row:
    """`latest_activity`'s counts as ints (PostgreSQL returns bigint counts as int already,
    SQLite too; this keeps the promise in one place)."""
    if not row:
        return {}
    for key in ("sources", "events", "last_event_id", "steps_done", "steps_total"):
        row[key] = int(row[key] or 0)
    return row
