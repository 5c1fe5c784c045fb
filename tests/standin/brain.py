"""The stand-in's model: deterministic answers that satisfy the engine's prompt contract.

The task is recognised from the JSON schema's title (the pydantic model name); a call
without a schema is the writer. Answers are built only from what the prompt contains, so
tests can predict them. Text inside `<untrusted_source>` blocks is data: it is quoted
(at most), never followed.
"""

from __future__ import annotations

import hashlib
import html
import json
import logging
import re
from collections.abc import Callable
from typing import Any

log = logging.getLogger("standin.brain")

THINK_PREFIX = "<think>secret reasoning</think>"
INVENTED_SENTENCE = (
    "A separate study found a 40% improvement [99] "
    "([fake study](https://invented.example/fake-study))."
)
REVISION_SENTENCE = "This revision addresses the reviewer's feedback [1]."

_SUBTOPIC_COUNT = re.compile(r"exactly (\d+) subtopics", re.IGNORECASE)
_QUERY_COUNT = re.compile(r"exactly (\d+) search queries", re.IGNORECASE)
_QUESTION = re.compile(r"<question>(.*?)</question>", re.DOTALL | re.IGNORECASE)
_SUBTOPIC = re.compile(r"<subtopic>(.*?)</subtopic>", re.DOTALL | re.IGNORECASE)
# The opening tag fills its line (id, metadata, nonce); the block closes with
# `</untrusted_source nonce="...">`.
_SOURCE_OPEN = re.compile(r'<untrusted_source id="([^"]+)"[^\n]*>')
_SOURCE_CLOSE = "</untrusted_source"
_PUBLISHED_SUFFIX = re.compile(r"\s*\(published [^)]*\)\s*$")
_LISTED_SOURCE = re.compile(r"^\[(\d+)\] (.+?) — (\S+)$", re.MULTILINE)
_SUBTOPIC_HEADING = re.compile(r"^### Subtopic: (.+?)\s*$", re.MULTILINE)
_SHORTEN = re.compile(r"The report below has (\d+) words; the limit is (\d+)")
MAX_KEY_FINDINGS = 8
_REVIEW_CYCLE = re.compile(r"Review cycle (\d+) of (\d+)", re.IGNORECASE)
_TAG = re.compile(r"<[^>]+>")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_INJECTION = re.compile(
    r"ignore (all |any )?(previous|prior|above)|disregard|system prompt|instruction|"
    r"you must|you are now|assistant:|reveal|pwned",
    re.IGNORECASE,
)

FACETS = (
    "Background and definitions",
    "Current evidence and data",
    "Economic costs and benefits",
    "Risks and limitations",
    "Policy and regulation",
    "Technology and implementation",
    "Stakeholder perspectives",
    "Regional differences",
    "Measurement and data quality",
    "Future outlook",
)
QUERY_ANGLES = (
    "latest statistics",
    "peer-reviewed evidence",
    "2024 report",
    "expert analysis",
    "case study",
    "criticism and limitations",
    "market data",
    "policy review",
    "systematic review",
    "survey results",
)


