"""Deep Research Studio's engine, usable without Streamlit.

    from research import build_config, Credentials, run_research
    from storage import Store
    store = Store("data/research.db")
    run_id = run_research("What changed in EU AI rules in 2026?", store=store,
                          config=build_config(env=os.environ, preset="quick"),
                          credentials=Credentials.from_env(os.environ))

A run's whole life (queued on the job engine, paused, cancelled, watched) is `research.runs`.
"""

from __future__ import annotations

from research.core.config import Credentials, ResearchConfig, build_config
from research.core.errors import ConfigError, ResearchError
from research.core.events import Event
from research.phases.decide.steer import answer as answer_steering
from research.phases.decide.steer import pending as pending_steering
from research.phases.start.clarify import answer as answer_clarification
from research.phases.start.clarify import pending as pending_clarification
from research.phases.start.plan import approve as approve_plan
from research.pipeline import create_run, execute, validate_question
from research.runs import cancel, pause, unpause
from research.runs.inline import resume, run_research
from storage import Store

__all__ = [
    "ConfigError", "Credentials", "Event", "ResearchConfig", "ResearchError", "Store",
    "answer_clarification", "approve_plan", "build_config", "cancel", "create_run", "execute",
    "answer_steering", "pause", "pending_clarification", "pending_steering", "resume",
    "run_research", "unpause", "validate_question",
]
