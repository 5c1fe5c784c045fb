"""One status, one voice: a run's state and its money in the words every surface uses.

A run that completed with warnings must not read "Finished" in a toast, "Completed" in the
Library, "completed" in the API and "Research finished" in an e-mail (issue 39, point 5). So
every place a person reads a run's state asks here: the Run page (its status and summary
line), the Library, the toasts and the browser tab's title, the CLI, the HTTP API's and the
MCP server's plain-text fields, and the notifications. The stored status stays the machine's
word ("completed", "failed"), which programs read; what a person reads is `run_label` and
`status_line`.

Money a person reads goes through `money` ("$0.42", "under $0.01"), never four decimals.
`plain_words` turns the setting names that engine messages carry ("MAX_ROUNDS",
"OPENAI_API_KEY") into the words the form and Settings use; `plain_error` also says a raw
exception class name as what it means.
"""

from __future__ import annotations

import re

from research.core.constants import CONSTANTS
from research.core.records import Run
from research.export.method import plain_name

# The stored status -> what a person reads (a step's own states too: the Run page's steps).
LABELS = {
    "queued": "Queued", "running": "Running", "paused": "Paused",
    "waiting": "Waiting for you", "completed": "Completed", "failed": "Failed",
    "cancelled": "Cancelled", "interrupted": "Interrupted", "missing": "Unknown",
    "retrying": "Retrying", "done": "Done",
}
WITH_WARNINGS = "Completed with warnings"
# The model roles (research.core.config.ROLES) as the New research form and the cost table
# name them: what each does, never "worker" or "auditor".
ROLE_NAMES = {"lead": "Planner", "worker": "Researchers", "writer": "Writer",
              "reviewer": "Reviewer", "verifier": "First check", "auditor": "Second check",
              "critic": "Critic"}
# What each role does, finishing "Model for ..." (Settings' and the form's per-role fields).
ROLE_DOING = {"lead": "planning and deciding what to follow up",
              "worker": "searching and reading sources", "writer": "writing the report",
              "reviewer": "reviewing the draft", "verifier": "the first check of claims",
              "auditor": "the second check of claims", "critic": "settling disputed claims"}
QUESTION_CHARS = 100

# An event's type (research/core/events.py) as the Run page's activity log names it.
EVENT_WORDS = {
    "initiated": "Started", "plan_created": "Plan made", "step_started": "Step started",
    "step_completed": "Step done", "step_failed": "Step failed", "source_found": "Source kept",
    "source_skipped": "Page skipped", "search_failed": "Search failed",
    "retrying": "Trying again", "limit_wait": "Waiting for a limit",
    "round_completed": "Round done", "draft_started": "Writing", "draft_completed": "Draft written",
    "review_cycle": "Reviewed", "completed": "Completed", "error": "Problem",
    "warning": "Warning", "cancelled": "Cancelled", "paused": "Paused",
    "waiting": "Waiting for you", "resumed": "Resumed",
}

# What each status means for the person, after its label (a failure says its own reason).
_MEANING = {
    "queued": "it starts as soon as a worker is free.",
    "running": "it is working on the question; it goes on when the page is closed.",
    "paused": "press Resume to continue.",
    "waiting": "answer its questions or review its plan, then it carries on.",
    "cancelled": "everything it gathered so far is kept.",
    "completed": "the report is ready.",
    "missing": "there is no such run.",
}
_KEPT = "Everything gathered so far is kept; resume it to continue where it stopped."

_KEY_NAMES = {"OPENAI_API_KEY": "the OpenAI key", "GEMINI_API_KEY": "the Google Gemini key",
              "GOOGLE_API_KEY": "the Google Gemini key", "TAVILY_API_KEY": "the Tavily key",
              "SEMANTIC_SCHOLAR_API_KEY": "the Semantic Scholar key",
              "BRAVE_API_KEY": "the Brave Search key", "EXA_API_KEY": "the Exa key",
              "SERPER_API_KEY": "the Serper key", "SEARXNG_BASE_URL": "the SearXNG address",
              "OPENAI_BASE_URL": "the OpenAI server address",
              "GEMINI_BASE_URL": "the Gemini server address",
              "ANTHROPIC_API_KEY": "the Anthropic key",
              "ANTHROPIC_BASE_URL": "the Anthropic server address",
              "DEEP_RESEARCH_SEARCH": "the search services setting",
              "DEEP_RESEARCH_PROVIDER": "the model provider setting",
              "DEEP_RESEARCH_MODEL": "the model setting"}
_SETTING_NAME = re.compile(r"\b(?:DEEP_RESEARCH_)?[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")
# A library's exception class named in a message ("Could not reach Tavily: ConnectError.").
_EXCEPTION_NAME = re.compile(r"\b(?:[A-Z][a-z0-9]+){1,5}(?:Error|Exception|Timeout)\b")


def status_label(status: str) -> str:
    """A stored status in a person's words ('waiting' -> 'Waiting for you')."""
    return LABELS.get(status, status.replace("_", " ").strip().capitalize() or "Unknown")


