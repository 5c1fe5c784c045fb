"""DeepResearch Bench's tasks, criteria and reference reports, read from the benchmark's files.

The benchmark (https://github.com/Ayanami0730/deep_research_bench, paper arXiv 2506.11763) keeps
its 100 tasks in `data/prompt_data/query.jsonl` (id, topic, language, prompt), the task-specific
RACE criteria in `data/criteria_data/criteria.jsonl` (prompt, dimension_weight, criterions: per
dimension a list of criterion, explanation, weight) and the reference reports RACE compares
against in `data/test_data/cleaned_data/reference.jsonl` (id, prompt, article). Its scripts join
the three by the prompt's text; so does `load`.

The repository is under the Apache License 2.0, which would allow shipping the data with a
notice; we do not, to keep the clone small (the files are a few MB and change upstream): they
are downloaded on first use into a cache folder (`fetch_files`), or read from a folder the
person points at (`--data`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

RAW_BASE = "https://raw.githubusercontent.com/Ayanami0730/deep_research_bench/main/"
FILES = {
    "query.jsonl": "data/prompt_data/query.jsonl",
    "criteria.jsonl": "data/criteria_data/criteria.jsonl",
    "reference.jsonl": "data/test_data/cleaned_data/reference.jsonl",
}
DIMENSIONS = ("comprehensiveness", "insight", "instruction_following", "readability")
DEFAULT_TASKS = 10
DEFAULT_LANG = "en"


class DataUnavailable(Exception):
    """The benchmark's files are not here and could not be downloaded (plain-words message)."""


@dataclass(frozen=True)
class Criterion:
    criterion: str
    explanation: str
    weight: float


@dataclass(frozen=True)
class Task:
    id: int
    topic: str
    language: str  # "en" | "zh"
    prompt: str
    dimension_weight: dict[str, float]
    criteria: dict[str, tuple[Criterion, ...]]  # by dimension
    reference: str  # the reference report's text


def _jsonl(path: Path) -> list[dict[str, object]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            rows.append(json.loads(line))
    return rows


def load(folder: Path) -> list[Task]:
    """Every task that has criteria and a reference report, in the benchmark's id order."""
    try:
        return _load(folder)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        why = ("a file is missing or unreadable" if isinstance(exc, OSError)
               else "they are not in its format")
        raise DataUnavailable(
            f"The benchmark's files in {folder} could not be read as DeepResearch Bench's "
            f"({why}). Delete the folder to download them again, or give another copy with "
            "--data FOLDER.") from None


def _load(folder: Path) -> list[Task]:
    queries = _jsonl(folder / "query.jsonl")
    criteria = {str(c["prompt"]): c for c in _jsonl(folder / "criteria.jsonl")}
    references = {str(r["prompt"]): str(r.get("article") or "")
                  for r in _jsonl(folder / "reference.jsonl")}
    tasks = []
    for q in queries:
        prompt = str(q["prompt"])
        crit = criteria.get(prompt)
        if crit is None or prompt not in references:
            continue
        weights = {str(k): float(v) for k, v in dict(crit["dimension_weight"]).items()}  # type: ignore[call-overload]
        by_dim: dict[str, tuple[Criterion, ...]] = {}
        for dim, items in dict(crit["criterions"]).items():  # type: ignore[call-overload]
            by_dim[str(dim)] = tuple(
                Criterion(str(i["criterion"]), str(i.get("explanation", "")), float(i["weight"]))
                for i in items)
        tasks.append(Task(int(q["id"]), str(q.get("topic", "")),  # type: ignore[call-overload]
                          str(q.get("language", "en")), prompt, weights, by_dim,
                          references[prompt]))
    return sorted(tasks, key=lambda t: t.id)


def pick(tasks: list[Task], count: int, lang: str) -> list[Task]:
    """The fixed slice: the first `count` tasks by id in `lang`; with "all", English and Chinese
    taken in turn (en first), so any count stays balanced between the two."""
    if lang in ("en", "zh"):
        return [t for t in tasks if t.language == lang][:count]
    en = [t for t in tasks if t.language == "en"]
    zh = [t for t in tasks if t.language == "zh"]
    mixed: list[Task] = []
    for i in range(max(len(en), len(zh))):
        mixed += ([en[i]] if i < len(en) else []) + ([zh[i]] if i < len(zh) else [])
    return mixed[:count]


def fetch_files(folder: Path, *, base_url: str = RAW_BASE,
                get: Callable[[str], bytes] | None = None) -> Path:
    """The folder with the three files, downloading the missing ones from the benchmark's
    repository first. A file is written whole (a temporary name, then renamed), so a cut
    download is fetched again next time rather than read half."""
    missing = [name for name in FILES if not (folder / name).is_file()]
    if not missing:
        return folder
    get = get or _get
    folder.mkdir(parents=True, exist_ok=True)
    for name in missing:
        url = base_url + FILES[name]
        try:
            body = get(url)
        except (httpx.HTTPError, OSError) as exc:
            raise DataUnavailable(
                f"DeepResearch Bench's {name} is not in {folder} and could not be downloaded "
                f"from {url} ({_reason(exc)}). Connect to the internet and run the command "
                f"again, or download {', '.join(FILES.values())} from "
                f"https://github.com/Ayanami0730/deep_research_bench into one folder (as "
                f"{', '.join(FILES)}) and give it with --data FOLDER.") from None
        part = folder / (name + ".part")
        part.write_bytes(body)
        part.replace(folder / name)
    return folder


def _get(url: str) -> bytes:
    response = httpx.get(url, timeout=60, follow_redirects=True)
    response.raise_for_status()
    return response.content


def _reason(exc: Exception) -> str:
    if isinstance(exc, httpx.HTTPStatusError):
        return f"the server answered {exc.response.status_code}"
    if isinstance(exc, httpx.ConnectError):
        return "no connection"
    if isinstance(exc, httpx.TimeoutException):
        return "no answer in time"
    return "the download failed"
