"""Pre-flight: nothing starts without a working model and at least one working search.

`check_configuration` runs before a run is created (no network: keys and names only);
`run` is the run's first step and actually reaches each provider once, through the same
retry layer as every other call (Retry-After honoured, a cancel ends the wait). A failure
names its real cause: a refused key says which setting to check; a rate limit, an exhausted
quota, a broken JSON answer or a too-long prompt say what they are and what to do instead.
"""

from __future__ import annotations

from pydantic import BaseModel

from research import voice
from research.core.agents import Role
from research.core.config import ROLES, Credentials, ResearchConfig
from research.core.context import RunContext
from research.core.errors import (
    AuthError,
    ConfigError,
    ContextTooLong,
    PreflightError,
    ProviderError,
    QuotaExhausted,
    RateLimited,
    ResearchError,
    SchemaError,
)
from research.core.events import SearchFailed, Warning
from research.core.records import JsonObject
from research.core.retry import RetryPolicy, call_with_retries
from research.llm import build_llm
from research.llm.deadline import run_with_deadline
from research.llm.local_server import server_of
from research.llm.messages import Message
from research.search import build_search_providers
from research.search.base import SearchProvider

PROVIDER_NAMES = {"openai": "OpenAI", "gemini": "Google Gemini", "anthropic": "Anthropic"}
KEY_HINT = {
    "openai": "OPENAI_API_KEY (and OPENAI_BASE_URL for a local or compatible server)",
    "gemini": "GEMINI_API_KEY (and GEMINI_BASE_URL if you use a proxy)",
    "anthropic": "ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL if you use a proxy)",
}


class Ping(BaseModel):
    ok: bool


ENGINE_KEYS = {"openai-deep-research": ("openai", "OPENAI_API_KEY"),
               "gemini-deep-research": ("gemini", "GEMINI_API_KEY")}


def check_configuration(config: ResearchConfig, credentials: Credentials) -> None:
    """Raise ConfigError naming what to set when a model or search cannot even be built."""
    for role in ROLES:
        spec = config.role(role)
        build_llm(spec.provider, spec.model, config, credentials)
    hosted = [e for e in ENGINE_KEYS if config.engine in (e, "all")]
    for engine in hosted:
        name, var = ENGINE_KEYS[engine]
        if not credentials.get(name):
            raise ConfigError(f"The {engine} engine needs {var}: set it in Settings or the environment.")
    if config.engine in ("pipeline", "all"):
        build_search_providers(config, credentials)


def run(ctx: RunContext) -> None:
    def make() -> JsonObject:
        deadline = ctx.step_deadline()
        causes: dict[str, ResearchError] = {}

        timeout = min(30.0, ctx.config.request_timeout_s)

        def ping(provider: SearchProvider) -> str | None:
            """A task: its request is a call of the run's executor, under a wall-clock limit."""
            try:
                call_with_retries(
                    lambda: run_with_deadline(
                        lambda: provider.search(ctx.question[:300], max_results=1, timeout=timeout),
                        timeout + 1.0, f"{provider.name} search", ctx.executor.calls),
                    policy=RetryPolicy(attempts=ctx.config.max_retries + 1), deadline=deadline,
                    cancel=ctx.control.cancelled,
                )
            except ResearchError as exc:
                causes[provider.name] = exc
                return ctx.safe(str(exc))
            return None

        # The search pings go out with the model check (they do not depend on it); a model
        # that fails is still reported first and does not wait for a slow search ping.
        pending = [ctx.executor.tasks.submit(ping, provider) for provider in ctx.search]
        try:
            checked = _check_models(ctx)
        except BaseException:
            for future in pending:
                future.cancel()
            raise
        answers = [future.result() for future in pending]
        ctx.control.checkpoint()
        working, failures = [], []
        for provider, reason in zip(ctx.search, answers, strict=True):
            if reason is None:
                working.append(provider)
                continue
            failures.append(f"{provider.name}: {reason}")
            ctx.emit(SearchFailed(ctx.run_id, f"{provider.name} search is not working and "
                                  f"will not be used: {reason}", step="preflight",
                                  provider=provider.name, reason=reason))
        if not working:
            raise PreflightError(
                "No search provider could be reached, so no research can be done (answers "
                "are never written from model memory alone). "
                + "; ".join(f.rstrip(".") for f in failures)
                + ". " + search_hint(causes)
            )
        ctx.search[:] = working
        return {"models": [f"{p}/{m}" for p, m in sorted(checked)],
                "search": [p.name for p in working], "search_failed": failures}

    ctx.run_step("preflight", "preflight", "Checking the model and search providers", make)


