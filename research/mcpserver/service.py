"""What the MCP tools do, as plain blocking functions of one person: start a run, read its
status and report, search the library of earlier runs. No MCP here: server.py calls these
from worker threads and turns them into tools and resources.

Settings come as the CLI reads them (research/core/settings.py: the environment over the secrets
file) and a run's configuration is built and checked as the CLI builds and checks it
(`build_config`, `check_configuration`, then the question's validation in `create_run`), so
the same bounds give the same messages. A person sees only their own runs: over stdio the
local person (DEEP_RESEARCH_OWNER, or nobody: every run, as the CLI), over HTTP the token's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from research import voice
from research.core.config import Credentials, ResearchConfig, build_config
from research.core.errors import ConfigError, ResearchError, redact
from research.core.progress import percent
from research.core.prompts import strip_control
from research.core.records import Run
from research.core.settings import effective_env, prices_path
from research.estimate import account_pace, estimate, estimate_line
from research.export.formats import export_document, export_run
from research.export.run_document import build_document_for_run
from research.llm.pricing import PriceTable
from research.mcpserver.costs import preset_costs
from research.mcpserver.door import Runs
from research.phases.start.preflight import check_configuration
from research.runs import status_of
from storage import (
    TERMINAL_STATUSES,
    DatabaseUnavailableError,
    DatabaseValueError,
    Store,
    default_db,
    redact_url,
)

Preset = Literal["quick", "standard", "deep", "exhaustive"]
REPORT_URI = "research://reports/{run_id}"
LIBRARY_LIMIT = 50


class Started(BaseModel):
    run_id: str
    status: str
    estimate: str = Field(description="the rough time and cost forecast made before the start")
    report_uri: str = Field(description="the report's MCP resource, readable once completed")


class Status(BaseModel):
    run_id: str
    question: str
    status: str = Field(description="queued, running, paused, waiting, completed, failed, "
                                    "cancelled or interrupted")
    status_text: str = Field(default="", description="the status as the person reads it in "
                             "the dashboard, e.g. 'Completed with warnings'")
    status_line: str = Field(default="", description="the status and what it means, in one "
                             "plain line: say this to the person")
    percent: int = Field(description="0-100; 100 only once completed")
    step: str = Field(description="what the run is doing now")
    message: str = Field(description="the run's latest progress line")
    queue_place: str = Field(description="where a queued run waits, in words")
    sources: int | None = None
    cost_usd: float | None = None
    warnings: list[str] = Field(default_factory=list)
    error: str = ""
    still_going: bool = Field(description="true while a worker has the run queued or running")


class Source(BaseModel):
    number: int = Field(description="the [n] the report cites it by")
    title: str
    url: str


class Report(BaseModel):
    run_id: str
    question: str
    status: str
    status_text: str = ""
    report_markdown: str = Field(description="the report, its numbered Sources list at the end "
                                             "(empty until the run has completed)")
    sources: list[Source] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    cost_usd: float | None = None
    message: str = ""


class LibraryEntry(BaseModel):
    run_id: str
    question: str
    status: str
    status_text: str = ""
    created_at: str
    sources: int | None = None
    cost_usd: float | None = None
    report_uri: str = Field(default="", description="set for completed runs")


@dataclass
class Service:
    """One store, this server's keys and prices, and the local person (stdio)."""

    env: dict[str, str]
    credentials: Credentials
    store: Store
    runs: Runs
    prices: PriceTable | None
    local_person: str | None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, *, db: str | None = None,
                 owner: str | None = None, runs: Runs | None = None) -> Service:
        """Settings as the CLI reads them: the environment over the secrets file. `runs`:
        the door of a process that already has a job manager for this store (the API
        server); otherwise one is made. Raises ResearchError (plain words) for a database or
        price table that cannot work."""
        env = effective_env(environ)
        credentials = Credentials.from_env(env)
        target = default_db({**env, "DEEP_RESEARCH_DB": db} if db else env)
        store = Store(target, secrets=credentials.secrets())
        person = (owner or env.get("DEEP_RESEARCH_OWNER") or "").strip() or None
        return cls(env, credentials, store, runs or Runs.of_store(target, lambda: credentials),
                   PriceTable.load(prices_path(env)), person)

    # -- tools ---------------------------------------------------------------------------

    def costs(self) -> str:
        return preset_costs(self.env, self.credentials, self.prices, self.store)

    def start(self, question: str, person: str | None, *, preset: Preset | None = None,
              subtopics: int | None = None, sources_per_subtopic: int | None = None,
              review_cycles: int | None = None, language: str | None = None,
              max_cost_usd: float | None = None) -> Started:
        """Queue a new run; nothing waits for a person's answer (no clarifying questions,
        plan review or steering: a calling program has nobody to ask)."""
        config = build_config(
            env=self.env, preset=preset, SUBTOPIC_COUNT=subtopics,
            SOURCES_PER_SUBTOPIC=sources_per_subtopic, REVIEW_CYCLES=review_cycles,
            REQUIRE_CLARIFICATION=False, review_plan=False, steer=False,
            report_language=language or None, max_cost_usd=max_cost_usd,
        )
        if self.runs.executed_here:  # a worker of its own checks its own keys
            check_configuration(config, self.credentials)
        forecast = self._forecast(config)
        run_id = self.runs.start(question, config, self.credentials, prices=self.prices,
                                 person=person)
        return Started(run_id=run_id, status="queued", estimate=forecast,
                       report_uri=REPORT_URI.format(run_id=run_id))

    def status(self, run_id: str, person: str | None) -> Status:
        run = self._run(run_id, person)
        alive = self.runs.is_alive(run_id)
        steps = self.store.get_steps(run_id)
        running = [s for s in steps if s.status in ("running", "retrying")]
        last = self.store.last_events(run_id, 1)
        error = run.error or (self.runs.crash(run_id) if not alive else "")
        shown = status_of(run, alive)
        return Status(
            run_id=run_id, question=strip_control(run.question), status=shown,
            status_text=voice.run_label(run, shown),
            status_line=self._clean(voice.status_line(run, shown)),
            percent=percent(run, steps), step=strip_control(running[-1].label if running else ""),
            message=self._clean(last[-1].message if last else ""),
            queue_place=self.runs.queue_place(run_id) if run.status == "queued" else "",
            sources=run.totals.sources, cost_usd=run.totals.cost_usd,
            warnings=[self._clean(w) for w in run.warnings], error=self._clean(error or ""),
            still_going=alive)

    def report(self, run_id: str, person: str | None) -> Report:
        run = self._run(run_id, person)
        shown = status_of(run, self.runs.is_alive(run_id))
        base = Report(run_id=run_id, question=strip_control(run.question), status=shown,
                      status_text=voice.run_label(run, shown), report_markdown="",
                      warnings=[self._clean(w) for w in run.warnings],
                      cost_usd=run.totals.cost_usd)
        if run.status != "completed" or self.store.get_report(run_id) is None:
            return base.model_copy(update={"message": self._clean(_unfinished(run, shown))})
        document = build_document_for_run(self.store, run_id)  # built once for both
        return base.model_copy(update={
            "report_markdown": export_document(self.store, run_id, document, "md").decode(),
            "sources": [Source(number=s.number, title=strip_control(s.title), url=s.url)
                        for s in document.sources]})

    def markdown(self, run_id: str, person: str | None) -> str:
        """The Markdown export (citations linked to its numbered Sources list; text from the
        web and models escaped there). ResearchError when there is no finished report."""
        run = self._run(run_id, person)
        if run.status != "completed":
            raise ResearchError(self._clean(_unfinished(run, status_of(
                run, self.runs.is_alive(run_id)))))
        return export_run(self.store, run_id, "md").decode("utf-8")

    def search(self, query: str, person: str | None, limit: int = 10) -> list[LibraryEntry]:
        """Earlier runs whose question contains `query` (any case), newest first."""
        found = self.store.list_runs(search=query.strip() or None, person=person,
                                     limit=max(1, min(int(limit), LIBRARY_LIMIT)))
        return [_entry(run, status_of(run, self.runs.is_alive(run.id))) for run in found]

    def finished(self, person: str | None, limit: int = LIBRARY_LIMIT) -> list[Run]:
        """The person's completed runs, newest first: their reports are the resources."""
        return self.store.list_runs(status="completed", person=person, limit=limit)

    # -- internals -----------------------------------------------------------------------

    def _run(self, run_id: str, person: str | None) -> Run:
        run = self.store.get_run(run_id.strip(), person=person)
        if run is None:  # another person's run reads as no run at all
            raise ResearchError(f"There is no run with id {run_id!r}.")
        return run

    def _forecast(self, config: ResearchConfig) -> str:
        if config.engine != "pipeline":
            return "A hosted research service does this run; it gives no estimate beforehand."
        guess = estimate(config, self.prices)
        return estimate_line(guess, account_pace(guess, config, self.credentials, self.store))

    def _clean(self, text: str) -> str:
        """Our own message for the person: no key, no terminal control, no setting or
        exception class names (research.voice.plain_error)."""
        return strip_control(redact(voice.plain_error(text), self.credentials.secrets()))


