"""The local stand-in for OpenAI, Gemini, Tavily, arXiv, Semantic Scholar and web pages."""

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