def _check_models(ctx: RunContext) -> set[tuple[str, str]]:
    """One tiny call to every distinct model the run's roles use; the first failure ends the
    run with its real cause."""
    checked: set[tuple[str, str]] = set()
    agents = [ctx.lead] + [ctx.lead.delegate(r) for r in Role if r is not Role.LEAD]
    for agent in agents:
        key = (agent.llm.llm.provider, agent.llm.llm.model)
        if key in checked:
            continue
        checked.add(key)
        try:
            agent.llm.structured(
                [Message("user", 'Connection check. Reply with the JSON {"ok": true}.')],
                Ping, deadline=ctx.step_deadline(),
            )
        except ResearchError as exc:
            raise PreflightError(model_failure(agent.role, key, exc, ctx.safe(str(exc)))) from None
        server = server_of(agent.llm.llm)  # a model server of one's own: its window, said once
        notice = server.small_window_notice(key[1]) if server is not None else None
        if notice:
            ctx.emit(Warning(ctx.run_id, ctx.safe(notice), step="preflight"))
    return checked


def model_failure(role: str, key: tuple[str, str], exc: ResearchError, detail: str) -> str:
    """Pre-flight's message for a model that did not answer, naming the real cause."""
    provider = PROVIDER_NAMES.get(key[0], key[0])
    name = f"{voice.model_words(role)}, {key[1]} on {provider},"
    if isinstance(exc, AuthError):  # the cause and the fix, without the SDK's own wording
        return (f"{provider} did not accept the API key, so the research could not start. "
                f"Check {KEY_HINT.get(key[0], 'its settings')} in Settings, then press Resume.")
    if isinstance(exc, QuotaExhausted):
        var = KEY_HINT.get(key[0], "its settings").split(" ")[0]
        return (f"{name} cannot be used because the account's quota is used up (the key itself "
                f"works): {detail} Add credit, or set a key of another account in {var}.")
    if isinstance(exc, RateLimited):
        return (f"{name} is rate limiting requests and did not accept one within the retries: "
                f"{detail} Wait a minute, then press Resume.")
    if isinstance(exc, SchemaError):
        return (f"{name} answered, but not with the JSON it was asked for: {detail} Choose a "
                "model that supports structured (JSON) answers.")
    if isinstance(exc, ContextTooLong):
        return (f"{name} refused even a tiny prompt as too long: {detail} Check that the model "
                "name is right and that the server gives it a normal context window.")
    if isinstance(exc, ProviderError) and exc.status is not None and exc.status < 500:
        return f"{name} refused the request: {detail} Check the model name and its settings."
    return (f"{name} could not be reached: {detail} Check the network and the server address "
            f"({KEY_HINT.get(key[0], 'its settings')}).")


# The setting to check when a search service refuses its key.
SEARCH_KEYS = {"tavily": "TAVILY_API_KEY", "brave": "BRAVE_API_KEY", "exa": "EXA_API_KEY",
               "serper": "SERPER_API_KEY"}


def search_hint(causes: dict[str, ResearchError]) -> str:
    """What to do when no search provider answered, by what actually went wrong."""
    if any(isinstance(e, RateLimited) for e in causes.values()):
        limited = ", ".join(n for n, e in causes.items() if isinstance(e, RateLimited))
        return (f"{limited} is rate limiting requests (not a key problem): wait a minute, then "
                "press Resume, or add another search provider.")
    refused = [SEARCH_KEYS[n] for n, e in causes.items() if isinstance(e, AuthError) and n in SEARCH_KEYS]
    if refused:
        return f"Check {', '.join(refused)}, or choose other providers with DEEP_RESEARCH_SEARCH."
    if any(isinstance(e, QuotaExhausted) for e in causes.values()):
        return "A search quota is used up: wait for it to reset, or choose other providers."
    return ("Check the network connection, or choose other providers with "
            "DEEP_RESEARCH_SEARCH (the keyless 'web' search needs no key).")
