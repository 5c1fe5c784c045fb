"""A model that trickles its answer does not keep the CLI from exiting (issue 40, point 1).

The step's time limit ends the run and the CLI says so; then the process must end on its own.
It used to hang for ever at interpreter exit, waiting on the threads still reading the
trickling answer. `python -m research` runs as a real subprocess against the stand-in.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from storage import Store
from tests.cli_helpers import ROOT
from tests.standin import StandinServer

QUESTION = "How do heat pumps perform in cold climates?"
STEP_S = 4
EXIT_BOUND = 30.0  # after the last line: generous; the bug was "never"


def test_the_cli_exits_on_its_own_after_a_trickling_model_answer_ends_the_run(
    standin: StandinServer, standin_env: dict[str, str], tmp_path: Path
) -> None:
    standin.add_fault("openai", "trickle", times=20, interval=2.0, task="ResearchPlan")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DEEP_RESEARCH_", "OPENAI_", "GEMINI_", "TAVILY_"))}
    env.update(standin_env, PYTHONPATH=str(ROOT), DEEP_RESEARCH_DB=str(tmp_path / "t.db"),
               DEEP_RESEARCH_SECRETS_FILE=str(tmp_path / "none.toml"),
               DEEP_RESEARCH_STEP_TIMEOUT_MS=str(STEP_S * 1000))
    proc = subprocess.Popen([sys.executable, "-m", "research", QUESTION, "--preset", "quick",
                             "--out", str(tmp_path / "r.md")], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[tuple[float, str]] = []

    def read(stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            lines.append((time.monotonic(), line))

    readers = [threading.Thread(target=read, args=(s,), daemon=True)
               for s in (proc.stdout, proc.stderr)]
    for reader in readers:
        reader.start()
    # The run ends within the step's limit and its retries (a minute is generous); then the
    # process has EXIT_BOUND seconds after its last line to end.
    started = time.monotonic()
    while proc.poll() is None:
        quiet = time.monotonic() - max((t for t, _ in lines), default=started)
        if quiet > EXIT_BOUND or time.monotonic() - started > 180:
            proc.kill()
            proc.wait()
            output = "".join(line for _, line in lines)
            raise AssertionError(f"the CLI was still running {quiet:.0f} s after its last "
                                 f"line:\n{output[-2000:]}")
        time.sleep(0.2)
    code = proc.returncode
    for reader in readers:
        reader.join(timeout=10)
    output = "".join(line for _, line in lines)
    assert code == 1, output
    assert "step's time limit" in output and "Traceback" not in output
    run = Store(tmp_path / "t.db").list_runs()[0]
    assert run.status == "failed" and "time limit" in (run.error or "")
    # The trickled answers were given up by the client, not finished by the stand-in.
    trickled = [r for r in standin.requests_for("openai") if r.get("client_gone")]
    assert trickled
