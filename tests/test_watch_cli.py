"""`python -m research watch ...` (issue 36, point 3 from the command line): watch a finished
run, list, pause, resume and stop watches, and refuse in plain words what cannot be."""

from __future__ import annotations

from pathlib import Path

from research.core.config import build_config
from storage import Store
from storage import watches as watchstore
from tests.cli_helpers import RunCli
from tests.store_files import migrated_copy


def test_watch_list_pause_resume_and_stop_from_the_command_line(
        run_cli: RunCli, tmp_path: Path) -> None:
    db = migrated_copy(tmp_path / "r.db")
    env = {"DEEP_RESEARCH_DB": str(db), "DEEP_RESEARCH_SECRETS_FILE": str(tmp_path / "s.toml")}
    with Store(db) as store:
        done = store.create_run("How quiet are heat pumps?", build_config(env={}).model_dump(mode="json"))
        store.set_run_status(done, "running")
        store.set_run_status(done, "completed")
        busy = store.create_run("Still going?", build_config(env={}).model_dump(mode="json"))

    made = run_cli(["watch", done, "--every", "monthly", "--max-cost", "0.4", "--threshold", "10"],
                   env, tmp_path)
    assert made.returncode == 0, made.stderr
    watch_id = made.stdout.strip()
    assert f"Watching run {done} monthly; the first update is due" in made.stderr
    with Store(db) as store:
        (watch,) = watchstore.list_watches(store)
    assert (watch.id, watch.every, watch.cost_cap, watch.threshold) == (watch_id, "monthly", 0.4, 0.1)

    listed = run_cli(["watch", "list"], env, tmp_path)
    assert watch_id in listed.stdout and "How quiet are heat pumps?" in listed.stdout
    assert run_cli(["watch", "pause", watch_id], env, tmp_path).returncode == 0
    assert "paused" in run_cli(["watch", "list"], env, tmp_path).stdout
    assert run_cli(["watch", "resume", watch_id], env, tmp_path).returncode == 0
    assert run_cli(["watch", "stop", watch_id], env, tmp_path).returncode == 0
    assert run_cli(["watch", "list"], env, tmp_path).stdout.strip() == ""

    refused = run_cli(["watch", busy], env, tmp_path)
    assert refused.returncode == 2 and "Only a finished run can be watched." in refused.stderr
    gone = run_cli(["watch", "stop", watch_id], env, tmp_path)
    assert gone.returncode == 2 and "There is no watch with id" in gone.stderr
    assert "Traceback" not in refused.stderr + gone.stderr
