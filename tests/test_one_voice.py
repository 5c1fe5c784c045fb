"""One status, one voice (issue 39, point 5): a run in a given state is said in the same words
on every surface a person reads, with no internal terms and one way of writing money.

Eight runs are written straight into one store (no engine): finished, failed with a refused
key, cancelled, wrapped up early at the person's request, partial (stopped by the budget with
verification incomplete), interrupted by the time limit, waiting for the person's answers, and
stored as queued but held by no job engine (interrupted, on every surface). Each surface is then walked: the
Library and the Run page (AppTest), the toasts and the browser tab's title, the notification
line, the CLI (`status`, `list`, and writing a finished run's report again), the HTTP API (a
real server) and the MCP server on it (the SDK's own client)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from streamlit.testing.v1 import AppTest

from research.core.config import build_config
from research.core.context import WRAP_UP_NOTE
from storage import Store
from tests.api_server import ApiServer, Token
from tests.dashboard_fixtures import finished_run, open_page
from tests.store_files import migrated_copy

PERSON = "ada@example.org"
QUESTIONS = {
    "finished": "Finished state: how fast is solar power growing?",
    "refused": "Refused key state: which heat pumps work below -20 C?",
    "cancelled": "Cancelled state: is tidal power getting cheaper?",
    "wrapped": "Wrapped up state: how loud are air source heat pumps?",
    "partial": "Partial state: what do grid batteries cost per kWh?",
    "interrupted": "Interrupted state: how long do wind turbines last?",
    "waiting": "Waiting state: which insulation pays back fastest?",
    "stalled": "Stalled state: do solar panels work in snow?",
}
# What a person must read for each state, everywhere.
LABELS = {
    "finished": "Completed", "refused": "Failed", "cancelled": "Cancelled",
    "wrapped": "Completed with warnings", "partial": "Completed with warnings",
    "interrupted": "Interrupted", "waiting": "Waiting for you",
    "stalled": "Interrupted",  # stored as queued, but no job engine holds it: nothing will run it
}
# The engine's own words, as they are stored: setting names, an exception class, an old
# role name. No surface may pass them on.
REFUSED = ("OpenAI (gpt-5-mini) refused the API key (HTTP 401): Incorrect API key provided. "
           "Check OPENAI_API_KEY.")
TIME_LIMIT = ("The run reached its total time limit of 30 min (TOTAL_TIMEOUT_MS); the last "
              "search failed: Could not reach Tavily: ConnectError.")
PARTIAL = (
    "Research was stopped by the budget: the cost cap of $0.40 was reached ($0.42 spent). The "
    "report covers only what was gathered until then.",
    "Verification could not be completed (3 claims could not be checked): treat the report's "
    "claims with care.",
    "Only 2 of the 3 decisions on follow-up questions asked for came back; the rest were left "
    "for later.",
    "Gemini Deep Research failed: ReadTimeout.",  # a library's exception, as a hosted job says
)
INTERNAL = [
    re.compile(r"\b(?:DEEP_RESEARCH_)?[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b"),  # setting names
    re.compile(r"\b(?:[A-Z][a-z0-9]+)+(?:Error|Exception|Timeout)\b"),    # exception classes
    re.compile(r"\$\d[\d,]*\.\d{3,}"),                                     # four-decimal dollars
    re.compile(r"\b(?:triage decisions?|worker model|lead model|auditor|milliseconds)\b", re.I),
    re.compile(r"\b(?:CANCELLED|COMPLETED|FAILED|failed_permanently|write_sections|preflight)\b"),
    re.compile(r"\bclaim[_-]?\d+\b"),
]


def internal_terms(text: str) -> list[str]:
    return [m.group(0) for pattern in INTERNAL for m in pattern.finditer(text)]


@dataclass
class Seeded:
    db: str
    folder: Path
    ids: dict[str, str]

    def state_of(self, run_id: str) -> str:
        return next(state for state, rid in self.ids.items() if rid == run_id)


def _seed(store: Store) -> dict[str, str]:
    ids: dict[str, str] = {}
    for state in ("finished", "wrapped", "partial"):
        ids[state] = finished_run(store, QUESTIONS[state], person=PERSON)
    store.update_totals(ids["finished"], cost_usd=0.0042)
    store.set_run_warnings(ids["wrapped"], [WRAP_UP_NOTE])
    store.set_run_warnings(ids["partial"], PARTIAL)
    store.update_totals(ids["partial"], cost_usd=0.4237)
    config = build_config(env={}, preset="quick").model_dump(mode="json")
    for state, status, error in (("refused", "failed", REFUSED), ("cancelled", "cancelled", None),
                                 ("interrupted", "interrupted", TIME_LIMIT)):
        run_id = ids[state] = store.create_run(QUESTIONS[state], config, person=PERSON)
        store.set_run_status(run_id, "running")
        if state == "refused":
            store.start_step(run_id, "preflight", kind="preflight", label="Checking the providers")
            store.fail_step(run_id, "preflight", REFUSED)
        store.update_totals(run_id, cost_usd=0.0123)
        store.set_run_status(run_id, status, error=error)
    # Waiting for the person's answers to its clarifying questions (phases/start/clarify.py).
    run_id = ids["waiting"] = store.create_run(QUESTIONS["waiting"], config, person=PERSON)
    store.set_run_status(run_id, "running")
    store.start_step(run_id, "clarify", kind="clarify", label="Clarifying the question")
    store.finish_step(run_id, "clarify", result={"questions": ["What is it for?"], "answers": None})
    store.set_run_status(run_id, "waiting")
    # Stored as queued, but never handed to the job engine (its process died first).
    ids["stalled"] = store.create_run(QUESTIONS["stalled"], config, person=PERSON)
    return ids


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    """The eight runs, and the dashboard's settings pointed at their store (as dash_env does,
    once for the module: every test here only reads)."""
    folder = tmp_path_factory.mktemp("voice")
    db = str(migrated_copy(folder / "data" / "research.db"))
    with Store(db) as store:
        ids = _seed(store)
    queue = tmp_path_factory.getbasetemp() / "dashboard-jobs.sqlite"  # the process's queue
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DEEP_RESEARCH_DB", db)
        patch.setenv("DEEP_RESEARCH_JOBS_DB", f"sqlite:///{queue}")
        patch.setenv("DEEP_RESEARCH_SECRETS_FILE", str(folder / "secrets.toml"))
        patch.delenv("DEEP_RESEARCH_OWNER", raising=False)
        yield Seeded(db, folder, ids)


@pytest.fixture(scope="module")
def api(seeded: Seeded) -> Iterator[ApiServer]:
    server = ApiServer.start({"DEEP_RESEARCH_DB": seeded.db}, seeded.folder)
    try:
        yield server
    finally:
        server.stop()


def _texts(at: AppTest) -> str:
    """Every text the page shows a person (not the questions, which are the person's own)."""
    parts: list[str] = []
    for kind in ("markdown", "caption", "info", "warning", "error", "success", "toast"):
        parts += [str(e.value) for e in getattr(at, kind)]
    parts += [str(p.proto.text) for p in at.progress]
    parts += [f"{m.label} {m.value}" for m in at.metric]
    text = "\n".join(parts).replace("\\", "")
    for question in QUESTIONS.values():
        text = text.replace(question, "")
    return text


# -- the dashboard --------------------------------------------------------------------------

def test_the_library_says_each_runs_status_as_every_other_surface(seeded: Seeded) -> None:
    at = open_page("app_pages/library.py").run()
    assert not at.exception
    lines = {}
    for link, caption in zip(at.get("page_link"), at.caption[1:], strict=False):
        question = link.proto.label.replace("\\", "")
        lines[question] = str(caption.value).replace("\\", "")
    for state, question in QUESTIONS.items():
        assert lines[question].split(" · ")[0] == LABELS[state], (state, lines[question])
    assert "under $0.01" in lines[QUESTIONS["finished"]]
    assert "$0.42" in lines[QUESTIONS["partial"]]
    table = next(df.value for df in at.dataframe if "Question" in df.value.columns)
    assert {q: s for q, s in zip(table["Question"], table["Status"], strict=True)} == {
        QUESTIONS[state]: label for state, label in LABELS.items()}
    assert internal_terms(_texts(at)) == []
    filter_by = at.selectbox(key="lib_status").options  # the filter names states alike
    assert {"Completed", "Waiting for you", "Interrupted"} <= set(filter_by)
    assert not {"completed", "waiting", "interrupted"} & set(filter_by)


@pytest.mark.parametrize("state", list(QUESTIONS))
def test_the_run_page_says_the_same_status(seeded: Seeded, state: str) -> None:
    at = open_page("app_pages/run.py")
    at.query_params["run"] = seeded.ids[state]
    at.run()
    assert not at.exception
    texts = _texts(at)
    progress = [str(p.proto.text) for p in at.progress if "%" in str(p.proto.text)]
    assert progress and progress[0].startswith(LABELS[state] + " · "), progress
    if state in ("finished", "wrapped", "partial"):  # the report's summary line leads with it
        boxes = [str(b.value).replace("\\", "") for b in [*at.success, *at.warning]]
        assert any(b.startswith(LABELS[state] + " · ") and "sources cited" in b
                   for b in boxes), boxes
    if state == "refused":
        assert "the OpenAI key" in texts
    if state == "interrupted":
        assert "a connection problem" in texts and "time limit for the whole run" in texts
    assert internal_terms(texts) == []


def test_toasts_and_the_tab_title_use_the_same_words(seeded: Seeded) -> None:
    from dashboard import notify

    with Store(seeded.db) as store:
        runs = [store.get_run(rid) for rid in seeded.ids.values()]
    told = notify.changes({r.id: "running" for r in runs if r}, [r for r in runs if r])
    toasts = {seeded.state_of(n.run_id): n.toast_text().replace("\\", "") for n in told}
    for state in ("finished", "refused", "cancelled", "wrapped", "partial", "waiting"):
        assert toasts[state].split(" ", 1)[1].startswith(LABELS[state] + ": "), toasts[state]
    finished = next(n for n in told if n.run_id == seeded.ids["finished"])
    assert notify.tab_title([], finished).startswith("✅ Completed ·")


def test_the_notification_line_uses_the_same_words(seeded: Seeded) -> None:
    from research.living import notify

    with Store(seeded.db) as store:
        for state in ("finished", "refused", "wrapped", "partial", "waiting"):
            run = store.get_run(seeded.ids[state])
            assert run is not None
            line = notify.run_message(run, "http://localhost:8501/run?run=x")
            assert line is not None and line.startswith(f"{LABELS[state]}: “"), line
            assert internal_terms(line) == []


# -- the command line -----------------------------------------------------------------------

def test_the_cli_status_and_list_use_the_same_words(
        seeded: Seeded, capsys: pytest.CaptureFixture[str]) -> None:
    from research.cli import main

    for state, run_id in seeded.ids.items():
        assert main(["status", run_id]) == 0
        out = capsys.readouterr().out
        assert out.splitlines()[1].startswith(LABELS[state] + ": "), out
        assert internal_terms(out.replace(run_id, "")) == [], out
    assert "the OpenAI key" in _status(seeded, "refused", capsys)
    assert "cost under $0.01" in _status(seeded, "finished", capsys)
    assert "cost $0.42" in _status(seeded, "partial", capsys)

    assert main(["list", "--limit", "50"]) == 0
    listed = capsys.readouterr().out
    for state, run_id in seeded.ids.items():
        line = next(x for x in listed.splitlines() if x.startswith(run_id))
        assert f"  {LABELS[state]}  " in re.sub(r" {2,}", "  ", line), line
        assert internal_terms(line.replace(run_id, "")) == [], line


def _status(seeded: Seeded, state: str, capsys: pytest.CaptureFixture[str]) -> str:
    from research.cli import main

    assert main(["status", seeded.ids[state]]) == 0
    return capsys.readouterr().out


def test_the_cli_writing_a_finished_report_again_uses_the_same_words(
        seeded: Seeded, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from research.cli import main

    for state in ("finished", "partial"):
        out = tmp_path / f"{state}.md"
        assert main(["--resume", seeded.ids[state], "--out", str(out), "--format", "md"]) == 0
        said = capsys.readouterr().err
        assert out.exists()
        assert said.startswith(f"{LABELS[state]}. Report written to"), said
        assert internal_terms(said) == [], said
    assert "cost $0.42" in said and said.count("Warning:") == len(PARTIAL)


# -- the HTTP API and the MCP server on it --------------------------------------------------

def test_the_api_and_the_mcp_server_use_the_same_words(seeded: Seeded, api: ApiServer) -> None:
    token = api.quick_token(PERSON)
    with api.client(token) as client:
        listed = client.get("/v1/runs", params={"limit": 50})
        assert listed.status_code == 200, listed.text
        by_id = {r["id"]: r for r in listed.json()["runs"]}
        for state, run_id in seeded.ids.items():
            assert by_id[run_id]["status_text"] == LABELS[state]
            one = client.get(f"/v1/runs/{run_id}")
            assert one.status_code == 200, one.text
            body = one.json()
            assert body["status_text"] == LABELS[state]
            assert body["status_line"].startswith(LABELS[state] + ": ")
            said = " ".join([body["status_line"], body["error"] or "", *body["warnings"]])
            assert internal_terms(said) == [], said
    answers = anyio.run(_ask_mcp, api, token, seeded)
    for state, (status, report) in answers.items():
        assert status["status_text"] == LABELS[state]
        assert status["status_line"].startswith(LABELS[state] + ": ")
        assert report["status_text"] == LABELS[state]
        said = " ".join([status["status_line"], status["error"], report["message"]])
        assert internal_terms(said.replace(seeded.ids[state], "")) == [], said


async def _ask_mcp(api: ApiServer, token: Token, seeded: Seeded) -> dict[str, Any]:
    from tests.test_api_mcp import session_of

    answers = {}
    with anyio.fail_after(120):  # a guard against a hang, not a timing assertion
        async with session_of(f"{api.url}/mcp", token) as session:
            for state, run_id in seeded.ids.items():
                status = await session.call_tool("research_status", {"run_id": run_id})
                report = await session.call_tool("get_report", {"run_id": run_id})
                assert not status.is_error and not report.is_error
                answers[state] = (status.structured_content, report.structured_content)
    return answers


# -- the one formatter ----------------------------------------------------------------------

def test_money_is_written_one_way() -> None:
    from research.voice import money

    assert [money(x) for x in (0.0042, 0.42, 0.4237, 1234.5, 0.0, None)] == [
        "under $0.01", "$0.42", "$0.42", "$1,234.50", "$0.00", "not known"]
    assert money(0.4237, about=True) == "~$0.42"


# -- the New research form's finer settings -------------------------------------------------

def test_the_forms_time_limits_are_in_seconds_and_minutes_and_kept_in_milliseconds(
        seeded: Seeded) -> None:
    at = open_page("app_pages/new_research.py").run()
    assert not at.exception
    step, total = at.number_input(key="u_STEP_TIMEOUT_MS"), at.number_input(key="u_TOTAL_TIMEOUT_MS")
    assert (step.label, step.value) == ("Time limit for one step (seconds)", 120)
    assert (total.label, total.value) == ("Time limit for the whole run (minutes)", 30)
    widgets = [*at.number_input, *at.slider, *at.toggle]
    for widget in widgets:  # every setting in words, each with a sentence of help
        assert internal_terms(f"{widget.label} {widget.help or ''}") == [], widget.label
    finer = [w for w in widgets if w.key and w.key[2:] in ("SEARCHES_PER_SUBTOPIC", "MAX_ROUNDS",
             "SOURCE_MAX_AGE_DAYS", "REPORT_MAX_WORDS", "MAX_PARALLEL_WORKERS",
             "STEP_TIMEOUT_MS", "TOTAL_TIMEOUT_MS", "SOURCE_RELEVANCE_THRESHOLD",
             "SEARCH_OTHER_SIDE")]
    assert len(finer) == 9 and all(len((w.help or "").split()) >= 8 for w in finer)
    step.set_value(90).run()
    assert not at.exception
    assert at.session_state["c_STEP_TIMEOUT_MS"] == 90_000  # the engine's own unit
    assert at.number_input(key="u_STEP_TIMEOUT_MS").value == 90
    assert at.selectbox(key="preset").value == "custom"  # a moved setting shows "Custom"
    at.selectbox(key="preset").set_value("quick").run()  # the preset puts its value back
    assert at.session_state["c_STEP_TIMEOUT_MS"] == 120_000
    assert at.number_input(key="u_STEP_TIMEOUT_MS").value == 120


def test_a_queued_run_nothing_executes_reads_interrupted_in_the_library_as_elsewhere() -> None:
    from dashboard import views
    from research.core.records import Run

    queued = Run(id="q1", question="Queued state: is geothermal heat cheap?", status="queued",
                 created_at="2026-11-27T20:00:00Z")
    assert views.library_line(views.as_shown(queued, alive=False)).startswith("Interrupted · ")
    assert views.library_line(views.as_shown(queued, alive=True)).startswith("Queued · ")
