"""One frozen, validated configuration for a run, built once at the edge.

Precedence, lowest to highest:
  1. the defaults in `constants.py`
  2. the environment (`DEEP_RESEARCH_<NAME>`, `DEEP_RESEARCH_PROVIDER`, ...)
  3. the preset (a choice the user makes for this run)
  4. explicit arguments (CLI flags, dashboard widgets)

Inside the engine nothing reads `os.environ`: `from_env` is called by the CLI and the
dashboard, and the resulting object is passed down. API keys live in `Credentials`,
which is never serialised into the database or exports.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

from research.core.constants import CONSTANTS, DEFAULTS, PRESETS, bound_problem
from research.core.errors import ConfigError
from research.core.shapes import Shape, shape_of

ProviderName = Literal["openai", "gemini", "anthropic"]
ROLES = ("lead", "worker", "writer", "reviewer", "verifier", "auditor", "critic")
ENGINES = ("pipeline", "openai-deep-research", "gemini-deep-research", "all")
SEARCH_PROVIDERS = ("tavily", "web", "arxiv", "semanticscholar", "searxng", "brave", "exa", "serper")
ACADEMIC_PROVIDERS = ("arxiv", "semanticscholar")
DOCUMENTS = "documents"  # the person's own documents (research.search.documents), not the web
DEFAULT_MODELS = {"openai": "gpt-5-mini", "gemini": "gemini-2.5-flash",
                  "anthropic": "claude-haiku-4-5"}
ENV_PREFIX = "DEEP_RESEARCH_"

# Settings by name on their way in (from the environment, a preset, the form or the CLI's
# flags), before `ResearchConfig` validates them: the configuration's edge, where values are
# still whatever the person typed, so untyped until validation.
Settings = dict[str, Any]


class RoleModel(BaseModel):
    model_config = ConfigDict(frozen=True)
    provider: ProviderName
    model: str


class ResearchConfig(BaseModel):
    """Everything that shapes a run except secrets. Serialised with each run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    subtopic_count: int = DEFAULTS["SUBTOPIC_COUNT"]
    sources_per_subtopic: int = DEFAULTS["SOURCES_PER_SUBTOPIC"]
    searches_per_subtopic: int = DEFAULTS["SEARCHES_PER_SUBTOPIC"]
    review_cycles: int = DEFAULTS["REVIEW_CYCLES"]
    max_rounds: int = DEFAULTS["MAX_ROUNDS"]
    breadth: int = DEFAULTS["BREADTH"]
    depth: int = DEFAULTS["DEPTH"]
    source_relevance_threshold: float = DEFAULTS["SOURCE_RELEVANCE_THRESHOLD"]
    source_max_age_days: int = DEFAULTS["SOURCE_MAX_AGE_DAYS"]
    report_max_words: int = DEFAULTS["REPORT_MAX_WORDS"]
    require_clarification: bool = DEFAULTS["REQUIRE_CLARIFICATION"]
    include_academic_sources: bool = DEFAULTS["INCLUDE_ACADEMIC_SOURCES"]
    search_other_side: bool = DEFAULTS["SEARCH_OTHER_SIDE"]
    max_parallel_workers: int = DEFAULTS["MAX_PARALLEL_WORKERS"]
    step_timeout_ms: int = DEFAULTS["STEP_TIMEOUT_MS"]
    total_timeout_ms: int = DEFAULTS["TOTAL_TIMEOUT_MS"]

    preset: str = "standard"
    engine: Literal["pipeline", "openai-deep-research", "gemini-deep-research", "all"] = "pipeline"
    openai_deep_research_model: str = "o4-mini-deep-research"
    gemini_deep_research_agent: str = "deep-research-pro-preview-12-2025"
    hosted_poll_interval_s: float = 5.0
    schedule: Literal["rounds", "breadth_depth"] = "rounds"
    review_plan: bool = False
    # "Dig deeper": the title of the parent report's section the follow-up explores. Its text
    # is fetched from the parent report and shown to the planner as untrusted data.
    dig_deeper_section: str = Field(default="", max_length=300)
    # The person's goal (issue 14): an exit case that ends research early once met, and the
    # shape of the report they want. Their own words; both shown in the method notes.
    done_when: str = Field(default="", max_length=500)
    want: str = Field(default="", max_length=300)
    steer: bool = False  # "Ask me between rounds": wait after each round for the person's choice
    report_language: str = "English"
    max_cost_usd: float = 0.0     # 0 = no cap
    max_tokens: int = 0           # 0 = no cap
    max_sources: int = 0          # 0 = no cap
    provider: ProviderName = "openai"
    model: str = DEFAULT_MODELS["openai"]
    role_models: dict[str, RoleModel] = Field(default_factory=dict)
    search_providers: tuple[str, ...] = ("tavily", "web")
    # With "documents" among the providers: the documents it reads (both empty: all of them).
    document_collection: str = ""
    document_ids: tuple[str, ...] = ()
    openai_base_url: str | None = None
    gemini_base_url: str | None = None
    anthropic_base_url: str | None = None
    tavily_base_url: str | None = None
    arxiv_base_url: str | None = None
    semanticscholar_base_url: str | None = None
    # The person's own SearXNG instance (research.search.searxng); Brave's, Exa's and Serper's
    # addresses are set only for a proxy or a test's stand-in.
    searxng_base_url: str | None = None
    brave_base_url: str | None = None
    exa_base_url: str | None = None
    serper_base_url: str | None = None
    # arXiv's, Semantic Scholar's and Brave's documented pace times this (research.search.pacing): 1 as
    # documented; tests make it shorter (DEEP_RESEARCH_SEARCH_PACE=0 turns it off).
    search_pace: float = Field(default=1.0, ge=0.0, le=10.0)
    allow_private_hosts: bool = False
    allowed_ports: tuple[int, ...] = ()  # fetched besides 80, 443, 8080, 8443
    request_timeout_s: float = 60.0
    fetch_timeout_s: float = 20.0
    max_retries: int = 3

    @model_validator(mode="after")
    def _check(self) -> ResearchConfig:
        for const in CONSTANTS.values():
            problem = bound_problem(const.name, getattr(self, const.field))
            if problem:
                raise ValueError(problem)
        for field in ("max_cost_usd", "hosted_poll_interval_s", "request_timeout_s",
                      "fetch_timeout_s"):
            if not math.isfinite(getattr(self, field)):
                raise ValueError(f"{field} must be a finite number (got {getattr(self, field)}).")
        if self.preset not in PRESETS:
            raise ValueError(f"Unknown preset {self.preset!r}; choose one of {', '.join(PRESETS)}.")
        for name in self.search_providers:
            if name not in SEARCH_PROVIDERS and name != DOCUMENTS:
                raise ValueError(
                    f"Unknown search provider {name!r}; choose from {', '.join(SEARCH_PROVIDERS)}."
                )
        if not self.search_providers:
            raise ValueError("At least one search provider is needed (DEEP_RESEARCH_SEARCH).")
        if not 0 <= self.max_cost_usd <= 10_000:
            raise ValueError("The cost cap must be between 0 and 10000 US dollars (0 = no cap).")
        if self.max_tokens < 0 or self.max_sources < 0:
            raise ValueError("Token and source caps cannot be negative (0 = no cap).")
        if any(not 1 <= port <= 65535 for port in self.allowed_ports):
            raise ValueError("DEEP_RESEARCH_ALLOWED_PORTS takes port numbers from 1 to 65535, "
                             "separated by commas.")
        if not self.report_language.strip() or len(self.report_language) > 40:
            raise ValueError("The report language must be a language name such as English.")
        for role in self.role_models:
            if role not in ROLES:
                raise ValueError(f"Unknown role {role!r}; roles are {', '.join(ROLES)}.")
        return self

    def role(self, role: str) -> RoleModel:
        """Provider and model for a role; every role defaults to the lead's."""
        if role not in ROLES:
            raise ConfigError(f"Unknown role {role!r}; roles are {', '.join(ROLES)}.")
        if role in self.role_models:
            return self.role_models[role]
        if role != "lead" and "lead" in self.role_models:
            return self.role_models["lead"]
        return RoleModel(provider=self.provider, model=self.model)

    def shape(self) -> Shape:
        """The report's shape, from the desired output ("I want a one-page brief")."""
        return shape_of(self.want)

    def words_limit(self) -> int:
        """The report's length cap: REPORT_MAX_WORDS, or less when the shape asks for less."""
        return self.shape().words(self.report_max_words)

    def rounds_limit(self) -> int:
        """The most research rounds: DEPTH levels under the breadth x depth schedule,
        MAX_ROUNDS otherwise."""
        return self.depth if self.schedule == "breadth_depth" else self.max_rounds

    def active_search_providers(self) -> tuple[str, ...]:
        names = [n for n in self.search_providers if n not in ACADEMIC_PROVIDERS]
        if self.include_academic_sources and self.uses_web():
            names += [n for n in ACADEMIC_PROVIDERS if n in self.search_providers] or list(
                ACADEMIC_PROVIDERS
            )
        return tuple(dict.fromkeys(names))

    def uses_web(self) -> bool:
        """False for a documents-only run: no web search, no academic search, no search key."""
        return any(n != DOCUMENTS for n in self.search_providers)

    def uses_documents(self) -> bool:
        return DOCUMENTS in self.search_providers

    def constants(self) -> dict[str, int | float]:
        """The SPEC constants by their upper-case names (numbers; the on/off ones are bools)."""
        return {name: getattr(self, c.field) for name, c in CONSTANTS.items()}

    def parameters_line(self) -> str:
        c = self.constants()
        return (
            f"preset {self.preset}; {c['SUBTOPIC_COUNT']} subtopics, "
            f"{c['SOURCES_PER_SUBTOPIC']} sources/subtopic, {c['SEARCHES_PER_SUBTOPIC']} "
            f"searches/subtopic, {c['REVIEW_CYCLES']} review cycles, {c['MAX_ROUNDS']} rounds; "
            f"model {self.provider}/{self.model}"
        )