def _unfinished(run: Run, shown: str) -> str:
    """Why there is no report, led by the run's status line as it stands (`shown`:
    research.runs.status_of; research/voice.py)."""
    line = voice.status_line(run, shown)
    if shown in TERMINAL_STATUSES - {"completed"} or shown == "interrupted":
        return f"{line} Run {run.id} has no report."
    if shown == "waiting":
        return (f"{line} Open run {run.id} in the dashboard, or continue "
                f"it with python -m research --resume {run.id}.")
    return f"{line} The report of run {run.id} is not ready yet."


def _entry(run: Run, shown: str) -> LibraryEntry:
    return LibraryEntry(
        run_id=run.id, question=strip_control(run.question), status=shown,
        status_text=voice.run_label(run, shown), created_at=run.created_at,
        sources=run.totals.sources, cost_usd=run.totals.cost_usd,
        report_uri=REPORT_URI.format(run_id=run.id) if run.status == "completed" else "")


def open_service(environ: Mapping[str, str] | None = None, *, db: str | None = None,
                 owner: str | None = None, runs: Runs | None = None) -> Service:
    """`Service.from_env`, with every failure to open the store in plain words (as the CLI
    says them). Raises ConfigError."""
    try:
        return Service.from_env(environ, db=db, owner=owner, runs=runs)
    except (DatabaseValueError, DatabaseUnavailableError) as exc:
        raise ConfigError(str(exc)) from None
    except ResearchError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure to open the file, in plain words
        raise ConfigError(f"Could not open the database: {redact_url(str(exc))}") from None
