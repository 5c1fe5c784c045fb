"""A research run, top to bottom. Each phase lives in `research/phases/`.

    pre-flight -> clarify -> plan (-> the person reviews it) -> research rounds (parallel
    workers, follow-up triage) -> draft -> review cycles -> verify claims -> deliver

Every phase stores its result when it finishes, so `execute` on an interrupted run skips
what is done and continues where it stopped. A run that needs the person (answers to
clarifying questions, a plan review) stops with status "waiting" and continues the same
way once they have answered.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable
from concurrent.futures import wait
from datetime import UTC, date, datetime
from typing import Any

from research.core.agents import Role, Workflow
from research.core.config import Credentials, ResearchConfig
from research.core.constants import MAX_QUESTION_CHARS
from research.core.context import RunContext, ServiceHealth
from research.core.errors import (
    BudgetExceeded,
    BudgetStop,
    ConfigError,
    NeedsInput,
    ResearchError,
    RunCancelled,
    redact,
)
from research.core.events import (
    Cancelled,
    Completed,
    EventSink,
    Initiated,
    LimitWait,
    Resumed,
    Retrying,
    Waiting,
    Warning,
    fan_out,
)
from research.core.executor import RunExecutor
from research.core.records import ResearchResult, Run
from research.core.retry import RetryPolicy
from research.engines import HOSTED_ENGINES, LABELS, merge_for_delivery, run_hosted
from research.living import revise
from research.llm import build_llm
from research.llm.base import LLM, RoleLLM
from research.llm.budget import UsageMeter
from research.llm.pricing import PriceTable
from research.llm.waits import RunWaits, Wait
from research.phases import verify
from research.phases.decide import rounds
from research.phases.gather import research
from research.phases.start import clarify, inherit, plan, preflight
from research.phases.writing import deliver, review, write
from research.report.outcome import completion_warnings, nothing_gathered
from research.runs.control import RunControl, record_failure
from research.search import build_search_providers
from research.search.base import SearchProvider
from research.search.documents import bind_store
from research.untrusted.fetch import Fetcher, FetchLimits
from research.untrusted.html_text import warm_up
from research.untrusted.textclean import strip_hidden_controls
from storage import DISK_FULL_MESSAGE, Store, is_disk_full

log = logging.getLogger(__name__)

LLMFactory = Callable[[str, str, ResearchConfig, Credentials], LLM]
SearchFactory = Callable[[ResearchConfig, Credentials], list[SearchProvider]]


def validate_question(question: str) -> str:
    text = (question or "").strip()
    if not text:
        raise ConfigError("Please type a research question.")
    if len(text) > MAX_QUESTION_CHARS:
        raise ConfigError(
            f"The question is too long ({len(text)} characters); the limit is "
            f"{MAX_QUESTION_CHARS}. Shorten it or move details into separate runs."
        )
    if hidden := _hidden_characters(text):
        raise ConfigError(
            f"The question contains invisible control characters ({', '.join(hidden)}); "
            "they would be removed where the question is stored. Retype it without them."
        )
    return text


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def _hidden_characters(text: str) -> list[str]:
    """The control characters in `text` (line breaks and tabs are fine) and the invisible
    formatting controls the store removes (`strip_hidden_controls`), named as code points, so
    a question is refused rather than stored and researched as something else."""
    found = set(_CONTROL.findall(text)) | set(Counter(text) - Counter(strip_hidden_controls(text)))
    return [f"U+{ord(c):04X}" for c in sorted(found)]


def create_run(store: Store, question: str, config: ResearchConfig, **kwargs: Any) -> str:
    """Validate and store a new run (status queued). Secrets are never part of `config`."""
    kwargs.setdefault("engine", config.engine)
    return store.create_run(validate_question(question), config.model_dump(mode="json"), **kwargs)


def execute(
    run_id: str,
    *,
    store: Store,
    credentials: Credentials,
    on_event: EventSink | None = None,
    prices: PriceTable | None = None,
    llm_factory: LLMFactory = build_llm,
    search_factory: SearchFactory = build_search_providers,
    fetcher: Fetcher | None = None,
    today: date | None = None,
) -> Run:
    """Run (or continue) a stored run to its end. Returns the run as it ended.

    Never raises for a failed run: the failure is stored on the run and as an event.
    """
    run = store.get_run(run_id)
    if run is None:
        raise ConfigError(f"There is no run with id {run_id!r}.")
    if run.status == "completed":
        return run
    config = ResearchConfig(**run.config)
    secrets = credentials.secrets()
    emit = fan_out(store.log_event, *([on_event] if on_event else []))
    resuming = run.status not in ("queued",)
    store.set_control(run_id, None)
    store.set_run_warnings(run_id, [])
    store.set_run_status(run_id, "running")
    emit((Resumed if resuming else Initiated)(run_id, (
        "Resuming the run where it stopped." if resuming else f"Research started: {run.question[:200]}"
    )))
    control = RunControl(store, run_id, emit, total_timeout_s=config.total_timeout_ms / 1000)
    meter = UsageMeter(prices, on_record=lambda role, prov, model, i, o, cost: store.add_usage(
        run_id, role, prov, model, i, o, cost))
    health = ServiceHealth()
    executor = RunExecutor(config, name=f"run-{run_id[:6]}")
    own_fetcher = fetcher is None
    if fetcher is None:
        fetcher = Fetcher(FetchLimits(
            timeout_s=config.fetch_timeout_s, allow_private_hosts=config.allow_private_hosts,
            allowed_ports=config.allowed_ports))

    def waited(wait: Wait) -> None:  # one line per wait episode per account
        emit(LimitWait(run_id, redact(wait.text, secrets), provider=wait.account.provider,
                       model=wait.account.model, wait_s=round(wait.seconds, 1)))

    waits = RunWaits(waited, cancel=control.cancelled, until=lambda: control.deadline,
                     books=store)

    def make_llm(role: Role) -> RoleLLM:
        spec = config.role(role.value)
        return RoleLLM(
            llm_factory(spec.provider, spec.model, config, credentials), role.value, meter,
            policy=RetryPolicy(attempts=config.max_retries + 1),
            call_timeout=config.request_timeout_s,
            on_retry=lambda msg: emit(Retrying(run_id, redact(msg, secrets))),
            cancel=control.cancelled,
            on_failure=lambda label, exc: health.record(f"the model service {label}"),
            calls=lambda: executor.calls,
            slots=executor.model_slots,
            waits=waits,
        )

    try:
        with Workflow(run_id, make_llm) as workflow:
            ctx = RunContext(
                executor=executor,
                run_id=run_id, question=run.question, config=config, store=store, emit=emit,
                control=control, lead=workflow.lead(),
                search=bind_store(search_factory(config, credentials), store), fetcher=fetcher,
                today=today or datetime.now(UTC).date(), secrets=secrets,
                meter=meter, usage_before=store.usage_totals(run_id), credentials=credentials,
                health=health, waits=waits,
            )
            if config.engine in HOSTED_ENGINES:
                _hosted_only(ctx, config.engine)
            else:
                _pipeline(ctx, with_hosted=config.engine == "all")
            warnings = completion_warnings(ctx)
        store.set_run_warnings(run_id, [redact(w, secrets) for w in warnings])
        _finish(store, run_id, meter, "completed")
        for warning in warnings:
            emit(Warning(run_id, redact(warning, secrets)))
        emit(Completed(run_id, "Research complete. The report is ready" + (
            f", with {len(warnings)} warning{'s' if len(warnings) != 1 else ''}." if warnings
            else "."), warnings=len(warnings)))
    except NeedsInput as exc:
        _finish(store, run_id, meter, "waiting")
        emit(Waiting(run_id, str(exc)))
    except RunCancelled:
        _finish(store, run_id, meter, "cancelled")
        emit(Cancelled(run_id, "The run was cancelled. Everything gathered so far is kept."))
    except (BudgetExceeded, ResearchError) as exc:  # the time limit: resumable, said so
        _add_up(store, run_id)
        record_failure(store, run_id, redact(str(exc), secrets), emit)
    except Exception as exc:  # noqa: BLE001 - the run must end in a stored, readable state
        if is_disk_full(exc):  # this write may fail too; then the caller says it plainly
            _finish(store, run_id, meter, "interrupted", DISK_FULL_MESSAGE)
            return store.get_run(run_id) or run
        log.exception("run %s crashed", run_id)
        message = ("The run stopped because of a problem in the program itself (not in your "
                   "question, settings or keys; the details are in the log). Everything gathered "
                   "so far is kept: Resume tries again from where it stopped.")
        _add_up(store, run_id)
        record_failure(store, run_id, message, emit)
    finally:
        control.stop()
        executor.close()
        if own_fetcher:
            fetcher.close()
    return store.get_run(run_id) or run  # (or as it started, if deleted meanwhile)


def _pipeline(ctx: RunContext, *, with_hosted: bool) -> None:
    """The built-in multi-agent pipeline; with "all", the hosted engines run beside it."""
    if revise.is_update(ctx):  # an update reuses its earlier version's plan (research/living)
        revise.prepare(ctx)
    early_plan = plan.ahead(ctx)  # the plan's call goes out beside pre-flight and clarify
    ctx.executor.tasks.submit(warm_up)  # the page extractor loads while the plan is written
    preflight.run(ctx)
    clarify.run(ctx)
    planned = plan.run(ctx, inherit.run(ctx), early_plan)
    plan.review_gate(ctx)
    found = _research(ctx, planned, with_hosted=with_hosted)
    ctx.executor.trim()  # research's many threads are not needed by writing and verifying
    if not found.sources:
        raise ResearchError(nothing_gathered(ctx))
    if revise.is_update(ctx) and revise.found_nothing_new(ctx):
        revise.keep_earlier(ctx)  # the earlier report stands: nothing to write or verify
        revise.what_changed(ctx)
        deliver.run(ctx, found.failed)
        return
    if revise.is_update(ctx):  # what new evidence changed is written from the new evidence
        found = revise.without_superseded(ctx, found)
    if with_hosted and found.failed and len(found.failed) == len(found.researched):
        merge_for_delivery(ctx, list(HOSTED_ENGINES))  # only the hosted engines delivered
    else:
        write.draft(ctx, found)
    # Over budget: write up what was gathered, no more. Asked to write up now: no more
    # review, but the report is verified like any other.
    if not ctx.budget_reason() or ctx.wrapping_up():
        reviewed = review.run(ctx, found)  # the final sections' checks may start here
        verify.run(ctx, found.failed, reviewed.early)
    if revise.is_update(ctx):
        revise.what_changed(ctx)  # the report opens with "What changed since <date>"
    deliver.run(ctx, found.failed)


def _research(ctx: RunContext, planned: plan.PlanResult, *, with_hosted: bool) -> ResearchResult:
    """The research rounds under the budget's guard; with "all", the hosted engines run beside
    them and end with them (a stop ends them), and what they found is gathered too."""
    hosted = [ctx.executor.units.submit(_hosted_beside, ctx, name)
              for name in HOSTED_ENGINES] if with_hosted else []
    try:
        ctx.guard_model_calls()
        try:
            found = rounds.run(ctx, research.run(ctx, planned))
        finally:
            ctx.release_model_calls()
    finally:
        wait(hosted)
    for future in hosted:
        future.result()  # cancellation and the time limit stop the whole run
    return research.gathered(ctx) if hosted else found


def _hosted_beside(ctx: RunContext, engine: str) -> None:
    """One hosted engine next to the pipeline: its failure is an event, not the run's end."""
    try:
        run_hosted(ctx, engine)
    except BudgetStop as exc:  # the cap stops this engine like the pipeline's research
        ctx.emit(Warning(ctx.run_id, f"{LABELS.get(engine, engine)}: {ctx.safe(str(exc))}",
                         step=f"engine:{engine}"))
    except ResearchError as exc:  # a stop (cancel, time limit) is not an error: it ends the run
        ctx.emit(Warning(ctx.run_id, f"{LABELS.get(engine, engine)} failed: {ctx.safe(str(exc))}",
                         step=f"engine:{engine}"))


def _hosted_only(ctx: RunContext, engine: str) -> None:
    """A run handed to one hosted deep-research service, then verified and delivered."""
    clarify.run(ctx)
    run_hosted(ctx, engine)
    merge_for_delivery(ctx, [engine])
    if not ctx.budget_reason() or ctx.wrapping_up():
        verify.run(ctx, ())
    deliver.run(ctx, ())


def _finish(store: Store, run_id: str, meter: UsageMeter, status: str, error: str | None = None) -> None:
    _add_up(store, run_id)
    store.set_run_status(run_id, status, error=error)


def _add_up(store: Store, run_id: str) -> None:
    """The run's totals as the store has them now (at the end of each session)."""
    usage = store.usage_totals(run_id)
    store.update_totals(
        run_id, sources=store.count_sources(run_id), queries=len(store.get_queries(run_id)),
        tokens=usage.tokens, cost_usd=round(usage.cost_usd, 6), calls=usage.calls,
    )
