"""Start an update of a finished report: "Update with what's new".

The update is a run of its own, started through the one door to runs (`Runs.start`), with
the earlier version's question and settings plus the day that version was finished
(`update_since`). It builds on that version (`parent_run_id`): its sources and findings are
inherited, its plan is reused, searches ask only for what is newer, pages already read are
not read again (research/living/revise.py). The dashboard's button, `python -m research
update RUN_ID` and a watch's schedule all start updates here.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import ValidationError

from research.core.config import Credentials, ResearchConfig
from research.core.errors import ConfigError
from research.core.records import Run
from research.core.settings import effective_env, prices_path
from research.llm.pricing import PriceTable
from research.runs.jobs import Runs

HOSTED_ONLY = ("openai-deep-research", "gemini-deep-research")


def start_update(runs: Runs, run_id: str, *, person: str | None = None,
                 cost_cap: float | None = None, credentials: Credentials | None = None,
                 prices: PriceTable | None = None) -> str:
    """Queue an update of the finished run `run_id` (of `person`; None: anyone's) and return
    the new run's id at once.

    `cost_cap` (US dollars; None: the earlier version's cap) bounds the update. Keys and
    prices default to this process's own settings (secrets file, then environment), as for
    a run recovered after a restart. Raises ConfigError, in plain words, for an unknown or
    unfinished run or one whose settings cannot be reused.
    """
    earlier = runs.store.get_run(run_id, person=person)
    if earlier is None:
        raise ConfigError(f"There is no run with id {run_id!r}.")
    config = update_config(earlier, cost_cap=cost_cap)
    env = effective_env()
    return runs.start(earlier.question, config, credentials or Credentials.from_env(env),
                      prices=prices if prices is not None else _prices(env),
                      parent_run_id=earlier.id, person=person if person is not None
                      else earlier.person)


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


def _prices(env: dict[str, str]) -> PriceTable | None:
    try:
        return PriceTable.load(prices_path(env))
    except ConfigError:  # a broken prices file: the update uses the built-in prices
        return None
