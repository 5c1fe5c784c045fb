"""Ask the report (issue 35): follow-up questions answered from a finished run's own sources.

    answer.py    one question: the person's finished run, its full-text index, the answer,
                 the check, the kept turn; `research_it` starts a follow-up run built on it
    prompt.py    the answerer's prompt beside its answer's model
    numbers.py   the numbers answers cite by (the report's own), the passages of a source
    check.py     the answer checked like the report (one verifier, the critic, apply)
    session.py   the answer's model calls, made and counted as a run's are
    appendix.py  "Questions and answers", the exports' appendix
    command.py   `python -m research ask RUN_ID "question"`

Importable without Streamlit; the dashboard (dashboard/ask_view.py), the CLI, the HTTP API and
the MCP server all call `ask`, `conversation` and `research_it`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from research.ask.answer import (
        NOT_THERE,
        Answer,
        AnswerSource,
        AskError,
        CostCap,
        ask,
        conversation,
        cost_cap,
        own_run,
        research_it,
    )

__all__ = ["NOT_THERE", "Answer", "AnswerSource", "AskError", "CostCap", "ask", "conversation",
           "cost_cap", "own_run", "research_it"]


def __getattr__(name: str) -> Any:
    """The engine on first use: the exports import `research.ask.appendix` alone, and must
    not load the pipeline and the model providers with it (start-up time)."""
    if name in __all__:
        from research.ask import answer

        return getattr(answer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
