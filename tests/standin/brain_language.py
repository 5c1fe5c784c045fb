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


GERMAN_MARKS = {
    "(single source)": "(einzige Quelle)",
    "(qualified after verification)": "(nach Prüfung abgeschwächt)",
    "(not verified)": "(nicht geprüft)",
    "(UNVERIFIED)": "(UNGEPRÜFT)",
    "Insufficient verified data for this section.": "Zu wenig geprüfte Daten für diesen Abschnitt.",
    "(not fully supported by the cited source)": "(von der zitierten Quelle nicht ganz gestützt)",
}


def translations(user: str) -> dict[str, Any]:
    """Known marks from a table; other texts marked as translated, numbers and [n] kept."""
    german = "into German" in user
    texts = [t for _, t in re.findall(r"^(\d+)\. (.*)$", user, flags=re.MULTILINE)]
    if not german:
        return {"texts": texts}
    return {"texts": [GERMAN_MARKS.get(t, f"[Deutsch] {t}") for t in texts]}


brain.register("Translations", translations)
