"""A worker whose run met a trickling model answer frees its slot (issue 40, point 1).

`python -m research worker --concurrency 1` takes a run whose plan is answered one byte every
two seconds: the step's time limit ends the run, the worker hangs up on the trickle (the
stand-in sees the client go), and the next run queued to the same worker starts and completes.
"""

from __future__ import annotations

import time
from pathlib import Path

from storage import Store
from storage.run_records import Run
from tests.crash_helpers import kill
from tests.standin import StandinServer
from tests.test_crash import CLI_ARGS
from tests.test_workers import _cli, _setup, _spawn
from tests.warm_python import WarmProcess, WarmPython, warm_python  # noqa: F401 - a fixture

FIRST = "How do heat pumps perform in cold climates?"
SECOND = "What limits grid-scale battery storage?"


def test_a_worker_frees_its_slot_after_a_trickling_model_answer_and_takes_the_next_run(
    standin: StandinServer, standin_env: dict[str, str], tmp_path: Path,
    warm_python: WarmPython,  # noqa: F811 - the fixture
) -> None:
    db, worker_env, cli_env = _setup(standin_env, tmp_path)
    # Only the first run asks OpenAI; the second asks Gemini, so no trickle reaches it.
    standin.add_fault("openai", "trickle", times=100, interval=2.0, task="ResearchPlan")
    worker = _spawn(warm_python, ["worker", "--concurrency", "1"], worker_env, tmp_path, "worker")
    store = Store(db)
    try:
        first = _cli(warm_python, [FIRST, *CLI_ARGS, "--detach"],
                     {**cli_env, "DEEP_RESEARCH_PROVIDER": "openai",
                      "DEEP_RESEARCH_STEP_TIMEOUT_MS": "4000"}, tmp_path, "first")
        assert first.returncode == 0, first.stderr
        stopped = _ended(store, first.stdout.strip().splitlines()[-1], worker, tmp_path)
        assert stopped.status == "failed" and "time limit" in (stopped.error or ""), stopped
        second = _cli(warm_python, [SECOND, *CLI_ARGS, "--detach"],
                      {**cli_env, "DEEP_RESEARCH_PROVIDER": "gemini"}, tmp_path, "second")
        assert second.returncode == 0, second.stderr
        later = _ended(store, second.stdout.strip().splitlines()[-1], worker, tmp_path)
    finally:
        kill(worker)
    assert later.status == "completed", later.error
    # The worker hung up on the trickling answers rather than reading on.
    assert [r for r in standin.requests_for("openai") if r.get("client_gone")]


def _ended(store: Store, run_id: str, worker: WarmProcess, cwd: Path) -> Run:
    """The run once it has ended (generous: a quick run takes seconds)."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        run = store.get_run(run_id)
        if run is not None and run.status in ("completed", "failed"):
            return run
        assert worker.poll() is None, (cwd / "worker.err").read_text()[-2000:]
        time.sleep(0.5)
    raise AssertionError(f"run {run_id} did not end; it is {run and run.status}")