def respond(
    system: str,
    user: str,
    schema: dict | None,
    *,
    invalid_json: str | None = None,
    fenced_json: bool = False,
    think: bool = False,
    cite_invented: bool = False,
    behaviour: str = "house",
    answer_words: int = 0,
) -> str:
    """The answer text for one chat call.

    `invalid_json` ("text" or "truncated") spoils a structured answer; `fenced_json` wraps
    it in a ```json fence; `think` prefixes a reasoning block; `cite_invented` makes the
    writer cite a source number and a URL that were never gathered; `behaviour` is one of
    brain_behaviours.BEHAVIOURS (how a real model would phrase the same answer);
    `answer_words` makes the writer's report that long (see `lengthen`).
    """
    from tests.standin import brain_behaviours  # it imports this module

    fenced_json = fenced_json or behaviour == "fenced_json"
    think = think or behaviour == "think"
    if schema is None and _SHORTEN.search(user):
        text = shorten_report(user)
    elif schema is None:
        report = write_report(user, cite_invented=cite_invented)
        text = brain_behaviours.restyle(lengthen(report, user, answer_words), user, behaviour)
    else:
        payload = brain_behaviours.adjust(structured_answer(schema, user), task_name(schema),
                                          behaviour)
        text = json.dumps(payload, ensure_ascii=False)
        if invalid_json == "truncated":
            text = text[: max(1, len(text) // 2)]
        elif invalid_json:
            text = "Sure! Here is what I found, in prose rather than JSON: it looks promising."
        elif fenced_json:
            text = f"```json\n{text}\n```"
    if think:
        text = THINK_PREFIX + "\n" + text
    return text


def task_name(schema: dict | None) -> str:
    if schema is None:
        return "writer"
    return str(schema.get("title") or "unknown")


def structured_answer(schema: dict, user: str) -> dict[str, Any]:
    title = task_name(schema)
    builder = _BUILDERS.get(title)
    if builder is None:
        log.warning("stand-in brain: unknown schema %r, answering a minimal instance", title)
        UNKNOWN_TASKS.append(title)
        value = minimal_instance(schema, schema)
        return value if isinstance(value, dict) else {}
    return fill_required(builder(user), schema, schema)


UNKNOWN_TASKS: list[str] = []


# --- the tasks ---------------------------------------------------------------------

def research_plan(user: str) -> dict[str, Any]:
    count = _int(_SUBTOPIC_COUNT, user, 3)
    question = _first(_QUESTION, user) or "the question"
    subtopics = []
    for i in range(count):
        facet = FACETS[i % len(FACETS)]
        title = facet if i < len(FACETS) else f"{facet} ({i // len(FACETS) + 1})"
        subtopics.append({
            "title": title,
            "description": f"{title} as they bear on: {question}",
            "questions": [
                f"What does the evidence say about {title.lower()}?",
                f"How has {title.lower()} changed in recent years?",
                f"Which sources disagree about {title.lower()}, and why?",
            ],
        })
    return {"subtopics": subtopics}


def search_queries(user: str) -> dict[str, Any]:
    count = _int(_QUERY_COUNT, user, 3)
    subtopic = _first(_SUBTOPIC, user) or "research topic"
    queries = []
    for i in range(count):
        angle = QUERY_ANGLES[i % len(QUERY_ANGLES)]
        suffix = "" if i < len(QUERY_ANGLES) else f" {i // len(QUERY_ANGLES) + 1}"
        queries.append(f"{subtopic} {angle}{suffix}")
    return {"queries": queries}


def relevance_scores(user: str) -> dict[str, Any]:
    scores = []
    for source_id, text in source_blocks(user):
        off_topic = "OFF-TOPIC" in text
        scores.append({
            "source_id": source_id,
            "relevance": 0.15 if off_topic else 0.9,
            "reason": "The source is about something else." if off_topic
            else "The source addresses the subtopic directly with figures.",
        })
    return {"scores": scores}


def subtopic_findings(user: str) -> dict[str, Any]:
    """One finding per source given, as a model asked what each source establishes would
    write: the answer grows with the sources in the prompt (and so does its writing time)."""
    findings = []
    for source_id, text in source_blocks(user):
        claim = claim_from(text)
        if claim:
            findings.append({"claim": claim, "source_ids": [source_id], "confidence": 0.8})
    return {"findings": findings}


def open_questions(user: str) -> dict[str, Any]:
    subtopic = _first(_SUBTOPIC, user) or "this subtopic"
    return {
        "gaps": [f"Long-term data on {subtopic} is scarce."],
        "follow_up_questions": [f"How do recent figures on {subtopic} compare across regions?"],
    }


def review_result(user: str) -> dict[str, Any]:
    match = _REVIEW_CYCLE.search(user)
    cycle = int(match.group(1)) if match else 2
    if cycle <= 1:
        return {
            "approved": False,
            "issues": [
                {"severity": "high", "section": "Key findings",
                 "issue": "Several key findings rest on a single source.",
                 "suggestion": "Corroborate each key finding with a second source or mark it."},
                {"severity": "low", "section": "Executive summary",
                 "issue": "The summary is slightly long.",
                 "suggestion": "Shorten the executive summary to three sentences."},
            ],
            "strengths": ["Clear structure.", "Every claim carries a citation."],
        }
    return {
        "approved": True,
        "issues": [],
        "strengths": ["Findings are corroborated.", "Disagreements are presented fairly."],
    }


_BUILDERS: dict[str, Callable[[str], dict[str, Any]]] = {
    "ResearchPlan": research_plan,
    "SearchQueries": search_queries,
    "RelevanceScores": relevance_scores,
    "SubtopicFindings": subtopic_findings,
    "OpenQuestions": open_questions,
    "ReviewResult": review_result,
    "Ping": lambda user: {"ok": True},
}


def register(title: str, builder: Callable[[str], dict[str, Any]]) -> None:
    """Add the answer builder for a schema title. Extension modules `brain_*.py` in this
    package call it when imported (the package imports them all)."""
    _BUILDERS[title] = builder


# --- the writer ----------------------------------------------------------------------

def write_report(user: str, *, cite_invented: bool = False) -> str:
    sources = [(int(n), _PUBLISHED_SUFFIX.sub("", title).strip(), url)
               for n, title, url in _LISTED_SOURCE.findall(user)]
    sources = list({n: (n, t, u) for n, t, u in sources}.values())  # listed twice in revisions
    numbers = [n for n, _, _ in sources] or [1]
    titles = {n: t for n, t, _ in sources}
    parts = _PART.findall(user)  # a section writer's part of the report (see pick_parts)
    subtopics = ([s.strip() for s in _SUBTOPIC_HEADING.findall(user)]
                 or [h[4:].strip() for h in parts if h.startswith("### ")] or ["Overview"])
    question = _first(_QUESTION, user) or "the research question"
    turn = _Cycler(numbers)

    def cite(sentence: str, n: int | None = None) -> str:
        return f"{sentence} [{n if n is not None else turn.next()}]."

    def about(n: int) -> str:
        return titles.get(n, f"source {n}")

    lines = [f"# {_report_title(question)}", "", "## Executive summary", ""]
    summary = [cite(f'The gathered sources give a consistent answer to "{question}"')]
    if "REVIEW FEEDBACK" in user:
        summary.append(REVISION_SENTENCE)
    summary.append(cite("The strongest evidence comes from recent, quantified reports"))
    if cite_invented:
        summary.append(INVENTED_SENTENCE)
    lines += [" ".join(summary), "", "## Key findings", ""]
    step = max(1, len(numbers) // MAX_KEY_FINDINGS)
    for n in numbers[::step][:MAX_KEY_FINDINGS]:
        lines.append("- " + cite(f"{about(n)} reports measurable effects relevant to the question", n))
    lines += ["", "## Analysis by subtopic", ""]
    for title in subtopics:
        lines += [f"### {title}", "",
                  cite(f"Evidence on {title.lower()} points in the same direction") + " "
                  + cite(f"The size of the effect on {title.lower()} varies by context"), ""]
    lines += ["## Comparison", "", "| Aspect | Finding | Source |", "| --- | --- | --- |"]
    for title in subtopics[: max(2, min(4, len(subtopics)))] + (
        ["Overall"] if len(subtopics) < 2 else []
    ):
        n = turn.next()
        lines.append(f"| {title} | Documented with figures | [{n}] |")
    lines += ["", "## Where sources disagree", "",
              cite("Sources differ on how large the effect is") + " "
              + cite("The difference mostly reflects different periods and samples"), "",
              "## Recommendations", "",
              "- " + cite("Act on the findings that several sources support"),
              "- " + cite("Monitor the figures that rest on a single source"), "",
              "## Open questions and gaps", "",
              "- " + cite("Long-term data remains scarce"), "",
              "## Confidence assessment", "",
              cite("Confidence is moderate because the sources agree on direction but not on size"),
              ""]
    uncited = [n for n in numbers if n not in turn.used]
    if uncited:  # one sentence citing the rest keeps the report short with many sources
        lines.insert(lines.index("## Confidence assessment") + 2,
                     "Further support comes from the remaining sources "
                     + "".join(f"[{n}]" for n in uncited) + ".")
    report = "\n".join(lines)
    if parts:
        report = pick_parts(report, parts)
        if cite_invented and INVENTED_SENTENCE not in report:
            report = report.rstrip() + "\n\n" + INVENTED_SENTENCE + "\n"
    return localise(report, user)


_PART = re.compile(r"<section>(.*?)</section>")


def pick_parts(report: str, headings: list[str]) -> str:
    """Only the requested headings' blocks of the whole report (a heading line and what
    follows it up to the next heading); a level-1 request takes the title line."""
    lines = report.split("\n")
    blocks = []

    def block(level: int, name: str) -> str | None:
        for i, line in enumerate(lines):
            mark = line[: level + 1]
            if mark != "#" * level + " " or (level > 1 and line[level + 1:].strip().lower() != name):
                continue
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("#")), len(lines))
            return "\n".join(lines[i:end]).strip()
        return None

    for wanted in headings:
        level = len(wanted) - len(wanted.lstrip("#"))
        name = wanted.lstrip("#").strip().lower()
        found = block(level, name)
        if found is None and level > 1 and not name.startswith("<"):
            # A heading of another shape ("Key points", "Bottom line"): written like a
            # model would, from the key findings' cited sentences under the asked heading.
            body = (block(2, "key findings") or "").split("\n", 1)[-1].strip()
            found = f"{wanted.strip()}\n\n{body}" if body else None
        if found:
            blocks.append(found)
    return "\n\n".join(blocks) + "\n"


_LANGUAGE = re.compile(r"Write the entire report in ([A-Z][a-z]+)")
HEADINGS = {
    "German": {
        "Executive summary": "Zusammenfassung", "Key findings": "Wichtigste Ergebnisse",
        "Analysis by subtopic": "Analyse nach Teilthemen", "Comparison": "Vergleich",
        "Where sources disagree": "Wo die Quellen sich widersprechen",
        "Recommendations": "Empfehlungen", "Open questions and gaps": "Offene Fragen und Lücken",
        "Confidence assessment": "Einschätzung der Verlässlichkeit",
    },
}


_AT_MOST = re.compile(r"At most (\d+) words", re.IGNORECASE)
_WHOLE = re.compile(r"report of at most (\d+) words", re.IGNORECASE)
_CITE = re.compile(r"\[(\d+)\]")
PAD_SENTENCE = "Further detail reported on this point agrees with the cited evidence [{n}]."


def lengthen(report: str, user: str, words: int) -> str:
    """Pad the report with cited sentences to about `words` words, as a model asked for a
    long report writes one; a prompt for part of a report ("At most N words" of a "report of
    at most M words") gets its share N/M of that length."""
    if words <= 0:
        return report
    limit = _int(_AT_MOST, user, 0)
    whole = _int(_WHOLE, user, 0)
    target = words * limit // whole if limit and whole else min(words, limit or words)
    lines = report.split("\n")
    prose = [i for i, line in enumerate(lines)
             if line.strip() and not line.lstrip().startswith(("#", "-", "|", "*"))]
    numbers = [int(n) for n in _CITE.findall(report)] or [1]
    if not prose:
        lines.append("")
        prose = [len(lines) - 1]
    count, k = len(report.split()), 0
    while count < target:
        i = prose[k % len(prose)]
        sentence = PAD_SENTENCE.format(n=numbers[k % len(numbers)])
        lines[i] = (lines[i] + " " + sentence).strip()
        count += len(sentence.split())
        k += 1
    return "\n".join(lines)


def localise(report: str, user: str) -> str:
    """Translate the fixed headings when the writer is asked for another language."""
    match = _LANGUAGE.search(user)
    table = HEADINGS.get(match.group(1), {}) if match else {}
    for english, translated in table.items():
        report = report.replace(f"## {english}\n", f"## {translated}\n")
    return report


def shorten_report(user: str) -> str:
    """Answer the "shorten it to fit" prompt: drop list items from the end until it fits."""
    match = _SHORTEN.search(user)
    limit = int(match.group(2)) if match else 1000
    start = user.find("\n# ")
    lines = (user[start + 1 :] if start != -1 else user).splitlines()
    while _words(lines) > limit:
        bullets = [i for i, line in enumerate(lines) if line.startswith("- ")]
        if not bullets:
            break
        del lines[bullets[-1]]
    return "\n".join(lines)


def _words(lines: list[str]) -> int:
    return sum(len(line.split()) for line in lines)


class _Cycler:
    def __init__(self, numbers: list[int]) -> None:
        self.numbers = numbers
        self.i = 0
        self.used: set[int] = set()

    def next(self) -> int:
        n = self.numbers[self.i % len(self.numbers)]
        self.i += 1
        self.used.add(n)
        return n


def _report_title(question: str) -> str:
    text = " ".join(question.strip().rstrip("?.!").split())
    return f"Research report: {text[:100]}" if text else "Research report"


# --- helpers -----------------------------------------------------------------------

def source_blocks(user: str) -> list[tuple[str, str]]:
    """(id, plain text) for each `<untrusted_source id="...">` block in order."""
    blocks = []
    for match in _SOURCE_OPEN.finditer(user):
        start = match.end()
        end = user.find(_SOURCE_CLOSE, start)
        text = user[start : end if end != -1 else len(user)]
        blocks.append((match.group(1), _plain(text)))
    return blocks


def claim_from(text: str) -> str:
    """The first factual sentence with a number; instructions planted in pages are skipped."""
    sentences = [s.strip() for s in _SENTENCE.split(text) if s.strip()]
    safe = [s for s in sentences if not _INJECTION.search(s)]
    for sentence in safe:
        if any(c.isdigit() for c in sentence):
            return sentence[:400]
    return safe[0][:400] if safe else ""


def _plain(text: str) -> str:
    return " ".join(html.unescape(_TAG.sub(" ", text)).split())


def _int(pattern: re.Pattern[str], text: str, default: int) -> int:
    match = pattern.search(text)
    return int(match.group(1)) if match else default


def _first(pattern: re.Pattern[str], text: str) -> str:
    match = pattern.search(text)
    return " ".join(match.group(1).split()) if match else ""


def stable_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


# --- schema fallback ---------------------------------------------------------------

def _resolve(node: Any, root: dict) -> Any:
    seen = 0
    while isinstance(node, dict) and "$ref" in node and seen < 20:
        ref = str(node["$ref"])
        target: Any = root
        for part in ref.lstrip("#/").split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        node = target
        seen += 1
    return node


def minimal_instance(node: Any, root: dict, depth: int = 0) -> Any:
    """A small value that validates against a JSON schema (as pydantic writes them)."""
    node = _resolve(node, root)
    if not isinstance(node, dict) or depth > 12:
        return None
    if "const" in node:
        return node["const"]
    if "default" in node:
        return node["default"]
    if node.get("enum"):
        return node["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if node.get(key):
            options = [_resolve(o, root) for o in node[key]]
            chosen = next((o for o in options if o.get("type") != "null"), options[0])
            return minimal_instance(chosen, root, depth + 1)
    kind = node.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in node:
        props = node.get("properties", {})
        return {name: minimal_instance(props.get(name, {}), root, depth + 1)
                for name in node.get("required", [])}
    if kind == "array":
        count = int(node.get("minItems", 0))
        return [minimal_instance(node.get("items", {}), root, depth + 1) for _ in range(count)]
    if kind == "string":
        return "x" * max(1, int(node.get("minLength", 1)))
    if kind in ("number", "integer"):
        low = node.get("minimum", node.get("exclusiveMinimum"))
        high = node.get("maximum", node.get("exclusiveMaximum"))
        if low is not None and high is not None:
            value = (float(low) + float(high)) / 2
        elif low is not None:
            value = float(low) + 1
        elif high is not None:
            value = float(high) - 1
        else:
            value = 0.0
        return round(value) if kind == "integer" else value
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return "x"


def fill_required(value: Any, node: Any, root: dict, depth: int = 0) -> Any:
    """Add required fields the builder did not know about (the schema may grow)."""
    node = _resolve(node, root)
    if not isinstance(node, dict) or depth > 12:
        return value
    if isinstance(value, dict) and ("properties" in node or node.get("type") == "object"):
        props = node.get("properties", {})
        for name in node.get("required", []):
            if name not in value:
                value[name] = minimal_instance(props.get(name, {}), root, depth + 1)
        for name, item in list(value.items()):
            if name in props:
                value[name] = fill_required(item, props[name], root, depth + 1)
    elif isinstance(value, list) and node.get("type") == "array":
        return [fill_required(v, node.get("items", {}), root, depth + 1) for v in value]
    return value