# A role's model as messages name it ("The research model (openai/gpt-5-mini) did not ...").
_MODEL_WORDS = {"lead": "planning", "worker": "research", "verifier": "first-check",
                "auditor": "second-check"}


def model_words(role: str) -> str:
    """'The research model', never 'The worker model' (the roles' own names stay inside)."""
    return f"The {_MODEL_WORDS.get(role, role)} model"


def event_words(event_type: str) -> str:
    """An event's type in words ('limit_wait' -> 'Waiting for a limit')."""
    return EVENT_WORDS.get(event_type, event_type.replace("_", " ").capitalize())


def role_name(role: str) -> str:
    """A model role as a person reads it ('auditor' -> 'Second check')."""
    return ROLE_NAMES.get(role, role.replace("_", " ").capitalize())


def model_label(role: str) -> str:
    """A per-role model field's label: 'Model for searching and reading sources'."""
    return f"Model for {ROLE_DOING.get(role, role_name(role).lower())}"


def provider_label(role: str) -> str:
    """A per-role provider field's label: 'Provider for writing the report'."""
    return f"Provider for {ROLE_DOING.get(role, role_name(role).lower())}"


def run_label(run: Run, status: str | None = None) -> str:
    """The one label of a run, as every surface shows it: a completed run with warnings says
    so, so the status never reads as a plain success while the report carries a warning.
    `status`: the status to show when it differs from the stored one (a queued run nothing
    executes is interrupted: research.runs.status_of)."""
    shown = status or run.status
    if shown == "completed" and run.warnings:
        return WITH_WARNINGS
    return status_label(shown)


def meaning(run: Run, status: str | None = None) -> str:
    """What the label means for this run, in a sentence: the reason of a failure or an
    interruption, the first warning of a completed run, else what happens next."""
    shown = status or run.status
    if shown == "completed" and run.warnings:
        more = len(run.warnings) - 1
        extra = f" (and {more} more warning{'s' if more != 1 else ''})" if more else ""
        return plain_error(run.warnings[0]).rstrip(".") + extra + "."
    if shown == "failed":
        return plain_error(run.error or "it stopped on a problem it could not get past.")
    if shown == "interrupted":
        why = plain_error(run.error or "the program stopped while it worked.")
        return why if "kept" in why else f"{why.rstrip('.')}. {_KEPT}"
    return _MEANING.get(shown, "")


def status_line(run: Run, status: str | None = None) -> str:
    """'Failed: OpenAI refused the API key ...', 'Completed with warnings: Research was
    ended early ...': the label and what it means, one line for a terminal, an API field,
    an MCP answer or a notification."""
    label = run_label(run, status)
    why = meaning(run, status)
    return f"{label}: {_sentence(why)}" if why else f"{label}."


def headline(run: Run, status: str | None = None, limit: int = QUESTION_CHARS) -> str:
    """'Completed with warnings: “How do heat pumps ...”': a toast, a notification."""
    return f"{run_label(run, status)}: “{one_line(run.question, limit)}”"


def one_line(text: str, limit: int = QUESTION_CHARS) -> str:
    """`text` on one line, cut at `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def money(usd: float | None, *, about: bool = False) -> str:
    """Dollars as a person reads them: '$0.42', '$1,204.50', 'under $0.01' (never '$0.0042'),
    '$0.00' for nothing spent, 'not known' when there is no figure. `about`: an estimate
    ('~$0.42')."""
    if usd is None:
        return "not known"
    if usd <= 0:
        return "$0.00"
    if usd < 0.01:
        return "under $0.01"
    return f"{'~' if about else ''}${usd:,.2f}"


def plain_words(text: str) -> str:
    """Setting and environment-variable names in engine messages -> the words people know
    ('MAX_ROUNDS' -> 'research rounds', 'OPENAI_API_KEY' -> 'the OpenAI key')."""
    def setting(match: re.Match[str]) -> str:
        name = match.group(0)
        if name in _KEY_NAMES:
            return _KEY_NAMES[name]
        constant = name.removeprefix("DEEP_RESEARCH_")
        if constant in CONSTANTS:
            return f"“{plain_name(constant)}”"
        return name
    return _SETTING_NAME.sub(setting, text)


def plain_error(text: str) -> str:
    """A failure or warning of ours in plain words: `plain_words`, and a library's exception
    class name ('Could not reach Tavily: ConnectError.') said as what it means. Only for our
    own messages: a web page's title may well name an exception."""
    def exception(match: re.Match[str]) -> str:
        name = match.group(0)
        if "Timeout" in name:
            return "no answer in time"
        if "Connect" in name or "Network" in name:
            return "a connection problem"
        return "a problem"
    return _EXCEPTION_NAME.sub(exception, plain_words(text))


def _sentence(text: str) -> str:
    text = text.strip()
    return text[:1].upper() + text[1:] if text else text
