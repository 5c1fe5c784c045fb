"""Steering between rounds (issue 14, point 2): with --steer the run waits after each round
(exit status 3) with the lead's proposals numbered; `--resume RUN_ID --follow 1 --add ...`
carries on with those across a new process, and `--enough` goes straight to writing. The CLI
runs in-process (tests/cli_helpers.py) except for the first test's carrying on, in a new
process."""

from __future__ import annotations

import re
from pathlib import Path

from storage import Store
from tests.cli_helpers import RunCli, warm_cli
from tests.warm_python import WarmPython, warm_python  # noqa: F401 - a fixture

QUESTION = "How is heat pump adoption changing in Europe?"
MINE = "Heat pump noise rules in cities"
# The smallest research that still gives the lead findings to propose branches from: what is
# steered is the next round, not how much each round searches.
SMALL = {"DEEP_RESEARCH_SEARCHES_PER_SUBTOPIC": "1", "DEEP_RESEARCH_INCLUDE_ACADEMIC_SOURCES": "false",
         "DEEP_RESEARCH_SEARCH_OTHER_SIDE": "false"}


def _start(run_cli: RunCli, env: dict[str, str], tmp_path: Path) -> tuple[Path, dict[str, str], str, str]:
    db = tmp_path / "steer.db"
    full = {**env, "DEEP_RESEARCH_DB": str(db)}
    first = run_cli([QUESTION, "--subtopics", "3", "--sources", "5", "--reviews", "0", "--steer",
                  "--out", str(tmp_path / "r.md")],
                 full, tmp_path)
    assert first.returncode == 3, first.stderr
    run_id = re.search(r"Run id: (\S+)", first.stderr)
    assert run_id, first.stderr
    return db, full, run_id.group(1), first.stderr


def test_a_steered_run_waits_then_follows_the_chosen_and_added_branches(
    run_cli: RunCli, standin_env: dict[str, str], tmp_path: Path,
    warm_python: WarmPython,  # noqa: F811 - the fixture
) -> None:
    env = {**standin_env, **SMALL, "DEEP_RESEARCH_MAX_ROUNDS": "2"}
    db, full, run_id, said = _start(run_cli, env, tmp_path)
    assert "Round 1 is done. The planner proposes to explore next:" in said
    assert f"--resume {run_id} --follow" in said
    store = Store(db)
    run = store.get_run(run_id)
    assert run is not None and run.status == "waiting"
    [step] = [s for s in store.get_steps(run_id) if s.kind == "steer"]
    proposals = step.result["proposals"]
    assert proposals and [p["n"] for p in proposals] == list(range(1, len(proposals) + 1))
    assert f"  1. {proposals[0]['title']}" in said
    assert not [s for s in store.get_steps(run_id) if s.key.startswith("research:r2")]

    # A new process (as after a restart; forked warm, tests/warm_python.py) carries on with
    # proposal 1 and a branch of my own.
    second = warm_cli(warm_python, ["--resume", run_id, "--follow", "1", "--add", MINE, "--out",
                   str(tmp_path / "r.md")], full, tmp_path)
    assert second.returncode == 0, second.stderr
    run = Store(db).get_run(run_id)
    assert run is not None and run.status == "completed"
    round_two = [s for s in Store(db).get_plan(run_id) or [] if s.round == 2]
    assert [s.title for s in round_two] == [proposals[0]["title"], MINE]
    done = {s.key: s.status for s in Store(db).get_steps(run_id)}
    assert all(done.get(f"research:{s.id}") == "done" for s in round_two)
    answer = [s for s in Store(db).get_steps(run_id) if s.kind == "steer"][0].result
    assert answer["answer"] == {"follow": [1], "add": [MINE], "enough": False}


def test_enough_goes_straight_to_writing_and_a_wrong_number_is_refused(
    run_cli: RunCli, standin_env: dict[str, str], tmp_path: Path
) -> None:
    env = {**standin_env, **SMALL, "DEEP_RESEARCH_MAX_ROUNDS": "3"}
    db, full, run_id, _ = _start(run_cli, env, tmp_path)
    wrong = run_cli(["--resume", run_id, "--follow", "99"], full, tmp_path)
    assert wrong.returncode == 2 and "There is no proposal 99" in wrong.stderr
    assert "Traceback" not in wrong.stderr
    enough = run_cli(["--resume", run_id, "--enough", "--out", str(tmp_path / "r.md")], full,
                     tmp_path)
    assert enough.returncode == 0, enough.stderr
    store = Store(db)
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed"
    assert run.totals.stop_reason == "You asked to write the report after round 1."
    assert all(s.round == 1 for s in store.get_plan(run_id) or [])
    assert (tmp_path / "r.md").read_text().startswith("# ")


def test_a_steered_run_asks_even_when_the_lead_proposes_nothing_and_follows_my_own_branch(
    run_cli: RunCli, standin_env: dict[str, str], tmp_path: Path
) -> None:
    # Issue 39: with nothing proposed the run used to go straight to writing, so the person
    # could not add a branch of their own.
    env = {**standin_env, **SMALL, "DEEP_RESEARCH_MAX_ROUNDS": "2"}
    db = tmp_path / "steer.db"
    full = {**env, "DEEP_RESEARCH_DB": str(db)}
    first = run_cli(["How is heat pump adoption changing in Europe, nothing further?",
                     "--subtopics", "3", "--sources", "5", "--reviews", "0", "--steer",
                     "--out", str(tmp_path / "r.md")], full, tmp_path)
    assert first.returncode == 3, first.stderr
    assert "(no new branches)" in first.stderr
    run_id = re.search(r"Run id: (\S+)", first.stderr)
    assert run_id
    [step] = [s for s in Store(db).get_steps(run_id.group(1)) if s.kind == "steer"]
    assert step.result["proposals"] == []
    second = run_cli(["--resume", run_id.group(1), "--add", MINE, "--out", str(tmp_path / "r.md")],
                     full, tmp_path)  # (carrying on in a new process: the first test)
    assert second.returncode == 0, second.stderr
    store = Store(db)
    run = store.get_run(run_id.group(1))
    assert run is not None and run.status == "completed"
    round_two = [s for s in store.get_plan(run_id.group(1)) or [] if s.round == 2]
    assert [s.title for s in round_two] == [MINE]
    done = {s.key: s.status for s in store.get_steps(run_id.group(1))}
    assert done.get(f"research:{round_two[0].id}") == "done"
