"""`python -m research` against the stand-in server and a temp store: the first test as a real
subprocess (entry point, progress on stderr, PDF; forked warm, tests/warm_python.py), the
others through `research.cli.main` in-process (tests/cli_helpers.py); Ctrl-C and a full disk
are in test_cli_interrupts.py."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from pypdf import PdfReader

import research.cli as cli_module
from research.core.config import build_config
from storage import Store
from tests.cli_helpers import ROOT, RunCli, cli, warm_cli  # noqa: F401 - ROOT: other files import it here
from tests.standin import StandinServer
from tests.warm_python import WarmPython, warm_python  # noqa: F401 - a fixture

_cli = cli  # the subprocess form, also used by other test files


def test_cli_writes_a_pdf_prints_the_run_id_and_shows_progress(
    standin_env: dict[str, str], tmp_path: Path,
    warm_python: WarmPython,  # noqa: F811 - the fixture
) -> None:
    db = tmp_path / "cli.db"
    out = tmp_path / "report.pdf"
    result = warm_cli(warm_python, [
        "How do heat pumps perform in cold climates?", "--preset", "quick", "--subtopics", "3",
        "--sources", "5", "--reviews", "1", "--format", "pdf", "--out", str(out)],
        {**standin_env, "DEEP_RESEARCH_DB": str(db)}, tmp_path)
    assert result.returncode == 0, result.stderr
    run_id = result.stdout.strip().splitlines()[-1]
    assert "%]" in result.stderr and "Research complete" in result.stderr
    text = "\n".join(p.extract_text() for p in PdfReader(out).pages)
    assert "Executive summary" in text and "[1]" in text
    store = Store(db)
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed"
    assert run.config["subtopic_count"] == 3 and run.config["review_cycles"] == 1
    assert max(len([s for s in store.get_sources(run_id) if s.subtopic_id == t])
               for t in ("t1", "t2", "t3")) <= 5


def test_cli_refuses_bad_input_with_one_readable_line(
    run_cli: RunCli, standin_env: dict[str, str], tmp_path: Path) -> None:
    env = {**standin_env, "DEEP_RESEARCH_DB": str(tmp_path / "x.db")}
    bad = run_cli(["question", "--subtopics", "12"], env, tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.strip() == "error: SUBTOPIC_COUNT must be between 3 and 10 (got 12)."
    deep = run_cli(["question", "--schedule", "breadth-depth", "--depth", "9"], env, tmp_path)
    assert deep.returncode == 2
    assert deep.stderr.strip() == "error: DEPTH must be between 1 and 5 (got 9)."
    empty = run_cli(["   "], env, tmp_path)
    assert empty.returncode == 2 and "Please type a research question" in empty.stderr
    assert "Traceback" not in bad.stderr + empty.stderr


def test_cli_missing_key_names_what_to_set(
    run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli(["question"], {"DEEP_RESEARCH_DB": str(tmp_path / "x.db")}, tmp_path)
    assert result.returncode == 2
    assert "OPENAI_API_KEY" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_cli_failure_exits_non_zero_without_traceback_and_keeps_no_key(
    run_cli: RunCli, standin: StandinServer, standin_env: dict[str, str], tmp_path: Path
) -> None:
    key = standin_env["OPENAI_API_KEY"]
    standin.add_fault("openai", "status", times=50, status=401,
                      body={"error": {"message": f"Incorrect API key provided: {key}",
                                      "type": "invalid_request_error", "code": "invalid_api_key"}})
    result = run_cli(["question about heat pumps", "--preset", "quick"],
                  {**standin_env, "DEEP_RESEARCH_DB": str(tmp_path / "x.db")}, tmp_path)
    assert result.returncode == 1
    assert "failed" in result.stderr and "Traceback" not in result.stderr
    assert key not in result.stderr + result.stdout


def test_cli_resume_continues_an_interrupted_run(
    run_cli: RunCli, standin_env: dict[str, str], tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    env = {**standin_env, "DEEP_RESEARCH_DB": str(db)}
    first = run_cli(["Heat pump adoption in Europe", "--preset", "quick"], env, tmp_path)
    assert first.returncode == 0, first.stderr
    run_id = first.stdout.strip().splitlines()[-1]
    store = Store(db)
    # Make it look like the process died before the review and delivery.
    with store.transaction() as conn:  # test-only surgery on a finished run
        conn.execute("DELETE FROM steps WHERE run_id = ? AND kind IN ('deliver')", [run_id])
        conn.execute("DELETE FROM reports WHERE run_id = ?", [run_id])
        conn.execute("UPDATE runs SET status = 'interrupted' WHERE id = ?", [run_id])
    resumed = run_cli(["--resume", run_id, "--format", "md", "--out", str(tmp_path / "r.md")], env, tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert store.get_run(run_id).status == "completed"  # type: ignore[union-attr]
    assert "## Sources" in (tmp_path / "r.md").read_text()
    assert {s.kind for s in store.get_steps(run_id) if s.attempts > 1} == set()
    unknown = run_cli(["--resume", "nope"], env, tmp_path)
    assert unknown.returncode == 2 and "no run with id" in unknown.stderr


def test_cli_digs_deeper_into_a_section_of_an_earlier_report(
    run_cli: RunCli, standin_env: dict[str, str], tmp_path: Path
) -> None:
    db = tmp_path / "d.db"
    env = {**standin_env, "DEEP_RESEARCH_DB": str(db)}
    first = run_cli(["Heat pump adoption in Europe", "--preset", "quick"], env, tmp_path)
    assert first.returncode == 0, first.stderr
    parent = first.stdout.strip().splitlines()[-1]
    missing = run_cli(["--dig-deeper", parent, "No such section", "--preset", "quick"], env, tmp_path)
    assert missing.returncode == 2 and "has no section" in missing.stderr
    child = run_cli(["--dig-deeper", parent, "Key findings", "--preset", "quick"], env, tmp_path)
    assert child.returncode == 0, child.stderr
    child_id = child.stdout.strip().splitlines()[-1]
    store = Store(db)
    run = store.get_run(child_id)
    assert run is not None and run.parent_run_id == parent
    assert "dig deeper into: Key findings" in run.question
    assert {s.canonical_url for s in store.get_sources(parent)} <= {
        s.canonical_url for s in store.get_sources(child_id)}


def test_cli_hands_a_run_to_a_hosted_engine(
    run_cli: RunCli, standin: StandinServer, standin_env: dict[str, str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The CLI (in-process) polls the job every 0.05 s rather than every 5 s, as a person's
    # would: there is no setting for it, so the configuration it builds gets it.
    monkeypatch.setattr(cli_module, "build_config",
                        functools.partial(build_config, hosted_poll_interval_s=0.05))
    standin.hosted.polls_to_complete = 1
    env = {**standin_env, "DEEP_RESEARCH_DB": str(tmp_path / "h.db")}
    result = run_cli(["Heat pump adoption in Europe", "--engine", "openai-deep-research",
                   "--preset", "quick", "--out", str(tmp_path / "h.md")], env, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "## Sources" in (tmp_path / "h.md").read_text()
    run = Store(tmp_path / "h.db").get_run(result.stdout.strip().splitlines()[-1])
    assert run is not None and run.engine == "openai-deep-research"


def test_cli_schedule_breadth_and_depth_reach_the_stored_config(
    run_cli: RunCli, standin_env: dict[str, str], tmp_path: Path
) -> None:
    db = tmp_path / "schedule.db"
    # --review-plan stops the run at the plan: the stored config is what is checked.
    result = run_cli(["How do heat pumps perform in cold climates?", "--schedule", "breadth-depth",
                   "--breadth", "2", "--depth", "4", "--review-plan"],
                  {**standin_env, "DEEP_RESEARCH_DB": str(db)}, tmp_path)
    assert result.returncode == 3, result.stderr
    [run] = Store(db).list_runs()
    config = run.config
    assert (config["schedule"], config["breadth"], config["depth"]) == ("breadth_depth", 2, 4)