class Credentials(BaseModel):
    """API keys. Kept apart from ResearchConfig so they never get serialised."""

    model_config = ConfigDict(frozen=True)
    openai_api_key: SecretStr | None = None
    gemini_api_key: SecretStr | None = None
    anthropic_api_key: SecretStr | None = None
    tavily_api_key: SecretStr | None = None
    semanticscholar_api_key: SecretStr | None = None
    brave_api_key: SecretStr | None = None
    exa_api_key: SecretStr | None = None
    serper_api_key: SecretStr | None = None

    def get(self, name: str) -> str | None:
        value = getattr(self, f"{name}_api_key", None)
        return value.get_secret_value() if value else None

    def secrets(self) -> list[str]:
        """Every key value, for redaction."""
        values = (self.openai_api_key, self.gemini_api_key, self.anthropic_api_key,
                  self.tavily_api_key, self.semanticscholar_api_key, self.brave_api_key,
                  self.exa_api_key, self.serper_api_key)
        return [v.get_secret_value() for v in values if v]

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Credentials:
        def key(name: str) -> SecretStr | None:
            value = (env.get(name) or "").strip()
            return SecretStr(value) if value else None

        return cls(
            openai_api_key=key("OPENAI_API_KEY"),
            gemini_api_key=key("GEMINI_API_KEY") or key("GOOGLE_API_KEY"),
            anthropic_api_key=key("ANTHROPIC_API_KEY"),
            tavily_api_key=key("TAVILY_API_KEY"),
            semanticscholar_api_key=key("SEMANTIC_SCHOLAR_API_KEY"),
            brave_api_key=key("BRAVE_API_KEY"),
            exa_api_key=key("EXA_API_KEY"),
            serper_api_key=key("SERPER_API_KEY"),
        )


