"""LLM providers behind one seam (`research.llm.base.LLM`) and a registry that builds them."""

from __future__ import annotations

from collections.abc import Callable

from research.core.config import Credentials, ResearchConfig
from research.core.errors import ConfigError
from research.llm.base import LLM


def _openai(model: str, config: ResearchConfig, credentials: Credentials) -> LLM:
    from research.llm.openai_llm import OpenAIChat

    key = credentials.get("openai")
    if not key and not config.openai_base_url:
        raise ConfigError(
            "OpenAI needs an API key: set OPENAI_API_KEY (or OPENAI_BASE_URL for a local "
            "OpenAI-compatible server such as Ollama, vLLM or LM Studio)."
        )
    return OpenAIChat(
        model, api_key=key, base_url=config.openai_base_url, timeout=config.request_timeout_s
    )


def _gemini(model: str, config: ResearchConfig, credentials: Credentials) -> LLM:
    from research.llm.gemini_llm import GeminiChat

    key = credentials.get("gemini")
    if not key:
        raise ConfigError("Gemini needs an API key: set GEMINI_API_KEY.")
    return GeminiChat(
        model, api_key=key, base_url=config.gemini_base_url, timeout=config.request_timeout_s
    )


def _anthropic(model: str, config: ResearchConfig, credentials: Credentials) -> LLM:
    from research.llm.anthropic_llm import AnthropicChat

    key = credentials.get("anthropic")
    if not key:
        raise ConfigError("Anthropic (Claude) needs an API key: set ANTHROPIC_API_KEY.")
    return AnthropicChat(
        model, api_key=key, base_url=config.anthropic_base_url, timeout=config.request_timeout_s
    )


PROVIDERS: dict[str, Callable[[str, ResearchConfig, Credentials], LLM]] = {
    "openai": _openai,
    "gemini": _gemini,
    "anthropic": _anthropic,
}


def build_llm(provider: str, model: str, config: ResearchConfig, credentials: Credentials) -> LLM:
    """The chat model for `provider`/`model`; ConfigError says what to set when it cannot."""
    factory = PROVIDERS.get(provider.strip().lower())
    if factory is None:
        raise ConfigError(
            f"Unknown LLM provider {provider!r}; known providers: {', '.join(PROVIDERS)}."
        )
    if not model.strip():
        raise ConfigError(f"No model given for provider {provider!r} (DEEP_RESEARCH_MODEL).")
    return factory(model.strip(), config, credentials)


__all__ = ["PROVIDERS", "build_llm"]
