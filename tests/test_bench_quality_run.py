"""`python -m bench.quality` end to end on the stand-in: two tasks of the fixture dataset
(tests/fixtures/drb) through the pipeline over real HTTP, scored by the stand-in judge
(tests/standin/brain_judge.py), then run again to show that finished work is skipped."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench import quality
from bench.quality_data import DIMENSIONS
from research.llm.pacing import forget_pacers
from storage import Store
from tests.standin import StandinServer
from tests.store_files import migrated_copy

DATA = Path(__file__).parent / "fixtures" / "drb"


@pytest.fixture(scope="module")
def bench_env(standin: StandinServer, tmp_path_factory: pytest.TempPathFactory
              ) -> Iterator[dict[str, str]]:
    standin.reset()
    forget_pacers()
    home = tmp_path_factory.mktemp("quality")
    env = {**standin.env(), "DEEP_RESEARCH_SEARCH_PACE": "0",
           "DEEP_RESEARCH_SECRETS_FILE": str(home / "no-secrets.toml"),
           # the person's own runs ask clarifying questions first; the benchmark's must not
           "DEEP_RESEARCH_REQUIRE_CLARIFICATION": "1"}
    with pytest.MonkeyPatch.context() as mp:
        for name, value in env.items():
            mp.setenv(name, value)
        yield {**env, "HOME": str(home)}


def _args(folder: Path, *extra: str) -> list[str]:
    return ["--data", str(DATA), "--tasks", "2", "--lang", "en", "--preset", "quick",
            "--subtopics", "3", "--sources", "5",
            "--judge", "openai:judge-race", "--fact-judge", "openai:judge-fact",
            "--results", str(folder), "--db", str(folder / "research.db"), "--yes", *extra]


@pytest.fixture(scope="module")
def first(bench_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory,
          standin: StandinServer) -> tuple[Path, int, str]:
    folder = tmp_path_factory.mktemp("results")
    migrated_copy(folder / "research.db")
    with pytest.MonkeyPatch.context() as mp:
        lines: list[str] = []
        mp.setattr("builtins.print", lambda *a, **k: lines.append(" ".join(map(str, a))))
        code = quality.main(_args(folder, "--max-cost", "25"))
    return folder, code, "\n".join(lines)


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def test_the_command_runs_the_fixed_slice_and_writes_every_report_and_score(first):
    folder, code, out = first
    assert code == 0, out
    settings = _json(folder / "settings.json")
    assert settings["tasks"] == [101, 103]  # the first two English tasks by id
    assert settings["race_judge"] == "openai/judge-race"
    for tid in (101, 103):
        task = folder / "pipeline" / str(tid)
        assert _json(task / "run.json")["status"] == "completed"
        report = (task / "report.md").read_text(encoding="utf-8")
        assert report.startswith("#") and "http" in report
        race = _json(task / "race.json")
        assert race["judge"] == "openai/judge-race"
        assert set(race["judgement"]) == set(DIMENSIONS)
        assert 0 < race["scores"]["overall"] < 1
        fact = _json(task / "fact.json")
        assert fact["judge"] == "openai/judge-fact" and fact["result"]["pairs"] > 0
        assert fact["result"]["judged"] > 0
        claims = _json(task / "claims.json")
        assert claims["judge"] == "openai/judge-fact" and claims["result"]["claims"] > 0


def test_the_reports_are_also_in_the_benchmarks_own_input_format(first):
    folder, _, _ = first
    lines = (folder / "raw_data" / "pipeline.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    prompts = {int(q["id"]): q["prompt"] for q in map(json.loads, (DATA / "query.jsonl")
                                                      .read_text(encoding="utf-8").splitlines())}
    assert [(r["id"], r["prompt"]) for r in rows] == [(101, prompts[101]), (103, prompts[103])]
    assert rows[0]["article"] == (folder / "pipeline" / "101" / "report.md").read_text(
        encoding="utf-8")


def test_under_max_cost_each_run_may_spend_only_what_is_left(first):
    folder, _, _ = first
    store = Store(folder / "research.db")
    runs = [_json(folder / "pipeline" / str(t) / "run.json") for t in (101, 103)]
    configs = [store.get_run(r["run_id"]).config for r in runs]  # type: ignore[union-attr]
    store.close()
    assert not any(c["require_clarification"] for c in configs)  # unattended
    caps = [c["max_cost_usd"] for c in configs]
    assert caps[0] == 25
    judged = sum(_json(folder / "pipeline" / "101" / f"{n}.json")["judge_cost_usd"]
                 for n in ("race", "fact", "claims"))
    assert caps[1] == round(25 - runs[0]["cost_usd"] - judged, 2) < 25


def test_the_table_adds_up_the_stored_scores(first):
    folder, _, out = first
    races = [_json(folder / "pipeline" / str(t) / "race.json")["scores"] for t in (101, 103)]
    facts = [_json(folder / "pipeline" / str(t) / "fact.json")["result"] for t in (101, 103)]
    claims = [_json(folder / "pipeline" / str(t) / "claims.json")["result"] for t in (101, 103)]
    row = _json(folder / "summary.json")["rows"][0]
    assert row["system"] == "pipeline (quick, openai/gpt-5-mini)" and row["tasks"] == 2
    assert row["race"]["overall"] == pytest.approx(50 * (races[0]["overall"] + races[1]["overall"]))
    assert row["race"]["insight"] == pytest.approx(50 * (races[0]["insight"] + races[1]["insight"]))
    supported = sum(f["supported"] for f in facts)
    assert row["citation_accuracy"] == pytest.approx(100 * supported / sum(f["judged"] for f in facts))
    assert row["effective_citations"] == pytest.approx(supported / 2)
    assert row["supported_claims"] == pytest.approx(
        100 * sum(c["supported"] for c in claims) / sum(c["claims"] for c in claims))
    header = "| System | Tasks | RACE | Comp. | Depth | Inst. | Read. | C. Acc. | E. Cit. |"
    assert header in out and f"{row['race']['overall']:.2f}" in out
    assert (folder / "table.md").read_text(encoding="utf-8").strip() in out


def test_running_it_again_skips_what_is_done(first, standin: StandinServer):
    folder, _, _ = first
    before = {p: p.stat().st_mtime_ns for p in (folder / "pipeline").rglob("*.json")}
    standin.reset()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("builtins.print", lambda *a, **k: None)
        assert quality.main(_args(folder)) == 0
    assert standin.requests == []  # no run, no judge call
    assert {p: p.stat().st_mtime_ns for p in (folder / "pipeline").rglob("*.json")} == before


def test_a_run_cut_off_is_resumed_and_another_judge_scores_again(first, standin: StandinServer):
    folder, _, _ = first
    task = folder / "pipeline" / "103"
    run = _json(task / "run.json")
    (task / "report.md").unlink()
    (task / "run.json").write_text(json.dumps({"run_id": run["run_id"], "status": "running"}))
    store = Store(folder / "research.db")
    store.set_run_status(run["run_id"], "interrupted", error="The machine went to sleep.")
    standin.reset()
    with pytest.MonkeyPatch.context() as mp:
        lines: list[str] = []
        mp.setattr("builtins.print", lambda *a, **k: lines.append(" ".join(map(str, a))))
        assert quality.main(_args(folder, "--claims-judge", "openai:judge-claims")) == 0
    assert f"resuming run {run['run_id']}" in "\n".join(lines)
    assert _json(task / "run.json")["run_id"] == run["run_id"]
    assert (task / "report.md").is_file()
    resumed = store.get_run(run["run_id"])
    assert resumed is not None and resumed.status == "completed"
    store.close()
    for tid in (101, 103):
        assert _json(folder / "pipeline" / str(tid) / "claims.json")["judge"] == "openai/judge-claims"
        assert _json(folder / "pipeline" / str(tid) / "race.json")["judge"] == "openai/judge-race"


def test_a_judge_that_fails_leaves_the_task_to_be_scored_next_time(first, standin: StandinServer):
    folder, _, _ = first
    task = folder / "pipeline" / "101"
    race = (task / "race.json").read_text(encoding="utf-8")
    (task / "fact.json").unlink()
    standin.reset()
    standin.add_fault("openai", "invalid_json", times=10, task="CitationList")
    with pytest.MonkeyPatch.context() as mp:
        lines: list[str] = []
        mp.setattr("builtins.print", lambda *a, **k: lines.append(" ".join(map(str, a))))
        assert quality.main(_args(folder)) == 1
    out = "\n".join(lines)
    assert "could not score it" in out and "run the same command again" in out
    assert "SchemaError" not in out and "Traceback" not in out
    assert not (task / "fact.json").exists()
    assert (task / "race.json").read_text(encoding="utf-8") == race  # kept, not judged again
    standin.reset()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("builtins.print", lambda *a, **k: None)
        assert quality.main(_args(folder)) == 0
    assert _json(task / "fact.json")["result"]["pairs"] > 0
