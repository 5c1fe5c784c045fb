"""Hosted deep-research engines over real HTTP: the real `openai` and `google-genai` SDKs talk
to the stand-in's Responses and Interactions APIs (tests/standin/hosted.py), cited pages are
fetched from the stand-in, the store is a real SQLite file, exports are real Markdown and PDF.

`run_hosted` is driven from a RunContext built the way `research.pipeline.execute` builds it
(`_context` below), since wiring the engines into the pipeline is a separate change."""

from __future__ import annotations

import io
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from pypdf import PdfReader

from research.control import RunControl
from research.core.agents import Role, Workflow
from research.core.config import Credentials, ResearchConfig, build_config
from research.core.context import RunContext
from research.core.errors import BudgetExceeded, ConfigError, ProviderError, QuotaExhausted, RunCancelled
from research.core.events import fan_out
from research.engines import (
    engine_document,
    engine_reports,
    merge_for_delivery,
    run_hosted,
)
from research.engines.base import Citation
from research.engines.hosted import rewrite_citations
from research.export import to_markdown, to_pdf
from research.export.run_document import build_document_for_run
from research.llm import build_llm
from research.llm.base import RoleLLM
from research.llm.budget import UsageMeter
from research.phases.writing import deliver
from research.pipeline import create_run
from research.search import build_search_providers
from research.untrusted.fetch import Fetcher, FetchLimits
from research.untrusted.urls import canonical_url
from storage import Store
from tests.standin import OPENAI_INSUFFICIENT_QUOTA, StandinServer
from tests.standin import hosted as remote
from tests.standin.pages import article_meta
from tests.store_files import migrated_copy

QUESTION = "How is heat pump adoption changing in Europe?"
ENGINES = {"openai-deep-research": "openai_responses", "gemini-deep-research": "gemini_interactions"}


@contextmanager
def _context(env: dict[str, str], db: Path, *, run_id: str | None = None, engine: str = "openai-deep-research",
             total_timeout_s: float | None = None) -> Iterator[RunContext]:
    """A RunContext as `pipeline.execute` builds one (new run, or `run_id` to resume)."""
    credentials = Credentials.from_env(env)
    store = Store(db if db.exists() else migrated_copy(db), secrets=credentials.secrets())
    if run_id is None:
        config = build_config(env=env, engine=engine, fetch_timeout_s=3, hosted_poll_interval_s=0.05,
                              max_retries=2)
        run_id = create_run(store, QUESTION, config, engine=engine)
    run = store.get_run(run_id)
    assert run is not None
    config = ResearchConfig(**run.config)
    store.set_run_status(run_id, "running")
    emit = fan_out(store.log_event)
    control = RunControl(store, run_id, emit,
                         total_timeout_s=total_timeout_s or config.total_timeout_ms / 1000)
    meter = UsageMeter()
    fetcher = Fetcher(FetchLimits(timeout_s=config.fetch_timeout_s,
                                  allow_private_hosts=config.allow_private_hosts,
                                  allowed_ports=config.allowed_ports))

    def make_llm(role: Role) -> RoleLLM:
        spec = config.role(role.value)
        return RoleLLM(build_llm(spec.provider, spec.model, config, credentials), role.value, meter,
                       cancel=control.cancelled)

    try:
        with Workflow(run_id, make_llm) as workflow:
            yield RunContext(
                run_id=run_id, question=run.question, config=config, store=store, emit=emit,
                control=control, lead=workflow.lead(), search=build_search_providers(config, credentials),
                fetcher=fetcher, today=date(2026, 11, 20), secrets=credentials.secrets(),
            )
    finally:
        control.stop()
        fetcher.close()


def _creds(env: dict[str, str]) -> Credentials:
    return Credentials.from_env(env)


def _calls(standin: StandinServer, api: str, task: str) -> list[dict[str, Any]]:
    return [r for r in standin.requests_for(api) if remote.task_of(api, r["method"], r["path"]) == task]


def _pdf_text(data: bytes) -> str:
    return "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(data)).pages)


