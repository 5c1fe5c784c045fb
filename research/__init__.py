"""Deep Research Studio's engine, usable without Streamlit.

    from research import build_config, Credentials, run_research
    from storage import Store
    store = Store("data/research.db")
    run_id = run_research("What changed in EU AI rules in 2026?", store=store,
                          config=build_config(env=os.environ, preset="quick"),
                          credentials=Credentials.from_env(os.environ))
"""

from __future__ import annotations

from typing import Any

from research.core.config import Credentials, ResearchConfig, build_config
from research.core.errors import ConfigError, ResearchError
from research.core.events import Event, EventSink
from research.core.records import Run
from research.phases.decide.steer import answer as answer_steering
from research.phases.decide.steer import pending as pending_steering
from research.phases.start.clarify import answer as answer_clarification
from research.phases.start.clarify import pending as pending_clarification
from research.phases.start.plan import approve as approve_plan
from research.pipeline import create_run, execute, validate_question
from storage import Store

__all__ = [
    "ConfigError", "Credentials", "Event", "ResearchConfig", "ResearchError", "Store",
    "answer_clarification", "approve_plan", "build_config", "cancel", "create_run", "execute",
    "answer_steering", "pause", "pending_clarification", "pending_steering", "resume", "run_research", "unpause", "validate_question",
]


def run_research(
    question: str, *, store: Store, config: ResearchConfig, credentials: Credentials,
    on_event: EventSink | None = None, **deps: Any,
) -> str:
    """Create a run, execute it to the end (blocking) and return its id."""
    run_id = create_run(store, question, config)
    execute(run_id, store=store, credentials=credentials, on_event=on_event, **deps)
    return run_id


def resume(
    run_id: str, *, store: Store, credentials: Credentials, on_event: EventSink | None = None,
    **deps: Any,
) -> Run:
    """Continue an interrupted, failed or paused run without redoing finished steps."""
    run = store.get_run(run_id)
    if run is None:
        raise ConfigError(f"There is no run with id {run_id!r}.")
    if run.status == "completed":
        raise ConfigError(f"Run {run_id} has already completed; there is nothing to resume.")
    return execute(run_id, store=store, credentials=credentials, on_event=on_event, **deps)


def pause(store: Store, run_id: str) -> None:
    store.set_control(run_id, "pause")


def cancel(store: Store, run_id: str) -> None:
    store.set_control(run_id, "cancel")


def unpause(store: Store, run_id: str) -> None:
    """Let a paused run continue (the running process picks this up within a second)."""
    store.set_control(run_id, None)
