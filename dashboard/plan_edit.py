"""The plan editor of a waiting run: stored subtopics <-> the rows of an editable table.

Pure functions (pandas, no Streamlit). The person renames, removes, adds and reorders
subtopics and edits their questions (one per line, or separated by "; "); the engine's
`approve_plan` validates the result and keeps the original plan.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import pandas as pd

from research.core.records import Subtopic

COLUMNS = ["Position", "Title", "Questions", "Description", "id"]
_SPLIT = re.compile(r"\s*(?:\n|;\s)\s*")


def plan_frame(plan: Sequence[Subtopic]) -> pd.DataFrame:
    """One row per subtopic; its questions joined with "; "."""
    rows = [{
        "Position": i,
        "Title": sub.title,
        "Questions": "; ".join(sub.questions),
        "Description": sub.description,
        "id": sub.id,
    } for i, sub in enumerate(plan, 1)]
    return pd.DataFrame(rows, columns=COLUMNS)


def split_questions(text: Any) -> list[str]:
    """'a; b' or 'a\\nb' -> ['a', 'b'] (a ";" inside a question stays when no space follows)."""
    if _blank(text):
        return []
    return [q.strip(" ;") for q in _SPLIT.split(str(text)) if q.strip(" ;")]


def subtopics_from_frame(frame: pd.DataFrame) -> list[Subtopic]:
    """The edited table as `approve_plan` takes it, in the order of the Position column.

    Rows without a position keep their place after the numbered ones; rows without a title
    are dropped by the engine (it says so when nothing is left); a new row has no id yet.
    """
    records = frame.to_dict("records")
    indexed = []
    for order, row in enumerate(records):
        position = row.get("Position")
        key = float(position) if not _blank(position) else math.inf
        indexed.append((key, order, row))
    indexed.sort(key=lambda item: (item[0], item[1]))
    return [Subtopic(id="" if _blank(row.get("id")) else str(row["id"]),
                     title="" if _blank(row.get("Title")) else str(row["Title"]).strip(),
                     description=("" if _blank(row.get("Description"))
                                  else str(row["Description"]).strip()),
                     questions=tuple(split_questions(row.get("Questions"))))
            for _, _, row in indexed]


def _blank(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    try:
        if pd.isna(value):
            return True
    except (TypeError, ValueError):
        pass
    return isinstance(value, str) and not value.strip()
