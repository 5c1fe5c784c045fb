"""The model roles in a person's words: what each role does, never its internal name
("worker", "auditor"; issue 39 point 5). Settings and the New research form label the
per-role model fields with these."""

from __future__ import annotations

# What each role does, finishing "Model for ..."; research/core/config.py's ROLES.
DOING = {
    "lead": "planning and deciding what to follow up",
    "worker": "searching and reading sources",
    "writer": "writing the report",
    "reviewer": "reviewing the draft",
    "verifier": "the first check of claims",
    "auditor": "the second check of claims",
    "critic": "settling disputed claims",
}


def model_label(role: str) -> str:
    """'Model for searching and reading sources' (an unknown role: its own name)."""
    return f"Model for {DOING.get(role, role)}"


def provider_label(role: str) -> str:
    return f"Provider for {DOING.get(role, role)}"
