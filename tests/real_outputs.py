"""Texts real research systems wrote, as the answers of the writer's free-text roles (issue 32).

The folder `../shared/real-outputs` (from the repo root; absent on most machines, then the
sweep is skipped) holds 219 reports and answers written by real research systems, citations
and layout as they wrote them. `texts()` reads them (without the `<<<TRUNCATED n CHARS>>>`
lines) and adds mutations of a few (cut in a link or a table, only headings, no heading,
empty, 100,000 characters, HTML, right-to-left text). Nothing of them is copied here.

`Script` answers the stand-in's writer calls from that list, role by role (a section, the
title-and-summary frame, a shortening, a revision; "whole" for a whole-report answer), each
role walking the list from its own offset. The URLs a text cites are moved onto the run's
gathered sources (the `[n] title — url` lines of the prompt), as a writer citing what it was
given would. Structured answers stay the stand-in's, except the review, which never approves.
`sweep` drives complete runs until every text has played every role and yields per-run
figures (the test's and the benchmark's). `StructuredScript` does the same for the structured
answers: valid ones with real texts in their free-text fields, in the shapes models send.
"""

from __future__ import annotations

import html
import json
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.runs import Runner

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT.parent / "shared" / "real-outputs"
_TRUNCATED = re.compile(r"^<<<TRUNCATED \d+ CHARS>>>\s*$", re.MULTILINE)
_URL = re.compile(r"https?://[^\s<>\"'`\]\)|]+")
_LISTED = re.compile(r"^\[(\d+)\] .+? — (\S+)$", re.MULTILINE)

# What a person must never read: a Python exception's name or a traceback.
EXCEPTION_WORDS = re.compile(r"[Uu]nexpected error \(|\b[A-Z][A-Za-z]*(?:Error|Exception)\b|Traceback")
ROLES = ("section", "frame", "shorten", "revise")
MUTATIONS = ("cut_link", "cut_table", "only_headings", "no_heading", "empty", "long", "html", "rtl")


@dataclass(frozen=True)
class Text:
    label: str
    text: str


def available() -> bool:
    return FOLDER.is_dir() and any(FOLDER.glob("*.jsonl"))


def real_texts() -> list[Text]:
    """The 219 texts, the truncation marker lines removed."""
    out: list[Text] = []
    for path in sorted(FOLDER.glob("*.jsonl")):
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
            if not line.strip():
                continue
            record = json.loads(line)
            body = _TRUNCATED.sub("", str(record.get("text") or ""))
            out.append(Text(f"{path.stem}#{i + 1} ({record.get('system')})", body))
    return out


