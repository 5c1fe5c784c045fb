"""An update's settings: the earlier version's, searching only since it was finished.

Kept apart from `update.py` (which reaches the job engine) so that the CLI's inline
`python -m research update RUN_ID` does not import the engine.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import ValidationError

from research.core.config import ResearchConfig
from research.core.errors import ConfigError
from research.core.records import Run
from storage import Store

HOSTED_ONLY = ("openai-deep-research", "gemini-deep-research")


def update_request(store: Store, run_id: str, *, person: str | None = None,
                   cost_cap: float | None = None) -> tuple[Run, ResearchConfig]:
    """The earlier version (of `person`; None: anyone's) and the update's settings; raises
    ConfigError in plain words when it cannot be updated."""
    earlier = store.get_run(run_id, person=person)
    if earlier is None:
        raise ConfigError(f"There is no run with id {run_id!r}.")
    return earlier, update_config(earlier, cost_cap=cost_cap)


def update_config(earlier: Run, *, cost_cap: float | None = None,
                  today: str | None = None) -> ResearchConfig:
    """The update's settings: the earlier version's, searching only since it was finished,
    and never stopping to ask the person (no clarifying questions, plan review or steering:
    the earlier version's answers and plan are reused)."""
    if earlier.status != "completed":
        raise ConfigError("Only a finished report can be updated; this run has "
                          f"{earlier.status or 'not finished'}.")
    if earlier.engine in HOSTED_ONLY:
        raise ConfigError("A report written by a hosted deep-research service cannot be updated "
                          "yet: start a new run on the New research page instead.")
    since = since_of(earlier) or today or datetime.now(UTC).date().isoformat()
    changes: dict[str, object] = {
        "update_since": since, "review_plan": False, "require_clarification": False,
        "steer": False, "dig_deeper_section": "", "engine": "pipeline"}
    if cost_cap is not None:
        changes["max_cost_usd"] = cost_cap
    try:
        return ResearchConfig(**{**earlier.config, **changes})
    except ValidationError as exc:
        if cost_cap is not None and any(e.get("loc") == () and "cost cap" in str(e.get("msg"))
                                        for e in exc.errors()):
            raise ConfigError("The cost cap must be between 0 and 10000 US dollars.") from None
        raise ConfigError("This run's settings are from an older version and cannot be reused: "
                          "start a new run on the New research page instead.") from None


def since_of(run: Run) -> str:
    """The day (YYYY-MM-DD, UTC) the run was finished, or "" when it never said."""
    stamp = run.finished_at or run.updated_at or run.created_at or ""
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone(UTC).date().isoformat()
    except ValueError:
        return ""


