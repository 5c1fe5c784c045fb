"""The local stand-in for OpenAI, Gemini, Anthropic, Tavily, arXiv, Semantic Scholar and web pages."""

import importlib
import pkgutil

from tests.standin.anthropic import ANTHROPIC_KEY, anthropic_error
from tests.standin.server import (
    GEMINI_KEY,
    OPENAI_INSUFFICIENT_QUOTA,
    OPENAI_KEY,
    OPENAI_RATE_LIMIT,
    TAVILY_KEY,
    StandinServer,
    gemini_error,
    gemini_quota_error,
    openai_error,
)

__all__ = [
    "ANTHROPIC_KEY",
    "anthropic_error",
    "GEMINI_KEY",
    "OPENAI_INSUFFICIENT_QUOTA",
    "OPENAI_KEY",
    "OPENAI_RATE_LIMIT",
    "TAVILY_KEY",
    "StandinServer",
    "gemini_error",
    "gemini_quota_error",
    "openai_error",
]

# Answer builders for further tasks live in brain_*.py modules; importing them registers them.
for _module in pkgutil.iter_modules(__path__):
    if _module.name.startswith("brain_"):
        importlib.import_module(f"{__name__}.{_module.name}")