def mutate(kind: str, text: str) -> str:
    """One mutation of a real text (MUTATIONS); our own words where new text is needed."""
    lines = text.splitlines()
    if kind == "cut_link":
        match = re.search(r"\]\(https?://", text) or _URL.search(text)
        at = match.end() + 6 if match else len(text) // 2
        return text[:at]
    if kind == "cut_table":
        rows = [i for i, line in enumerate(lines) if line.lstrip().startswith("|")]
        if not rows:  # our own small table, cut in its second row
            return text + "\n\n| Option | Cost | Note |\n| --- | --- | --- |\n| A | 12 [1] | ch"
        row = lines[rows[min(2, len(rows) - 1)]]
        return "\n".join(lines[: rows[min(2, len(rows) - 1)]] + [row[: len(row) // 2]])
    if kind == "only_headings":
        return "\n".join(line for line in lines if line.lstrip().startswith("#"))
    if kind == "no_heading":
        return "\n".join(line for line in lines if not line.lstrip().startswith("#"))
    if kind == "empty":
        return ""
    if kind == "long":
        return (text + "\n\n") * (100_000 // max(1, len(text) + 2)) + text[: 100_000 % max(1, len(text))]
    if kind == "html":
        parts = ["<!DOCTYPE html><html><head><style>p{color:red}</style>"
                 "<script>alert('x')</script></head><body>"]
        for line in lines:
            stripped = line.strip()
            if not stripped:
                continue
            linked = _URL.sub(lambda m: f'<a href="{m.group(0)}">{m.group(0)}</a>', html.escape(stripped))
            tag = "h2" if stripped.startswith("#") else "p"
            parts.append(f"<{tag}>{linked}</{tag}>")
        return "\n".join([*parts, "<img src=x onerror=alert(1)></body></html>"])
    if kind == "rtl":
        own = ("\u200f\u0627\u0644\u062a\u0642\u0631\u064a\u0631 \u064a\u0644\u062e\u0635 "
               "\u0627\u0644\u0646\u062a\u0627\u0626\u062c \u0627\u0644\u0631\u0626\u064a\u0633\u064a\u0629 [1]. "
               "\u05d4\u05e0\u05ea\u05d5\u05e0\u05d9\u05dd \u05de\u05e8\u05d0\u05d9\u05dd "
               "\u05e6\u05de\u05d9\u05d7\u05d4 [2].\u202e reversed \u202c")
        return "\n".join(f"\u202b{line}\u202c" if line.strip() else line for line in lines) + f"\n\n{own}\n"
    raise ValueError(kind)


def texts() -> list[Text]:
    """The real texts, then each mutation of one of them (spread over the list)."""
    real = real_texts()
    out = list(real)
    for m, kind in enumerate(MUTATIONS):
        base = real[(m * 29 + 11) % len(real)]
        out.append(Text(f"{kind} of {base.label}", mutate(kind, base.text)))
    return out


def move_urls(text: str, urls: list[str]) -> str:
    """Each distinct URL of `text` replaced by one of `urls` (in turn), as a writer citing the
    sources it was given would; unchanged when there are none."""
    if not urls:
        return text
    mapping: dict[str, str] = {}

    def swap(match: re.Match[str]) -> str:
        raw = match.group(0)
        url = raw.rstrip(".,;:!?*_~")
        tail = raw[len(url):]
        if url not in mapping:
            mapping[url] = urls[len(mapping) % len(urls)]
        return mapping[url] + tail

    return _URL.sub(swap, text)


def role_of(user: str) -> str:
    """Which free-text role a writer prompt asks for."""
    if user.lstrip().startswith("The report below has"):  # (a part may quote the words)
        return "shorten"
    if "YOUR PART: the title, the executive summary" in user:
        return "frame"
    if "CURRENT TEXT OF YOUR PART" in user:
        return "revise"
    if "YOUR PART:" in user:
        return "section"
    return "whole"


NEVER_APPROVED = json.dumps({"approved": False, "issues": [{
    "severity": "high", "section": "general",
    "issue": "Several statements need a second look.", "suggestion": "Check each part again."}],
    "strengths": []})
# A run playing only the frame: the review asks for the summary again, and nothing else.
FRAME_REVIEW = json.dumps({"approved": False, "issues": [{
    "severity": "high", "section": "Executive summary",
    "issue": "The summary does not answer the question.", "suggestion": "Answer it first."}],
    "strengths": []})


class Script:
    """The writer's answers, from `items`, role by role; the stand-in's brain for the rest."""

    def __init__(self, items: list[Text]) -> None:
        self.items = items
        self._lock = threading.Lock()
        step = max(1, len(items) // len(ROLES))
        self.cursor = {role: i * step for i, role in enumerate((*ROLES, "whole"))}
        self.served: Counter[str] = Counter()   # calls per role
        self.covered: dict[str, set[int]] = {role: set() for role in (*ROLES, "whole")}
        self.urls: list[str] = []               # every gathered URL a prompt listed
        self.run_labels: list[str] = []         # what the current run was given
        self.roles: tuple[str, ...] = ROLES      # the roles the current run answers from the list
        # A role that has played every text is the stand-in's again (the sweep's runs stay cheap).
        self.until_covered = False

    def answer(self, system: str, user: str, schema: dict | None) -> str | None:
        if schema is not None:
            if schema.get("title") != "ReviewResult":
                return None
            wanted = "revise" in self.roles and not (self.until_covered and not self.left("revise"))
            if self.until_covered and "Review cycle 1 of" not in user:
                wanted = False  # the sweep revises every part once a run, the summary each cycle
            return NEVER_APPROVED if wanted else FRAME_REVIEW
        role = role_of(user)
        listed = [url for _, url in _LISTED.findall(user)]
        with self._lock:
            for url in listed:
                if url not in self.urls:
                    self.urls.append(url)
            if role not in self.roles or (self.until_covered and not self._left(role)):
                return None
            index = self.cursor[role] % len(self.items)
            self.cursor[role] += 1
            self.served[role] += 1
            self.covered[role].add(index)
            item = self.items[index]
            self.run_labels.append(f"{role}: {item.label}")
            urls = listed or list(self.urls)
        return move_urls(item.text, urls)

    def left(self, role: str) -> int:
        """How many texts have not played `role` yet."""
        with self._lock:
            return self._left(role)

    def _left(self, role: str) -> int:
        return len(self.items) - len(self.covered[role])

    def start_run(self, roles: tuple[str, ...]) -> None:
        """The next run: these roles answer from the list, the others are the stand-in's."""
        with self._lock:
            self.roles = roles
            self.run_labels = []
            self.urls = []


@dataclass
class RunFigures:
    run_id: str
    status: str
    warnings: list[str]
    error: str
    cited_sources: int
    unresolved: list[str]
    given: list[str] = field(default_factory=list)
    cpu_s: float = 0.0

    @property
    def unexpected(self) -> bool:
        """The run ended on an unexpected error, or says an exception's name to the person."""
        return bool(EXCEPTION_WORDS.search(f"{self.error} {' '.join(self.warnings)}"))


def figures_of(store: Any, run_id: str, given: list[str]) -> RunFigures:
    """A finished run's figures: status, warnings, cited sources, and the report's citations
    that resolve to no gathered source (the Sources list, the body's [n], the citation map)."""
    from research.export.run_document import build_document_for_run

    run = store.get_run(run_id)
    unresolved: list[str] = []
    cited = 0
    report = store.get_report(run_id)
    if report is not None:
        doc = build_document_for_run(store, run_id)
        gathered = {s.id for s in store.get_sources(run_id, with_text=False)}
        listed = {s.number for s in doc.sources}
        unresolved += [f"Sources lists {s.source_id}, not gathered" for s in doc.sources
                       if s.source_id not in gathered]
        unresolved += [f"body cites [{n}], not listed" for n in sorted(prose_citations(doc.body) - listed)]
        unresolved += [f"live link {u}" for u in prose_links(doc.body)]
        cited = len(doc.sources)
    return RunFigures(run_id, str(run.status if run else None), list(run.warnings if run else []),
                      str((run.error if run else "") or ""), cited, unresolved, list(given))


def prose_links(body: str) -> list[str]:
    """The Markdown links of a report's prose (a link in code is code)."""
    from research.export.document import map_prose

    found: list[str] = []
    map_prose(body, lambda chunk: found.extend(re.findall(r"\]\((https?://[^)\s]+)\)", chunk)) or chunk)
    return found


def prose_citations(body: str) -> set[int]:
    """The citation numbers of a report's prose (a bracketed number in code is code)."""
    from research.export.document import CITATION_RE, expand_citation, map_prose

    found: set[int] = set()

    def collect(chunk: str) -> str:
        for match in CITATION_RE.finditer(chunk):
            found.update(expand_citation(match.group("items")))
        return chunk

    map_prose(body, collect)
    return found


# Five review cycles: the title and summary are written once a cycle, the bottleneck of the
# sweep; every part over its share of 300 words is shortened.
SWEEP_CONFIG: dict[str, Any] = {
    "preset": "quick", "review_cycles": 5, "report_max_words": 300,
    "include_academic_sources": False, "search_other_side": False,
    "searches_per_subtopic": 1, "sources_per_subtopic": 5,
}


# Once every text has been a shortening, the limit leaves every part as written.
NO_SHORTENING: dict[str, Any] = {"report_max_words": 20000}


def sweep(standin: Any, runner: Any, items: list[Text], *, max_runs: int = 200) -> Iterator[RunFigures]:
    """Complete runs with `Script(items)` answering, until every text has played every role;
    yields each run's figures. A role that has played them all goes back to the stand-in's
    answers, and so does the review after the first cycle (it asks for the summary only).

    The research is the same for every text, so it is done once per config: each run resumes
    a copy of a run stopped as its writing started (`runner`: a tests.runs.Runner, whose
    fakes and environment every copy uses)."""
    script = Script(items)
    script.until_covered = True
    bases: dict[int, tuple[Path, str]] = {}
    for i in range(max_runs):
        if not any(script.left(role) for role in ROLES):
            return
        config = SWEEP_CONFIG if script.left("shorten") else {**SWEEP_CONFIG, **NO_SHORTENING}
        words = int(config["report_max_words"])
        if words not in bases:
            bases[words] = stored_research(standin, runner, config)
        base, run_id = bases[words]
        standin.reset()
        standin.script = script.answer
        script.start_run(ROLES)
        started = time.process_time()
        copy = Runner(standin, runner.env, base.with_name(f"{base.stem}-{i}.db"), fakes=True)
        try:
            _copy_store(base, copy.db)
            copy.resume(run_id)
            figures = figures_of(copy.store, run_id, script.run_labels)
        finally:
            copy.store.close()
            copy.close()
            for path in copy.db.parent.glob(f"{copy.db.name}*"):
                path.unlink()
        figures.cpu_s = time.process_time() - started
        yield figures


def stored_research(standin: Any, runner: Any, config: dict[str, Any]) -> tuple[Path, str]:
    """A run of `config` stopped (cancelled) at its first writer call, in its own database
    file: (the file, the run's id)."""
    from research.core.errors import RunCancelled

    def stop(system: str, user: str, schema: dict | None) -> str | None:
        if schema is None:
            raise RunCancelled("the sweep's runs resume from here")
        return None

    standin.reset()
    standin.script = stop
    base = Runner(standin, runner.env, runner.db.with_name(
        f"research-{config['report_max_words']}.db"), fakes=True)
    _copy_store(runner.db, base.db)
    try:
        store, run_id = base(**config)
        run = store.get_run(run_id)
        assert run is not None and run.status == "cancelled", run
        return base.db, run_id
    finally:
        base.store.close()
        base.close()


def _copy_store(source: Path, target: Path) -> None:
    """A consistent copy of a SQLite store (its WAL included)."""
    import sqlite3

    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    src.close()
    dst.close()


# --- structured answers (issue 32, point 4) ---------------------------------------------------

SHAPES = ("texts", "extra_keys", "nulls", "numbers_as_strings", "wrapped_in_a_list",
          "nested_fences", "control_characters")
_ID_LIKE = re.compile(r"(^|_)(id|ids|source|url|language|key)$")


def _node(node: Any, root: dict) -> Any:
    from tests.standin.brain import _resolve

    return _resolve(node, root)


def fill_texts(value: Any, node: Any, root: dict, next_text: Callable[[], str], name: str = "") -> Any:
    """`value` (valid for the schema `node`) with every free-text string (no enum, not an id)
    replaced by a real text: the answer stays valid, its words are a real system's."""
    node = _node(node, root)
    if not isinstance(node, dict):
        return value
    for key in ("anyOf", "oneOf"):
        if node.get(key):
            options = [_node(o, root) for o in node[key]]
            node = next((o for o in options if o.get("type") != "null"), options[0])
    if isinstance(value, dict):
        props = node.get("properties", {})
        return {k: fill_texts(v, props.get(k, {}), root, next_text, k) for k, v in value.items()}
    if isinstance(value, list):
        items = node.get("items", {})
        return [fill_texts(v, items, root, next_text, name) for v in value]
    free = (isinstance(value, str) and node.get("type") == "string" and "enum" not in node
            and "const" not in node and "pattern" not in node and not _ID_LIKE.search(name))
    if not free:
        return value
    text = next_text()
    return text[: int(node["maxLength"])] if "maxLength" in node else text


def reshape(kind: str, value: Any, node: Any, root: dict) -> str:
    """A valid answer as real models send it (SHAPES), as the answer's text."""
    if kind == "extra_keys":
        value = _walk_objects(value, lambda obj: {**obj, "confidence_note": "high", "meta": {"n": 1}})
    elif kind == "nulls":
        value = _nulls_for_defaults(value, node, root)
    elif kind == "numbers_as_strings":
        value = _walk_values(value, lambda v: str(v) if isinstance(v, int | float) and not isinstance(v, bool) else v)
    elif kind == "wrapped_in_a_list":
        value = [value]
    text = json.dumps(value, ensure_ascii=False)
    if kind == "nested_fences":
        return f"Here it is:\n```json\n```json\n{text}\n```\n```"
    if kind == "control_characters":
        return text.replace("\\n", "\n").replace("\\t", "\t") + "\n"
    return text


def _walk_objects(value: Any, change: Callable[[dict], dict]) -> Any:
    if isinstance(value, dict):
        return change({k: _walk_objects(v, change) for k, v in value.items()})
    if isinstance(value, list):
        return [_walk_objects(v, change) for v in value]
    return value


def _walk_values(value: Any, change: Callable[[Any], Any]) -> Any:
    if isinstance(value, dict):
        return {k: _walk_values(v, change) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk_values(v, change) for v in value]
    return change(value)


def _nulls_for_defaults(value: Any, node: Any, root: dict) -> Any:
    """Every field that has a default sent as null (models send null for "nothing here")."""
    node = _node(node, root)
    if isinstance(value, list):
        items = node.get("items", {}) if isinstance(node, dict) else {}
        return [_nulls_for_defaults(v, items, root) for v in value]
    if not isinstance(value, dict) or not isinstance(node, dict):
        return value
    props = node.get("properties", {})
    required = set(node.get("required", []))
    out = {k: _nulls_for_defaults(v, props.get(k, {}), root) for k, v in value.items()}
    for name in props:
        if name not in required:
            out[name] = None
    return out


class StructuredScript:
    """The stand-in's structured answers in one of SHAPES, their free text from `items`."""

    def __init__(self, items: list[Text], shape: str) -> None:
        self.items, self.shape = items, shape
        self._lock = threading.Lock()
        self._next = 0
        self.answered: Counter[str] = Counter()

    def next_text(self) -> str:
        with self._lock:
            item = self.items[self._next % len(self.items)]
            self._next += 1
        return item.text

    def answer(self, system: str, user: str, schema: dict | None) -> str | None:
        from tests.standin import brain

        if schema is None:
            return None
        value = json.loads(brain.respond(system, user, schema))
        if self.shape == "texts" or self.shape == "control_characters":
            value = fill_texts(value, schema, schema, self.next_text)
        with self._lock:
            self.answered[str(schema.get("title"))] += 1
        return reshape(self.shape, value, schema, schema)