def _parse(name: str, raw: Any) -> Any:
    const = CONSTANTS[name]
    if not isinstance(raw, str):
        return raw
    text = raw.strip()
    try:
        if const.kind is bool:
            lowered = text.lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off", ""):
                return False
            raise ValueError
        if const.kind is int:
            return int(text)
        return float(text)
    except ValueError:
        raise ConfigError(f"{name} must be a {const.kind.__name__} (got {raw!r}).") from None


def _checked(name: str, value: Any, source: str) -> Any:
    """`value` if it is within the bounds of `name`; every layer is checked, not only the
    winner, so a bad environment value is refused even when a preset or flag overrides it."""
    problem = bound_problem(name, value)
    if problem is None:
        return value
    if source == "environment":
        problem = problem.removesuffix(".") + f" in the environment ({ENV_PREFIX}{name})."
    elif source:
        problem = problem.removesuffix(".") + f" in {source}."
    raise ConfigError(problem)


def _env_settings(env: Mapping[str, str]) -> Settings:
    out: Settings = {}
    for name in CONSTANTS:
        raw = env.get(ENV_PREFIX + name)
        if raw is not None and raw.strip() != "":
            out[name] = _parse(name, raw)
    provider = (env.get("DEEP_RESEARCH_PROVIDER") or "").strip().lower()
    if provider:
        out["provider"] = provider
    model = (env.get("DEEP_RESEARCH_MODEL") or "").strip()
    if model:
        out["model"] = model
    for role in ROLES:
        role_model = (env.get(f"DEEP_RESEARCH_{role.upper()}_MODEL") or "").strip()
        role_provider = (env.get(f"DEEP_RESEARCH_{role.upper()}_PROVIDER") or "").strip().lower()
        if role_model or role_provider:
            out.setdefault("role_models", {})[role] = {"model": role_model, "provider": role_provider}
    search = (env.get("DEEP_RESEARCH_SEARCH") or "").strip()
    if search:
        out["search_providers"] = tuple(s.strip().lower() for s in search.split(",") if s.strip())
    elif not (env.get("TAVILY_API_KEY") or "").strip():
        out["search_providers"] = ("web",)
    for field, var in (
        ("openai_base_url", "OPENAI_BASE_URL"),
        ("gemini_base_url", "GEMINI_BASE_URL"),
        ("anthropic_base_url", "ANTHROPIC_BASE_URL"),
        ("tavily_base_url", "TAVILY_BASE_URL"),
        ("arxiv_base_url", "ARXIV_BASE_URL"),
        ("semanticscholar_base_url", "SEMANTIC_SCHOLAR_BASE_URL"),
        ("searxng_base_url", "SEARXNG_BASE_URL"),
        ("brave_base_url", "BRAVE_BASE_URL"),
        ("exa_base_url", "EXA_BASE_URL"),
        ("serper_base_url", "SERPER_BASE_URL"),
    ):
        value = (env.get(var) or "").strip()
        if value:
            out[field] = value
    for field, var in (
        ("engine", "DEEP_RESEARCH_ENGINE"),
        ("openai_deep_research_model", "DEEP_RESEARCH_OPENAI_DEEP_RESEARCH_MODEL"),
        ("gemini_deep_research_agent", "DEEP_RESEARCH_GEMINI_AGENT"),
        ("report_language", "DEEP_RESEARCH_LANGUAGE"),
        ("schedule", "DEEP_RESEARCH_SCHEDULE"),
        ("max_cost_usd", "DEEP_RESEARCH_MAX_COST_USD"),
        ("max_tokens", "DEEP_RESEARCH_MAX_TOKENS"),
        ("max_sources", "DEEP_RESEARCH_MAX_SOURCES"),
        ("search_pace", "DEEP_RESEARCH_SEARCH_PACE"),
    ):
        value = (env.get(var) or "").strip()
        if value:
            out[field] = value
    private = (env.get("DEEP_RESEARCH_ALLOW_PRIVATE_HOSTS") or "").strip().lower()
    if private:
        out["allow_private_hosts"] = private in ("1", "true", "yes", "on")
    ports = (env.get("DEEP_RESEARCH_ALLOWED_PORTS") or "").strip()
    if ports:
        out["allowed_ports"] = _ports(ports)
    return out