def _in_thread(fn: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["result"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, outcome


def _wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "timed out waiting"
        time.sleep(0.02)


@pytest.mark.parametrize("engine", list(ENGINES))
def test_engine_completes_after_polls_with_cited_sources_and_exports(
    standin: StandinServer, standin_env: dict[str, str], tmp_db: Path, engine: str
) -> None:
    api = ENGINES[engine]
    standin.hosted.polls_to_complete = 4
    with _context(standin_env, tmp_db, engine=engine) as ctx:
        result = run_hosted(ctx, engine, credentials=_creds(standin_env))
        merge_for_delivery(ctx, [engine])
        deliver.run(ctx, [])
        store, run_id = ctx.store, ctx.run_id

    assert result["status"] == "completed" and result["engine"] == engine
    assert len(_calls(standin, api, "create")) == 1
    assert len(_calls(standin, api, "retrieve")) == 4
    create = _calls(standin, api, "create")[0]["json"]
    assert create["background"] is True and QUESTION in create["input"]
    assert standin.count("openai") == standin.count("gemini") == 0  # no chat model was needed

    # Every stored source is a page the engine cited, and every cited page is stored once.
    cited = {canonical_url(u) for u in remote.cited_urls(standin.base_url, QUESTION, api)}
    sources = store.get_sources(run_id)
    assert {s.canonical_url for s in sources} == cited
    assert result["sources"] == len(cited)
    for s in sources:
        assert (s.provider, s.subtopic_id, s.relevance) == (engine, engine, 1.0)
        assert s.text.strip()
    articles = [s for s in sources if "/pages/article/" in s.url]
    for s in articles:  # read from the page itself: title, date and full text
        meta = article_meta(s.url.rsplit("/", 1)[-1].split("?")[0])
        assert meta["snippet"] in s.text and s.published == meta["published"]
    unread = [s for s in sources if "/pages/missing/" in s.url]
    if engine == "gemini-deep-research":  # a 404 page keeps the passage the report cites
        assert unread and "could not be read" in unread[0].relevance_reason
        assert unread[0].text == "Older statistics put the figures lower."

    # The engine's report: [n] markers only, each after the claim its source supports.
    [report] = engine_reports(store, run_id)
    assert report.status == "completed" and report.polls == 4 and report.words > 50
    markdown, numbering = report.markdown, report.numbering
    by_id = {s.id: s for s in sources}
    assert "[cite:" not in markdown and "](" not in markdown.split("## Sources")[0]
    used = {int(n) for n in re.findall(r"\[(\d+)\]", markdown.split("## Sources")[0])}
    assert used == set(numbering) and set(numbering.values()) <= set(by_id)
    for n, sid in numbering.items():
        url = by_id[sid].url
        if "/pages/article/" in url:  # the article's claim is followed by its own number
            claim = article_meta(url.rsplit("/", 1)[-1].split("?")[0])["snippet"].rstrip(".")
            assert re.search(re.escape(claim) + r" (\[\d+\])*\[" + str(n) + r"\]", markdown), (n, url)

    assert [q.provider for q in store.get_queries(run_id)] and all(
        q.provider == engine for q in store.get_queries(run_id))
    usage = store.get_usage(run_id)
    assert [(u.role, u.calls) for u in usage] == [("engine", 1)] and usage[0].output_tokens > 0
    steps = {s.key: s for s in store.get_steps(run_id)}
    assert steps[f"engine:{engine}"].status == "done"
    assert steps[f"engine:{engine}"].source_count == len(cited)

    # Delivered like any run: draft 1 is the engine's report; Markdown and PDF exports.
    [draft] = store.get_drafts(run_id)
    assert draft.kind == f"engine:{engine}" and draft.numbering == numbering
    doc = build_document_for_run(store, run_id)
    out = to_markdown(doc)
    assert "## Sources" in out and len(doc.sources) == len(numbering)
    linked = re.findall(r"\]\((https?://[^)\s]+)\)", out)
    assert linked and all(canonical_url(u) in cited for u in linked)
    pdf = _pdf_text(to_pdf(doc))
    assert "Sources" in pdf and doc.sources[0].title.split(":")[0] in pdf


def test_all_engines_in_one_run_share_one_source_list(
    standin: StandinServer, standin_env: dict[str, str], tmp_db: Path
) -> None:
    with _context(standin_env, tmp_db, engine="all") as ctx:
        threads = [_in_thread(lambda e=e: run_hosted(ctx, e, credentials=_creds(standin_env)))  # type: ignore[misc]
                   for e in ENGINES]
        for thread, outcome in threads:
            thread.join(30)
            assert "error" not in outcome, outcome.get("error")
        store, run_id = ctx.store, ctx.run_id

    openai_urls = {canonical_url(u) for u in remote.cited_urls(standin.base_url, QUESTION, "openai_responses")}
    gemini_urls = {canonical_url(u) for u in remote.cited_urls(standin.base_url, QUESTION, "gemini_interactions")}
    shared = openai_urls & gemini_urls
    assert len(shared) == 2  # the same two articles, one cited with ?utm_source=openai
    sources = store.get_sources(run_id)
    assert {s.canonical_url for s in sources} == openai_urls | gemini_urls
    reports = engine_reports(store, run_id)
    assert [r.engine for r in reports] == list(ENGINES)
    ids = [{s.id for s in sources if s.canonical_url in shared}]
    for r in reports:
        assert ids[0] <= set(r.numbering.values())
        doc = engine_document(store, run_id, r.engine)
        assert {s.source_id for s in doc.sources} == set(r.numbering.values())
        assert "Sources" in _pdf_text(to_pdf(doc))


@pytest.mark.parametrize("engine", list(ENGINES))
def test_failed_remote_job_gives_a_readable_error(
    standin: StandinServer, standin_env: dict[str, str], tmp_db: Path, engine: str
) -> None:
    standin.hosted.fail_message = "The research agent hit an internal error."
    with _context(standin_env, tmp_db, engine=engine) as ctx:
        with pytest.raises(ProviderError, match="failed: The research agent hit an internal error"):
            run_hosted(ctx, engine, credentials=_creds(standin_env))
        store, run_id = ctx.store, ctx.run_id
    step = store.get_step(run_id, f"engine:{engine}")
    assert step is not None and step.status == "failed" and "internal error" in step.error
    [report] = engine_reports(store, run_id)
    assert report.status == "failed" and "internal error" in report.error
    assert store.count_sources(run_id) == 0


@pytest.mark.parametrize("engine", list(ENGINES))
def test_rate_limits_and_server_errors_on_create_and_poll_are_retried(
    standin: StandinServer, standin_env: dict[str, str], tmp_db: Path, engine: str
) -> None:
    api = ENGINES[engine]
    retry_after = {"retry-after": "0"} if api == "openai_responses" else {}
    standin.add_fault(api, "status", status=429, task="create", headers=retry_after)
    standin.add_fault(api, "status", status=500, task="retrieve")
    with _context(standin_env, tmp_db, engine=engine) as ctx:
        result = run_hosted(ctx, engine, credentials=_creds(standin_env))
        events = [e.type for e in ctx.store.get_events(ctx.run_id)]
    assert result["status"] == "completed"
    assert len(_calls(standin, api, "create")) == 2  # one refused, one accepted: one job
    assert len(standin.hosted.jobs) == 1
    assert events.count("retrying") == 2


def test_exhausted_quota_fails_at_once_with_a_clear_message(
    standin: StandinServer, standin_env: dict[str, str], tmp_db: Path
) -> None:
    standin.add_fault("openai_responses", "status", status=429, body=OPENAI_INSUFFICIENT_QUOTA)
    with _context(standin_env, tmp_db) as ctx:
        with pytest.raises(QuotaExhausted, match="run out of credit"):
            run_hosted(ctx, "openai-deep-research", credentials=_creds(standin_env))
    assert len(_calls(standin, "openai_responses", "create")) == 1


@pytest.mark.parametrize("engine", list(ENGINES))
def test_cancelling_the_run_cancels_the_remote_job(
    standin: StandinServer, standin_env: dict[str, str], tmp_db: Path, engine: str
) -> None:
    api = ENGINES[engine]
    standin.hosted.polls_to_complete = 10_000
    with _context(standin_env, tmp_db, engine=engine) as ctx:
        thread, outcome = _in_thread(lambda: run_hosted(ctx, engine, credentials=_creds(standin_env)))
        _wait_for(lambda: len(_calls(standin, api, "retrieve")) >= 2)
        ctx.store.set_control(ctx.run_id, "cancel")  # what the dashboard's Cancel button does
        thread.join(10)
        assert isinstance(outcome.get("error"), RunCancelled)
        store, run_id = ctx.store, ctx.run_id
    [job] = standin.hosted.jobs.values()
    cancels = _calls(standin, api, "cancel")
    assert len(cancels) == 1 and job.id in cancels[0]["path"] and job.status == "cancelled"
    [report] = engine_reports(store, run_id)
    assert report.status == "cancelled" and report.remote_id == job.id
    step = store.get_step(run_id, f"engine:{engine}")
    assert step is not None and step.status == "failed"


@pytest.mark.parametrize("engine", list(ENGINES))
def test_resumed_run_polls_the_same_remote_job_instead_of_starting_another(
    standin: StandinServer, standin_env: dict[str, str], tmp_db: Path, engine: str
) -> None:
    api = ENGINES[engine]
    standin.hosted.polls_to_complete = 10_000
    with _context(standin_env, tmp_db, engine=engine, total_timeout_s=2.0) as ctx:
        with pytest.raises(BudgetExceeded):  # the run hits its time limit mid-job
            run_hosted(ctx, engine, credentials=_creds(standin_env))
        run_id = ctx.run_id
    [job] = standin.hosted.jobs.values()
    # Still running remotely (only queued if the machine was too loaded to poll it in time),
    # and not cancelled: the limit stops our run, not the paid remote job.
    assert job.status in ("queued", "in_progress") and not _calls(standin, api, "cancel")

    standin.hosted.polls_to_complete = job.polls + 2
    with _context(standin_env, tmp_db, run_id=run_id) as ctx:
        result = run_hosted(ctx, engine, credentials=_creds(standin_env))
        before = len(standin.requests)
        again = run_hosted(ctx, engine, credentials=_creds(standin_env))  # done: skipped
        assert len(standin.requests) == before and again == result
    assert result["status"] == "completed" and result["remote_id"] == job.id
    assert len(_calls(standin, api, "create")) == 1
    assert {r["path"].split("/")[3] for r in _calls(standin, api, "retrieve")} == {job.id}
    assert engine_reports(Store(tmp_db), run_id)[0].status == "completed"


def test_missing_key_is_a_clear_configuration_error(
    standin_env: dict[str, str], tmp_db: Path
) -> None:
    env = {k: v for k, v in standin_env.items() if k != "GEMINI_API_KEY"}
    with _context(standin_env, tmp_db, engine="gemini-deep-research") as ctx:
        with pytest.raises(ConfigError, match="GEMINI_API_KEY"):
            run_hosted(ctx, "gemini-deep-research", credentials=_creds(env))
        step = ctx.store.get_step(ctx.run_id, "engine:gemini-deep-research")
    assert step is not None and step.status == "failed"


def test_citation_rewriting_replaces_links_and_drops_the_services_own_markers() -> None:
    text = ("Costs fell 12% ([Report](https://a.example/r?utm_source=openai)). "
            "Sales rose [3]. Prices held [cite: 4].")
    link_start = text.index("[Report]")
    link_end = text.index(")", link_start) + 1
    citations = [
        Citation("https://a.example/r?utm_source=openai", "Report", link_start, link_end),
        Citation("https://b.example/s", "S", text.index("Sales"), text.index(" [3]")),
        Citation("https://c.example/p", "P", link_start + 2, link_start + 4),  # inside the link
        Citation("https://d.example/q", "Q", 10_000, 10_001),                  # out of range
    ]
    numbers = {"https://a.example/r?utm_source=openai": 1, "https://b.example/s": 2,
               "https://c.example/p": 3, "https://d.example/q": 4}
    out = rewrite_citations(text, citations, numbers.__getitem__)
    assert out == "Costs fell 12% [1][3]. Sales rose [2]. Prices held. [4]"
