"""A model that trickles its answer does not keep the CLI from exiting (issue 40, point 1).

The step's time limit ends the run and the CLI says so; then the process must end on its own.
It used to hang for ever at interpreter exit, waiting on the threads still reading the
trickling answer. `python -m research` runs as a process of its own against the stand-in,
forked warm (tests/warm_python.py: it leaves as the interpreter does, waiting for the
threads still running, so a hang at exit shows; without importing the engine again).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from storage import Store
from tests.standin import StandinServer
from tests.warm_python import WarmPython, warm_python  # noqa: F401 - a fixture

QUESTION = "How do heat pumps perform in cold climates?"
STEP_S = 4
EXIT_BOUND = 30.0  # after the last line: generous; the bug was "never"


def test_the_cli_exits_on_its_own_after_a_trickling_model_answer_ends_the_run(
    standin: StandinServer, standin_env: dict[str, str], tmp_path: Path,
    warm_python: WarmPython,  # noqa: F811 - the fixture
) -> None:
    standin.add_fault("openai", "trickle", times=20, interval=2.0, task="ResearchPlan")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DEEP_RESEARCH_", "OPENAI_", "GEMINI_", "TAVILY_"))}
    env.update(standin_env, DEEP_RESEARCH_DB=str(tmp_path / "t.db"),
               DEEP_RESEARCH_SECRETS_FILE=str(tmp_path / "none.toml"),
               DEEP_RESEARCH_STEP_TIMEOUT_MS=str(STEP_S * 1000))
    out, err = tmp_path / "cli.out", tmp_path / "cli.err"
    proc = warm_python.spawn(["-m", "research", QUESTION, "--preset", "quick",
                              "--out", str(tmp_path / "r.md")], env, tmp_path, out, err)

    def output() -> str:
        return out.read_text(errors="replace") + err.read_text(errors="replace")

    # The run ends within the step's limit and its retries (a minute is generous); then the
    # process has EXIT_BOUND seconds after its last line to end.
    started = last_line = time.monotonic()
    seen = ""
    while proc.poll() is None:
        if (now := output()) != seen:
            seen, last_line = now, time.monotonic()
        quiet = time.monotonic() - last_line
        if quiet > EXIT_BOUND or time.monotonic() - started > 180:
            proc.kill()
            proc.wait(30)
            raise AssertionError(f"the CLI was still running {quiet:.0f} s after its last "
                                 f"line:\n{output()[-2000:]}")
        time.sleep(0.2)
    code, text = proc.returncode, output()
    assert code == 1, text
    assert "step's time limit" in text and "Traceback" not in text
    run = Store(tmp_path / "t.db").list_runs()[0]
    assert run.status == "failed" and "time limit" in (run.error or "")
    # The trickled answers were given up by the client, not finished by the stand-in.
    trickled = [r for r in standin.requests_for("openai") if r.get("client_gone")]
    assert trickled