def _ports(text: str) -> tuple[int, ...]:
    """"8000, 9000" as (8000, 9000); anything else is refused with the setting's name."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not all(p.isdigit() for p in parts):
        raise ConfigError(f"DEEP_RESEARCH_ALLOWED_PORTS must be port numbers separated by "
                          f"commas, such as 8000,9000 (not {text[:40]!r}).")
    return tuple(int(p) for p in parts)


def build_config(
    *,
    env: Mapping[str, str] | None = None,
    preset: str | None = None,
    **overrides: Any,
) -> ResearchConfig:
    """Build the run configuration; see the module docstring for precedence.

    `overrides` take either SPEC names (``SUBTOPIC_COUNT=8``) or field names
    (``subtopic_count=8``); ``None`` values are ignored so CLI flags can pass through.
    Raises ConfigError naming the setting and its bounds.
    """
    merged: Settings = {}
    layers: list[tuple[str, Settings]] = [("environment", _env_settings(env or {}))]
    if preset is not None:
        key = preset.strip().lower()
        if key not in PRESETS:
            raise ConfigError(f"Unknown preset {preset!r}; choose one of {', '.join(PRESETS)}.")
        layers.append((f"the {key} preset", {**PRESETS[key], "preset": key}))
    layers.append(("", {k: v for k, v in overrides.items() if v is not None}))
    for source, layer in layers:
        for key, value in layer.items():
            if key.upper() in CONSTANTS:
                merged[key.lower()] = _checked(key.upper(), _parse(key.upper(), value), source)
            else:
                merged[key] = value
    provider = merged.get("provider", "openai")
    if provider not in DEFAULT_MODELS:
        raise ConfigError(
            f"Unknown LLM provider {provider!r}; DEEP_RESEARCH_PROVIDER must be openai, gemini or anthropic."
        )
    merged.setdefault("model", DEFAULT_MODELS[provider])
    roles = merged.get("role_models") or {}
    resolved: Settings = {}
    for role, spec in roles.items():
        if isinstance(spec, RoleModel):
            resolved[role] = spec
            continue
        role_provider = spec.get("provider") or provider
        if role_provider not in DEFAULT_MODELS:
            raise ConfigError(f"Unknown LLM provider {role_provider!r} for role {role}.")
        role_model = spec.get("model") or (
            merged["model"] if role_provider == provider else DEFAULT_MODELS[role_provider]
        )
        resolved[role] = {"provider": role_provider, "model": role_model}
    if roles:
        merged["role_models"] = resolved
    try:
        return ResearchConfig(**merged)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        message = str(first.get("msg", "invalid value")).removeprefix("Value error, ")
        if first.get("type") == "extra_forbidden":
            message = f"Unknown setting {where!r}."
        elif where and where.upper() in CONSTANTS:
            message = f"{where.upper()}: {message}"
        raise ConfigError(message) from None


# -- durable runs (issue 18; research/runs/engine.py, research/runs/worker.py) ------------------------

MAX_RUNS_PER_PERSON = 3  # one person's runs executing at once, over all workers (fair share)
DEFAULT_PERSON = "local"  # the fair-share person of a run nobody signed in for (runs.person NULL)
WORKER_CONCURRENCY = 8  # runs one worker process executes at once, unless configured


@dataclass(frozen=True)
class WorkerSettings:
    """Who executes runs, read at the edge: `embedded` (the dashboard's own worker, the
    one-person default) or `external` (`python -m research worker` processes; dashboards
    and the CLI only enqueue, watch and control), and how many runs one worker runs at once.
    `jobs_url` overrides where the engine keeps its queue (e.g. a postgresql:// URL)."""

    mode: Literal["embedded", "external"] = "embedded"
    concurrency: int = WORKER_CONCURRENCY
    jobs_url: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> WorkerSettings:
        mode = (env.get("DEEP_RESEARCH_WORKERS") or "embedded").strip().lower()
        if mode not in ("embedded", "external"):
            raise ConfigError("DEEP_RESEARCH_WORKERS must be embedded or external.")
        raw = (env.get("DEEP_RESEARCH_WORKER_CONCURRENCY") or "").strip()
        if raw and not (raw.isdigit() and 1 <= int(raw) <= 64):
            raise ConfigError("DEEP_RESEARCH_WORKER_CONCURRENCY takes a number from 1 to 64.")
        return cls(mode="external" if mode == "external" else "embedded",
                   concurrency=int(raw) if raw else WORKER_CONCURRENCY,
                   jobs_url=(env.get("DEEP_RESEARCH_JOBS_DB") or "").strip() or None)
