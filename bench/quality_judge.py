"""The judge: a chat model asked for structured verdicts, through the same seam as a run's models.

A judge is named `provider:model` (`--judge gemini:gemini-2.5-pro`). Its calls go through
`research.llm.base.RoleLLM` (retries, pacing by the account's limits, one repair of a malformed
answer) with a usage meter of its own, so the judge's tokens and cost are reported apart from the
runs'. Texts judged (reports, reference reports, pages) are untrusted: they are placed in
`<untrusted_source>` blocks, never read as instructions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from pydantic import BaseModel

from research.core.config import DEFAULT_MODELS, Credentials, ResearchConfig
from research.core.errors import ConfigError
from research.core.prompts import new_nonce, untrusted_block
from research.core.retry import RetryPolicy
from research.llm import build_llm
from research.llm.base import RoleLLM
from research.llm.budget import UsageMeter
from research.llm.messages import Message
from research.llm.pricing import PriceTable

M = TypeVar("M", bound=BaseModel)

# The benchmark's own judges (utils/api.py in its repository): Gemini 2.5 Pro scores RACE,
# Gemini 2.5 Flash extracts and checks FACT's citations.
DEFAULT_RACE_JUDGE = "gemini:gemini-2.5-pro"
DEFAULT_FACT_JUDGE = "gemini:gemini-2.5-flash"
JUDGE_TIMEOUT_S = 300.0  # a RACE call reads two long reports and writes ~40 scored criteria


@dataclass(frozen=True)
class JudgeSpec:
    provider: str
    model: str

    @property
    def label(self) -> str:
        return f"{self.provider}/{self.model}"

    @classmethod
    def parse(cls, text: str) -> JudgeSpec:
        """`provider:model` (or `provider/model`; a bare provider takes its default model)."""
        provider, _, model = text.strip().replace("/", ":", 1).partition(":")
        provider = provider.strip().lower()
        if provider not in DEFAULT_MODELS:
            raise ConfigError(f"Unknown judge provider {provider!r} in {text!r}; write it as "
                              f"PROVIDER:MODEL with PROVIDER one of {', '.join(DEFAULT_MODELS)}.")
        return cls(provider, model.strip() or DEFAULT_MODELS[provider])


class Judge:
    """One judge model and what it has cost so far."""

    def __init__(self, spec: JudgeSpec, config: ResearchConfig, credentials: Credentials,
                 prices: PriceTable | None = None) -> None:
        self.spec = spec
        self.meter = UsageMeter(prices)
        llm = build_llm(spec.provider, spec.model, config, credentials)
        self._llm = RoleLLM(llm, "judge", self.meter, call_timeout=JUDGE_TIMEOUT_S,
                            policy=RetryPolicy(attempts=max(1, config.max_retries + 1)))

    def ask(self, system: str, user: str, answer: type[M]) -> M:
        return self._llm.structured([Message("system", system), Message("user", user)], answer)

    @property
    def cost_usd(self) -> float:
        return sum(t.cost_usd for t in self.meter.totals.values())

    @property
    def tokens(self) -> int:
        return sum(t.tokens for t in self.meter.totals.values())


def block(name: str, text: str) -> str:
    """A text to judge, fenced as untrusted data (research.core.prompts)."""
    return untrusted_block(name, {}, text, new_nonce())
