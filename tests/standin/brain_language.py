"""Stand-in answer for translating the exports' fixed labels."""

from __future__ import annotations

import re
from typing import Any

from tests.standin import brain

GERMAN = {"date": "Datum", "run": "Lauf", "parameters": "Parameter", "verification": "Prüfung",
          "caveats": "Einschränkungen", "sources": "Quellen", "no_sources": "Keine Quellen zitiert.",
          "page": "Seite", "of": "von"}


def report_labels(user: str) -> dict[str, Any]:
    language = re.search(r"into (\w+)\.", user)
    if language and language.group(1) == "German":
        return GERMAN
    return {k: v for k, v in re.findall(r"^(\w+): (.+)$", user, flags=re.MULTILINE)}


brain.register("ReportLabels", report_labels)
