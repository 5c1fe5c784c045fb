"""Keys never leave the process: after full runs with keys set (and providers that echo the key
back in their error messages), no key is in the SQLite files, the logs, the event log, the
exports or the CLI's output.
"""

from __future__ import annotations

import io
import logging
import os
from pathlib import Path

import pytest
from pypdf import PdfReader

from research import Credentials, build_config, run_research
from research.export import to_markdown, to_pdf
from research.export.run_document import build_document_for_run
from storage import Store
from tests.standin import (
    GEMINI_KEY,
    OPENAI_KEY,
    TAVILY_KEY,
    StandinServer,
    gemini_error,
    openai_error,
)
from tests.warm_python import WarmPython, warm_python  # noqa: F401 - a fixture

ROOT = Path(__file__).resolve().parent.parent
KEYS = (OPENAI_KEY, GEMINI_KEY, TAVILY_KEY)


def _echoing_faults(standin: StandinServer, provider: str) -> None:
    """Errors whose bodies repeat the key, on calls the run survives."""
    if provider == "openai":
        standin.add_fault("openai", "status", times=1, status=500, task="SearchQueries",
                          body=openai_error(f"Internal error for key {OPENAI_KEY}",
                                            type="server_error"))
        standin.add_fault("openai", "status", times=1, status=401, task="RelevanceScores",
                          body=openai_error(f"Incorrect API key provided: {OPENAI_KEY}.",
                                            type="invalid_request_error",
                                            code="invalid_api_key"))
    else:
        standin.add_fault("gemini", "status", times=1, status=500, task="SearchQueries",
                          body=gemini_error(500, f"Internal error for key {GEMINI_KEY}",
                                            "INTERNAL"))
        standin.add_fault("gemini", "status", times=1, status=400, task="RelevanceScores",
                          body=gemini_error(400, f"API key not valid: {GEMINI_KEY}.",
                                            "INVALID_ARGUMENT"))
    standin.add_fault("tavily", "status", times=2, status=500,
                      body={"detail": {"error": f"Internal error for api_key={TAVILY_KEY}"}})
    standin.add_fault("tavily", "status", times=1, status=401,
                      body={"detail": {"error": f"Unauthorized: invalid API key {TAVILY_KEY}"}})


def _assert_no_key(where: str, data: bytes | str) -> None:
    blob = data if isinstance(data, bytes) else data.encode("utf-8", "replace")
    for key in KEYS:
        assert key.encode() not in blob, f"{key[:8]}... found in {where}"


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_no_key_anywhere_after_a_run_with_echoing_providers(
    provider: str, standin: StandinServer, standin_env: dict[str, str], tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    _echoing_faults(standin, provider)
    env = {**standin_env, "DEEP_RESEARCH_PROVIDER": provider}
    log_file = tmp_path / "run.log"
    handler = logging.FileHandler(log_file, encoding="utf-8")
    handler.setLevel(logging.DEBUG)
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    caplog.set_level(logging.DEBUG)
    db = tmp_path / "research.sqlite3"
    try:
        credentials = Credentials.from_env(env)
        store = Store(db, secrets=credentials.secrets())
        config = build_config(env=env, preset="quick", fetch_timeout_s=3, SOURCES_PER_SUBTOPIC=5,
                              SEARCHES_PER_SUBTOPIC=1)  # the smallest run meeting every fault
        run_id = run_research("How is heat pump adoption changing in Europe?", store=store,
                              config=config, credentials=credentials)
    finally:
        root.removeHandler(handler)
        handler.close()
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", run and run.error

    # The faults happened and were echoed back by the stand-in.
    types = [e.type for e in store.get_events(run_id)]
    assert "retrying" in types and "search_failed" in types
    messages = " ".join(e.message for e in store.get_events(run_id))
    assert "[redacted]" in messages

    doc = build_document_for_run(store, run_id)
    markdown = to_markdown(doc)
    pdf = to_pdf(doc)
    pdf_text = "\n".join(p.extract_text() or "" for p in PdfReader(io.BytesIO(pdf)).pages)

    for name in (db.name, db.name + "-wal", db.name + "-shm"):  # while the run's store is open
        if (db.parent / name).exists():
            _assert_no_key(name, (db.parent / name).read_bytes())
    _assert_no_key("the event log", repr(store.get_events(run_id)))
    _assert_no_key("the run row", repr(store.get_run(run_id)))
    _assert_no_key("the steps", repr(store.get_steps(run_id)))
    _assert_no_key("the skipped pages", repr(store.get_skipped(run_id)))
    _assert_no_key("the stored report", repr(store.get_report(run_id)))
    _assert_no_key("the Markdown export", markdown)
    _assert_no_key("the PDF bytes", pdf)
    _assert_no_key("the PDF text", pdf_text)
    _assert_no_key("caplog", caplog.text)
    _assert_no_key("caplog arguments", repr([(r.msg, r.args) for r in caplog.records]))
    _assert_no_key("the DEBUG log file", log_file.read_bytes())
    assert log_file.stat().st_size > 0  # the handler did see the run

    store.close()
    for path in tmp_path.glob(db.name + "*"):
        _assert_no_key(path.name, path.read_bytes())


def test_no_key_in_the_cli_output_of_a_run_with_echoing_providers(
    standin: StandinServer, standin_env: dict[str, str], tmp_path: Path,
    warm_python: WarmPython,  # noqa: F811 - the fixture
) -> None:
    _echoing_faults(standin, "openai")
    db = tmp_path / "cli.db"
    out = tmp_path / "report.md"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DEEP_RESEARCH_", "OPENAI_", "GEMINI_", "TAVILY_"))}
    env.update(standin_env)
    env.update({"PYTHONPATH": str(ROOT), "DEEP_RESEARCH_DB": str(db),
                "DEEP_RESEARCH_SECRETS_FILE": str(tmp_path / "none.toml")})
    # `python -m research` forked warm (tests/warm_python.py): its own process and output.
    cli = warm_python.spawn(
        ["-m", "research", "How is heat pump adoption changing in Europe?",
         "--preset", "quick", "--format", "md", "--out", str(out)],
        env, tmp_path, tmp_path / "cli.out", tmp_path / "cli.err")
    code = cli.wait(timeout=240)
    stdout, stderr = (tmp_path / "cli.out").read_text(), (tmp_path / "cli.err").read_text()
    assert code == 0, stderr
    assert "[redacted]" in stderr  # the echoed errors were shown, without the key
    _assert_no_key("the CLI's stderr", stderr)
    _assert_no_key("the CLI's stdout", stdout)
    _assert_no_key("the CLI's report", out.read_bytes())
    for path in tmp_path.glob("cli.db*"):
        _assert_no_key(path.name, path.read_bytes())
