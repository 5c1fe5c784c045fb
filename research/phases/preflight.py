"""Pre-flight: nothing starts without a working model and at least one working search.

`check_configuration` runs before a run is created (no network: keys and names only);
`run` is the run's first step and actually reaches each provider once.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pydantic import BaseModel

from research.agents import Role
from research.config import ROLES, Credentials, ResearchConfig
from research.context import RunContext
from research.errors import ConfigError, PreflightError, ResearchError
from research.events import SearchFailed
from research.llm import build_llm
from research.llm.base import Message
from research.search import build_search_providers
from research.search.base import SearchProvider

KEY_HINT = {
    "openai": "OPENAI_API_KEY (and OPENAI_BASE_URL for a local or compatible server)",
    "gemini": "GEMINI_API_KEY (and GEMINI_BASE_URL if you use a proxy)",
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
    def make() -> dict[str, Any]:
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
                raise PreflightError(
                    f"The {agent.role} model {key[0]}/{key[1]} could not be reached: "
                    f"{ctx.safe(str(exc))} Check {KEY_HINT.get(key[0], 'its settings')}."
                ) from None
        working, failures = [], []
        ctx.control.checkpoint()

        def ping(provider: SearchProvider) -> str | None:
            try:
                provider.search(ctx.question[:300], max_results=1,
                                timeout=min(30.0, ctx.config.request_timeout_s))
            except ResearchError as exc:
                return ctx.safe(str(exc))
            return None

        with ThreadPoolExecutor(max_workers=max(1, len(ctx.search))) as pool:
            answers = list(pool.map(ping, ctx.search))  # every provider at once
        for provider, reason in zip(ctx.search, answers, strict=True):
            if reason is None:
                working.append(provider)
                continue
            failures.append(f"{provider.name}: {reason}")
            ctx.emit(SearchFailed(ctx.run_id, f"{provider.name} search is not working and "
                                  f"will not be used: {reason}", step="preflight",
                                  data={"provider": provider.name}))
        if not working:
            raise PreflightError(
                "No search provider could be reached, so no research can be done (answers "
                "are never written from model memory alone). " + "; ".join(failures)
                + ". Set TAVILY_API_KEY, or choose other providers with DEEP_RESEARCH_SEARCH."
            )
        ctx.search[:] = working
        return {"models": [f"{p}/{m}" for p, m in sorted(checked)],
                "search": [p.name for p in working], "search_failed": failures}

    ctx.run_step("preflight", "preflight", "Checking the model and search providers", make)
