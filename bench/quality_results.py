"""The results folder: every report and score as files, so a cut-off benchmark goes on where it
stopped and anyone can read (or re-add up) the figures.

    RESULTS/
      research.db                  the runs (a store of its own unless --db says otherwise)
      <system>/<task id>/report.md the report as exported
      <system>/<task id>/run.json  run id, status, seconds, cost (written when the run ends)
      <system>/<task id>/race.json RACE: the judge's scores per criterion and the relative scores
      <system>/<task id>/fact.json FACT: statement-URL pairs, per URL the judge's labels
      <system>/<task id>/claims.json  our supported-claims figure, per claim
      summary.json, table.md       the table printed at the end
      raw_data/<system>.jsonl      the reports in the benchmark's own input format (id, prompt,
                                   article), to score them with its scripts as a cross-check

A task is done for a system when all four of its JSON files are there, each naming the judge
that scored it; a score by another judge than this invocation's is made again.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.quality_claims import claims_summary
from bench.quality_data import DIMENSIONS
from bench.quality_fact import fact_summary


def write_json(path: Path, data: object) -> None:
    """Whole or not at all: a temporary file renamed over the old one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    part.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    os.replace(part, path)


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


class Results:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def task(self, system: str, task_id: int) -> Path:
        return self.folder / system / str(task_id)

    def read(self, system: str, task_id: int, name: str) -> Any:
        return read_json(self.task(system, task_id) / f"{name}.json")

    def write(self, system: str, task_id: int, name: str, data: object) -> None:
        write_json(self.task(system, task_id) / f"{name}.json", data)

    def scored(self, system: str, task_id: int, name: str, judge: str) -> Any:
        """The stored score `name`, if this judge made it; else None (score it again)."""
        data = self.read(system, task_id, name)
        return data if isinstance(data, dict) and data.get("judge") == judge else None


@dataclass(frozen=True)
class Row:
    system: str
    tasks: int
    race: dict[str, float] | None  # overall and the four dimensions, 0-100
    citation_accuracy: float | None  # 0-100
    effective_citations: float | None
    supported_claims: float | None  # 0-100
    cost_usd: float  # the runs' and the judges'
    minutes: float | None  # a task's run, on average

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def summarise(results: Results, system: str, task_ids: list[int]) -> Row:
    runs: list[dict[str, Any]] = []
    races: list[dict[str, Any]] = []
    facts: list[dict[str, Any]] = []
    claims: list[dict[str, Any]] = []
    judge_cost = 0.0
    for tid in task_ids:
        run = results.read(system, tid, "run")
        if isinstance(run, dict) and run.get("status") == "completed":
            runs.append(run)
        for name, bucket in (("race", races), ("fact", facts), ("claims", claims)):
            data = results.read(system, tid, name)
            if isinstance(data, dict) and "error" not in data:
                bucket.append(data)
                judge_cost += float(data.get("judge_cost_usd") or 0)
    race = None
    if races:
        race = {key: 100 * sum(r["scores"][key] for r in races) / len(races)
                for key in ("overall", *DIMENSIONS)}
    accuracy, effective = fact_summary([f["result"] for f in facts])
    share = claims_summary([c["result"] for c in claims])
    seconds = [float(r.get("seconds") or 0) for r in runs]
    return Row(system=system, tasks=len(runs), race=race,
               citation_accuracy=None if accuracy is None else 100 * accuracy,
               effective_citations=effective,
               supported_claims=None if share is None else 100 * share,
               cost_usd=sum(float(r.get("cost_usd") or 0) for r in runs) + judge_cost,
               minutes=sum(seconds) / len(seconds) / 60 if seconds else None)


COLUMNS = ("System", "Tasks", "RACE", "Comp.", "Depth", "Inst.", "Read.", "C. Acc.", "E. Cit.",
           "Supported claims", "Cost", "Time/task")


def _f(value: float | None, suffix: str = "", digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}{suffix}"


def table(rows: list[Row]) -> str:
    """A Markdown table in the leaderboard's columns, then ours."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        race = r.race or {}
        cells = [r.system, str(r.tasks), _f(race.get("overall")),
                 _f(race.get("comprehensiveness")), _f(race.get("insight")),
                 _f(race.get("instruction_following")), _f(race.get("readability")),
                 _f(r.citation_accuracy, "%"), _f(r.effective_citations),
                 _f(r.supported_claims, "%", 1), f"${r.cost_usd:.2f}",
                 _f(r.minutes, " min", 1)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_raw_data(results: Results, system: str, tasks: list[tuple[int, str]]) -> Path:
    """The finished reports as the benchmark's scripts read them (its README: one JSON line per
    task, `data/test_data/raw_data/<model>.jsonl` with id, prompt and article)."""
    path = results.folder / "raw_data" / f"{system}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for task_id, prompt in tasks:
        report = results.task(system, task_id) / "report.md"
        if report.is_file():
            lines.append(json.dumps({"id": task_id, "prompt": prompt,
                                     "article": report.read_text(encoding="utf-8")},
                                    ensure_ascii=False))
    part = path.with_name(path.name + ".part")
    part.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    os.replace(part, path)
    return path
