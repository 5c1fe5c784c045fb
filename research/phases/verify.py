"""Verify: every cited claim is checked against the text of the sources it cites (SPEC step 7).

    split the latest draft into claims -> two independent passes (verifier, auditor) judge
    each claim against excerpts of its cited sources -> combine -> the critic challenges
    decision-critical and contested claims -> apply: remove, rewrite, mark -> new draft

The result is a new draft version (kind "verified", same numbering) that deliver exports, one
stored verdict row per claim, and a summary (share of supported claims...) kept as this step's
result. Deterministic guards sit beside the models: a claim citing no gathered source is never
sent to a model and never survives; a SUPPORTED verdict whose quoted passage is not in the
cited source's stored text counts as UNSUPPORTED; a rewrite may not add numbers or citations.
A failed model call degrades to "not verified" (flagged in the report), never to a failed run.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

from research.agents import Agent, Role
from research.checks import CITATION, cited_numbers, claim_sentences, word_count
from research.context import RunContext
from research.errors import ProviderError, SchemaError
from research.events import DraftCompleted
from research.events import Warning as WarningEvent
from research.export.document import CITATION_RE, expand_citation, map_prose, strip_foreign_links
from research.llm.base import Message
from research.prompts import clean_untrusted, new_nonce, system, untrusted_block
from storage import Store

STEP_KEY = "verify"
PASSAGE_CHARS = 1500          # excerpt of each cited source shown with a claim
MAX_SOURCES_PER_CLAIM = 3     # a claim citing more is judged against its most relevant three
BATCH_CLAIMS = 8
BATCH_CHARS = 18_000
MIN_QUOTE_WORDS = 4
VERIFY_THREADS = 16           # model calls of the verify step in flight at once (every batch of both passes)

QUALIFIED = "(qualified after verification)"
SINGLE_SOURCE = "(single source)"
NOT_VERIFIED = "(not verified)"
UNVERIFIED = "(UNVERIFIED)"
INSUFFICIENT = "Insufficient verified data for this section."
NOT_FULLY_SUPPORTED = "(not fully supported by the cited source)"
# What this phase writes into a report, for translation into the report's language.
MARKS = (QUALIFIED, SINGLE_SOURCE, NOT_VERIFIED, UNVERIFIED, INSUFFICIENT, NOT_FULLY_SUPPORTED)
NOTE_PREFIXES = ("- Removed after verification:", "*This subtopic could not be verified")

Verdict = Literal["SUPPORTED", "UNSUPPORTED", "OVERSTATED", "CONTRADICTED"]
CriticVerdict = Literal["SURVIVES", "DOWNGRADE", "REJECT"]

# --- prompts and answers ------------------------------------------------------------------------

VERIFIER_ROLE = (
    "You are the fact-checker of a research team. You check each claim of a report against "
    "the text of the sources it cites, and against nothing else."
)

VERIFY_PROMPT = """Check the claims below from a research report answering:
<question>{question}</question>

Each claim comes with excerpts of the sources it cites. For every claim decide:
- SUPPORTED: an excerpt states it (figures, dates, direction and strength all match)
- OVERSTATED: an excerpt supports only a weaker, narrower or less certain version
- CONTRADICTED: an excerpt says otherwise
- UNSUPPORTED: the excerpts do not say it
Quote word for word the passage (one or two sentences) that decides the verdict and give the
id of the excerpt you quoted. Judge only by the excerpts, never by what you know; citation
numbers like [3] are not evidence. Answer once for every claim id.

CLAIMS:
{claims}"""

AUDITOR_ROLE = (
    "You are an independent auditor of research reports. You did not write or check this "
    "report before. You assume a claim is unproven until a source excerpt proves it."
)

AUDIT_PROMPT = """Audit these claims one by one. For each, first read the source excerpts that
come with it, then the claim, and ask: would a careful reader of only these excerpts accept the
claim exactly as written?

Verdicts:
- UNSUPPORTED when no excerpt says it (the default when in doubt)
- CONTRADICTED when an excerpt says the opposite or gives a different figure
- OVERSTATED when the claim is stronger, broader or more certain than the excerpt
- SUPPORTED only when an excerpt says it; then copy that passage exactly as "quote"
Give the excerpt id you relied on. Do not use outside knowledge. Every claim id needs an answer.

The report answers: <question>{question}</question>

ITEMS:
{claims}"""


class ClaimVerdict(BaseModel):
    claim_id: str
    verdict: Verdict
    quote: str = Field(default="", description="the deciding passage, copied word for word")
    source: str = Field(default="", description="id of the excerpt quoted")
    reason: str = ""


class ClaimVerdicts(BaseModel):
    """The verifier's answer."""
    verdicts: list[ClaimVerdict] = Field(default_factory=list)


class AuditVerdicts(ClaimVerdicts):
    """The auditor's answer (same shape, its own name: the passes stay distinguishable)."""


CRITIC_ROLE = (
    "You are the critic of a research team. You challenge the claims a report's conclusions "
    "rest on, and the claims its two fact-checkers disagreed about."
)

CRITIC_PROMPT = """Challenge each claim below once. You see the claim, where it sits in the
report, what two independent fact-checkers said, and excerpts of the sources it cites.

- SURVIVES: the excerpts carry the claim as written
- DOWNGRADE: the excerpts carry only a more cautious version; the claim must be qualified
- REJECT: the excerpts do not carry it; the claim must leave the report
Judge only by the excerpts. Answer once for every claim id.

The report answers: <question>{question}</question>

CLAIMS:
{claims}"""


class CriticJudgement(BaseModel):
    claim_id: str
    verdict: CriticVerdict
    reason: str = ""


class CriticVerdicts(BaseModel):
    judgements: list[CriticJudgement] = Field(default_factory=list)


WRITER_ROLE = (
    "You are the writer of a research team. You correct your report's sentences so that they "
    "claim no more than their sources say."
)

REWRITE_PROMPT = """Fact-checking found that these sentences of your report say more than
their sources support. Rewrite each one so it states only what the quoted passage supports:
more cautious, narrower or attributed ("according to ..."). Rules:
- keep the citation numbers exactly as they are, e.g. [3];
- add no number, date, source or fact that is not already in the sentence;
- one sentence each, plain text, no Markdown.

{claims}"""


class ClaimRewrite(BaseModel):
    claim_id: str
    text: str


class ClaimRewrites(BaseModel):
    rewrites: list[ClaimRewrite] = Field(default_factory=list)


# --- claims ---------------------------------------------------------------------------------


@dataclass
class Claim:
    id: str
    text: str                 # the sentence exactly as in the draft
    line: int                 # index of its line in the draft
    section: str              # the ## heading it sits under
    kind: str                 # executive | findings | analysis | recommendations | other
    subtopic: str | None      # the ### heading, under "Analysis by subtopic"
    numbers: list[int]        # one citation number per cited gathered source...
    source_ids: list[str]     # ...and the source ids, in the same order
    invalid: list[int]        # citation numbers that do not
    excerpts: dict[str, str] = field(default_factory=dict)  # source id -> excerpt shown


@dataclass
class PassVerdict:
    verdict: str              # one of Verdict, or "" when this pass gave none
    quote: str = ""
    source: str = ""
    reason: str = ""
    note: str = ""            # what the deterministic guard changed


@dataclass
class Outcome:
    claim: Claim
    first: PassVerdict
    second: PassVerdict
    combined: str             # supported | overstated | unsupported | contested | unchecked
    critic: str = ""          # SURVIVES | DOWNGRADE | REJECT, or "" when not challenged
    critic_reason: str = ""
    status: str = ""          # supported | qualified | removed | unverified
    final_text: str = ""
    rewritten: bool = False
    single_source: bool = False
    note: str = ""


_SECTION_KINDS = (
    ("executive", re.compile(r"executive summary|summary", re.IGNORECASE)),
    ("findings", re.compile(r"key findings|findings", re.IGNORECASE)),
    ("analysis", re.compile(r"analysis by subtopic|analysis", re.IGNORECASE)),
    ("recommendations", re.compile(r"recommendation", re.IGNORECASE)),
    ("skip", re.compile(r"open questions|gaps|^\s*(?:sources|references|bibliography|works cited)\b",
                        re.IGNORECASE)),
)
# The writer's required order (write.STRUCTURE), used when headings are not in English.
_POSITIONAL = {0: "executive", 1: "findings", 2: "analysis", 5: "recommendations", 6: "skip"}
CRITICAL_KINDS = ("executive", "findings", "recommendations")
LOAD_BEARING_KINDS = ("executive", "findings")
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _kind_of(title: str) -> str | None:
    for kind, pattern in _SECTION_KINDS:
        if pattern.search(title):
            return kind
    return None


def _section_kinds(lines: Sequence[str]) -> dict[int, str]:
    """Kind of every `##` heading, by name; by position when no name is recognised."""
    headings = [(i, _HEADING.match(line)) for i, line in enumerate(lines)]
    level2 = [(i, m.group(2).strip()) for i, m in headings if m and len(m.group(1)) == 2]
    named = {i: _kind_of(title) for i, title in level2}
    if any(named.values()):
        return {i: kind or "other" for i, kind in named.items()}
    return {i: _POSITIONAL.get(pos, "other") for pos, (i, _) in enumerate(level2)}


def split_claims(text: str, numbering: Mapping[int, str], known: Iterable[str]) -> list[Claim]:
    """Every cited sentence outside headings, tables, quotes, code and the open-questions and
    sources sections, with its section, subtopic and cited source ids."""
    known_ids = set(known)
    lines = text.splitlines()
    kinds = _section_kinds(lines)
    claims: list[Claim] = []
    section, kind, subtopic = "Introduction", "other", None
    in_fence = False
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        heading = _HEADING.match(line)
        if heading:
            level, title = len(heading.group(1)), heading.group(2).strip()
            if level == 2:
                section, kind, subtopic = title, kinds.get(i, "other"), None
            elif level >= 3 and kind == "analysis":
                subtopic = re.sub(r"^subtopic:\s*", "", title, flags=re.IGNORECASE)
            continue
        if kind == "skip":
            continue
        for sentence in claim_sentences(line):
            if not CITATION.search(sentence) or sentence not in line:
                continue
            numbers = list(dict.fromkeys(cited_numbers(sentence)))
            first_number: dict[str, int] = {}  # source id -> its first number in the sentence
            for n in numbers:
                if numbering.get(n) in known_ids:
                    first_number.setdefault(numbering[n], n)
            claims.append(Claim(
                id=f"c{len(claims) + 1}", text=sentence, line=i, section=section, kind=kind,
                subtopic=subtopic, numbers=list(first_number.values()),
                source_ids=list(first_number), invalid=[n for n in numbers
                                                        if numbering.get(n) not in known_ids],
            ))
    return claims


# --- excerpts and the quote guard ---------------------------------------------------------------

_STOP = frozenset(
    "the a an and or of to in on for by with from at as is are was were be been this that these "
    "those it its their there than then into over under about between more most less least "
    "also which who what when where how not no has have had can could may might will would "
    "report reports source sources according".split()
)
_WORD = re.compile(r"[a-z0-9][a-z0-9'-]*")
_SENTENCES = re.compile(r"(?<=[.!?])\s+")
_ELLIPSIS = re.compile(r"\[\s*(?:\.\.\.|…)\s*\]|\.\.\.|…")


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _STOP}


def excerpt(source_text: str, claim: str, limit: int = PASSAGE_CHARS) -> str:
    """The sentences of a source that share the most words with the claim, in page order,
    up to `limit` characters (the start of the page when nothing overlaps)."""
    text = " ".join(source_text.split())
    if len(text) <= limit:
        return text
    sentences = [s for s in _SENTENCES.split(text) if s]
    wanted = _words(CITATION.sub("", claim))
    scored = sorted(
        ((len(wanted & _words(s)), -i, i) for i, s in enumerate(sentences)), reverse=True
    )
    if not scored or scored[0][0] == 0:
        return text[:limit].rsplit(" ", 1)[0]
    chosen: list[int] = []
    used = 0
    for score, _, i in scored:
        if score == 0:
            break
        piece = sentences[i][: limit - used] if not chosen else sentences[i]
        if used + len(piece) + 1 > limit:
            continue
        chosen.append(i)
        used += len(piece) + 1
    chosen.sort()
    return " ".join(sentences[i][:limit] for i in chosen)


def _normal(text: str) -> str:
    text = clean_untrusted(html.unescape(text)).lower()
    return " ".join(re.sub(r"[^\w]+", " ", text).split())


def quote_found(quote: str, texts: Iterable[str]) -> bool:
    """Whether the quoted passage occurs in one of the texts, ignoring case, whitespace and
    punctuation; an ellipsis may join pieces, each of which must occur."""
    pieces = [_normal(p) for p in _ELLIPSIS.split(quote)]
    pieces = [p for p in pieces if p]
    if not pieces or max(len(p.split()) for p in pieces) < MIN_QUOTE_WORDS:
        return False
    haystacks = [_normal(t) for t in texts if t]
    return any(all(p in h for p in pieces) for h in haystacks)


# --- the passes -------------------------------------------------------------------------------


def _claim_text(text: str) -> str:
    """A sentence from the writer, made safe to sit inside our <claim> tags."""
    return re.sub(r"<\s*/?\s*claim\b[^>]*>?", "[removed tag]", clean_untrusted(text),
                  flags=re.IGNORECASE)


def _attr(text: str) -> str:
    return _claim_text(text).replace('"', "'").replace("\n", " ")


def _blocks(claim: Claim, sources: Mapping[str, Mapping[str, Any]], nonce: str) -> list[str]:
    by_id = {sid: n for n, sid in zip(claim.numbers, claim.source_ids, strict=False)}
    return [
        untrusted_block(f"{claim.id}/{by_id.get(sid, '?')}",
                        {"title": sources[sid].get("title"), "published": sources[sid].get("published")},
                        text, nonce)
        for sid, text in claim.excerpts.items()
    ]


def _item(claim: Claim, sources: Mapping[str, Mapping[str, Any]], nonce: str, *,
          sources_first: bool) -> str:
    head = f'<claim id="{claim.id}" section="{_attr(claim.section)}">{_claim_text(claim.text)}</claim>'
    blocks = "\n".join(_blocks(claim, sources, nonce))
    return f"{blocks}\n{head}" if sources_first else f"{head}\n{blocks}"


def _batches(claims: Sequence[Claim]) -> list[list[Claim]]:
    batches: list[list[Claim]] = []
    size = 0
    for claim in claims:
        chars = len(claim.text) + sum(len(e) + 120 for e in claim.excerpts.values())
        if batches and len(batches[-1]) < BATCH_CLAIMS and size + chars <= BATCH_CHARS:
            batches[-1].append(claim)
            size += chars
        else:
            batches.append([claim])
            size = chars
    return batches


@dataclass(frozen=True)
class _Pass:
    role: Role
    persona: str
    prompt: str
    answer: type[ClaimVerdicts]
    reverse: bool             # the auditor sees the claims in reverse order...
    sources_first: bool       # ...and each claim's excerpts before the claim


VERIFIER_PASS = _Pass(Role.VERIFIER, VERIFIER_ROLE, VERIFY_PROMPT, ClaimVerdicts, False, False)
AUDITOR_PASS = _Pass(Role.AUDITOR, AUDITOR_ROLE, AUDIT_PROMPT, AuditVerdicts, True, True)


def _judge_batch(ctx: RunContext, agent: Agent, spec: _Pass, batch: list[Claim],
                 sources: Mapping[str, Mapping[str, Any]]) -> dict[str, PassVerdict]:
    ctx.control.checkpoint()
    nonce = new_nonce()
    ordered = list(reversed(batch)) if spec.reverse else batch
    items = "\n\n".join(_item(c, sources, nonce, sources_first=spec.sources_first) for c in ordered)
    messages = [
        system(spec.persona, ctx.today),
        Message("user", spec.prompt.format(question=clean_untrusted(ctx.question), claims=items)),
    ]
    answer = agent.llm.structured(messages, spec.answer, deadline=ctx.step_deadline())
    wanted = {c.id for c in batch}
    return {
        v.claim_id: PassVerdict(v.verdict, v.quote.strip(), v.source.strip(), v.reason.strip())
        for v in answer.verdicts if v.claim_id in wanted
    }


def _submit_pass(ctx: RunContext, spec: _Pass, claims: Sequence[Claim],
                 sources: Mapping[str, Mapping[str, Any]], pool: ThreadPoolExecutor) -> list[Future[Any]]:
    if not claims:
        return []
    agent = ctx.lead.delegate(spec.role)
    return [pool.submit(_judge_batch, ctx, agent, spec, batch, sources) for batch in _batches(claims)]


def _collect(ctx: RunContext, futures: Sequence[Future[Any]]) -> tuple[dict[str, PassVerdict], list[str]]:
    """One pass's verdicts; a batch whose call failed leaves its claims without a verdict."""
    verdicts: dict[str, PassVerdict] = {}
    errors: list[str] = []
    for future in futures:
        try:
            verdicts.update(future.result())
        except (ProviderError, SchemaError) as exc:
            errors.append(ctx.safe(str(exc)))
    return verdicts, errors


def guard(verdict: PassVerdict, claim: Claim, sources: Mapping[str, Mapping[str, Any]]) -> PassVerdict:
    """A SUPPORTED verdict must quote a passage that is really in a cited source."""
    if verdict.verdict != "SUPPORTED":
        return verdict
    texts = [f"{sources[sid].get('text') or ''}\n{sources[sid].get('snippet') or ''}"
             for sid in claim.source_ids]
    if quote_found(verdict.quote, texts):
        return verdict
    why = ("no passage was quoted" if not verdict.quote.strip()
           else "the quoted passage does not occur in the cited sources")
    return PassVerdict("UNSUPPORTED", verdict.quote, verdict.source, verdict.reason,
                       note=f"SUPPORTED overruled: {why}.")


def combine(first: str, second: str) -> str:
    """Two passes -> supported | overstated | unsupported | contested | unchecked."""
    given = {v for v in (first, second) if v}
    if not given:
        return "unchecked"
    if "CONTRADICTED" in given:
        return "unsupported"
    if len(given) == 1 and first == second:
        return {"SUPPORTED": "supported", "UNSUPPORTED": "unsupported",
                "OVERSTATED": "overstated"}[first]
    if first and second and given <= {"SUPPORTED", "OVERSTATED"}:
        return "overstated"
    return "contested"  # the passes disagree, or only one answered


# --- the critic and the writer -------------------------------------------------------------------


def _pass_line(name: str, v: PassVerdict) -> str:
    if not v.verdict:
        return f"{name}: no verdict"
    line = f"{name}: {v.verdict}"
    if v.quote:
        line += f' — quoted "{clean_untrusted(v.quote)[:400]}"'
    if v.note:
        line += f" ({v.note})"
    return line


def _challenge(ctx: RunContext, outcomes: Sequence[Outcome],
               sources: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, CriticJudgement], list[str]]:
    if not outcomes:
        return {}, []
    critic = ctx.lead.delegate(Role.CRITIC)
    by_id = {o.claim.id: o for o in outcomes}

    def judge(batch: list[Claim]) -> dict[str, CriticJudgement]:
        ctx.control.checkpoint()
        nonce = new_nonce()
        items = []
        for claim in batch:
            o = by_id[claim.id]
            items.append(
                f'<claim id="{claim.id}" section="{_attr(claim.section)}">'
                f"{_claim_text(claim.text)}\n{_pass_line('First check', o.first)}\n"
                f"{_pass_line('Second check', o.second)}</claim>\n"
                + "\n".join(_blocks(claim, sources, nonce))
            )
        messages = [
            system(CRITIC_ROLE, ctx.today),
            Message("user", CRITIC_PROMPT.format(question=clean_untrusted(ctx.question),
                                                 claims="\n\n".join(items))),
        ]
        answer = critic.llm.structured(messages, CriticVerdicts, deadline=ctx.step_deadline())
        wanted = {c.id for c in batch}
        return {j.claim_id: j for j in answer.judgements if j.claim_id in wanted}

    batches = _batches([o.claim for o in outcomes])
    found: dict[str, CriticJudgement] = {}
    errors: list[str] = []
    # The batches are independent: all at once.
    with ThreadPoolExecutor(max_workers=min(VERIFY_THREADS, len(batches)),
                            thread_name_prefix="critic") as pool:
        futures = [pool.submit(judge, batch) for batch in batches]
        for future in futures:
            try:
                found.update(future.result())
            except (ProviderError, SchemaError) as exc:
                errors.append(ctx.safe(str(exc)))
    return found, errors


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def accept_rewrite(original: str, rewrite: str) -> str | None:
    """The rewrite, if it adds no number and no citation and keeps the original's citations;
    otherwise None. Citations it dropped are put back at its end."""
    text = " ".join(rewrite.replace("\n", " ").split()).lstrip("#>-*+ ").strip()
    if len(text.split()) < 3 or len(text) > max(600, 2 * len(original)):
        return None
    cited_before = set(cited_numbers(original))
    cited_after = set(cited_numbers(text))
    if not cited_after <= cited_before:
        return None
    numbers_before = set(_NUMBER.findall(CITATION.sub(" ", original)))
    if not set(_NUMBER.findall(CITATION.sub(" ", text))) <= numbers_before:
        return None
    if not cited_after:
        cites = "".join(f"[{n}]" for n in dict.fromkeys(cited_numbers(original)))
        body = text.rstrip()
        end = body[-1] if body[-1:] in ".!?" else "."
        text = f"{body.rstrip('.!?').rstrip()} {cites}{end}"
    return text


def _rewrite(ctx: RunContext, outcomes: Sequence[Outcome]) -> tuple[dict[str, str], list[str]]:
    if not outcomes:
        return {}, []
    writer = ctx.lead.delegate(Role.WRITER)
    items = []
    for o in outcomes:
        quote = o.first.quote if o.first.verdict in ("SUPPORTED", "OVERSTATED") else o.second.quote
        why = o.critic_reason or o.first.reason or o.second.reason
        items.append(
            f'<claim id="{o.claim.id}">{_claim_text(o.claim.text)}</claim>\n'
            + (f'Quoted passage: "{clean_untrusted(quote)[:500]}"\n' if quote else "")
            + (f"Why: {clean_untrusted(why)[:300]}\n" if why else "")
        )
    messages = [
        system(WRITER_ROLE, ctx.today),
        Message("user", REWRITE_PROMPT.format(claims="\n".join(items))),
    ]
    try:
        answer = writer.llm.structured(messages, ClaimRewrites, deadline=ctx.step_deadline())
    except (ProviderError, SchemaError) as exc:
        return {}, [ctx.safe(str(exc))]
    wanted = {o.claim.id: o.claim.text for o in outcomes}
    accepted: dict[str, str] = {}
    for r in answer.rewrites:
        if r.claim_id in wanted:
            text = accept_rewrite(wanted[r.claim_id], r.text)
            if text:
                accepted[r.claim_id] = text
    return accepted, []


# --- deciding and applying ---------------------------------------------------------------------


def decide(o: Outcome) -> None:
    """Final status from the combined verdict and the critic's judgement."""
    if not o.claim.source_ids:
        o.status, o.note = "removed", "It cites no source gathered in this run."
    elif o.combined == "unsupported":
        o.status = "removed"
    elif o.combined == "unchecked":
        o.status, o.note = "unverified", "Neither check could be completed."
    elif o.critic == "REJECT":
        o.status = "removed"
    elif o.critic == "DOWNGRADE" or o.combined == "overstated":
        o.status = "qualified"
    elif o.combined == "contested" and o.critic != "SURVIVES":
        o.status, o.note = "qualified", "The checks disagreed and the critic gave no verdict."
    else:
        o.status = "supported"


def mark(sentence: str, marker: str) -> str:
    """Insert '(marker)' before the sentence's trailing citations and full stop."""
    if marker.strip("()").lower() in sentence.lower():
        return sentence
    match = re.match(r"^(.*?)(\s*(?:\[[^\]]*\]\s*)*)([.!?]*)\s*$", sentence, re.DOTALL)
    if not match:
        return f"{sentence} {marker}"
    body, cites, end = match.groups()
    return f"{body.rstrip()} {marker}{(' ' + cites.strip()) if cites.strip() else ''}{end}"


def _clean_line(line: str) -> str | None:
    """A line after sentences were cut from it; None when nothing that says anything is left."""
    prefix = _LIST_MARK.match(line)
    lead = prefix.group(0) if prefix else line[: len(line) - len(line.lstrip())]
    rest = " ".join(line[len(lead):].split())
    if not re.search(r"[A-Za-z0-9À-ÿ]", CITATION.sub("", rest)):
        return None
    return lead + rest


def apply(text: str, outcomes: Sequence[Outcome], *, numbering: Mapping[int, str],
          sources: Mapping[str, Mapping[str, Any]], failed_titles: Iterable[str]) -> tuple[str, list[str]]:
    """The verified draft and the titles of the subtopics marked UNVERIFIED."""
    lines = text.splitlines()
    by_line: dict[int, list[Outcome]] = {}
    for o in outcomes:
        by_line.setdefault(o.claim.line, []).append(o)
    dropped: set[int] = set()
    for i, group in by_line.items():
        line = lines[i]
        for o in group:
            if o.status == "removed":
                new = ""
            elif o.status == "qualified":
                new = mark(o.final_text or o.claim.text, QUALIFIED if o.rewritten
                           else NOT_FULLY_SUPPORTED)
            elif o.status == "unverified":
                new = mark(o.claim.text, NOT_VERIFIED)
            else:
                new = o.claim.text
            if o.single_source and o.status != "removed":
                new = mark(new, SINGLE_SOURCE)
            o.final_text = new
            line = line.replace(o.claim.text, new, 1)
        cleaned = _clean_line(line)
        if cleaned is None:
            dropped.add(i)
        else:
            lines[i] = cleaned

    lines = [line for i, line in enumerate(lines) if i not in dropped]
    removed = [o for o in outcomes if o.status == "removed"]
    if removed:
        lines = _removal_note(lines, removed)
    lines = _fill_empty_sections(lines)
    unverified = _mark_subtopics(lines, outcomes, failed_titles)  # after the filling: its note is no data
    lines = _single_blank_lines(lines)
    body = "\n".join(lines).rstrip() + "\n"
    return _only_gathered(body, numbering, sources), unverified


def _mark_subtopics(lines: list[str], outcomes: Sequence[Outcome],
                    failed_titles: Iterable[str]) -> list[str]:
    """Mark (in place) the ### subtopic headings that could not be grounded; their titles."""
    failed = {_normal(t) for t in failed_titles if t}
    by_subtopic: dict[str, list[Outcome]] = {}
    for o in outcomes:
        if o.claim.subtopic:
            by_subtopic.setdefault(o.claim.subtopic, []).append(o)
    kinds = _section_kinds(lines)
    marked: list[str] = []
    notes: dict[int, list[str]] = {}
    kind = "other"
    for i, line in enumerate(list(lines)):
        heading = _HEADING.match(line)
        if not heading:
            continue
        level, title = len(heading.group(1)), heading.group(2).strip()
        if level == 2:
            kind = kinds.get(i, "other")
            continue
        if level != 3 or kind != "analysis":
            continue
        name = re.sub(r"^subtopic:\s*", "", title, flags=re.IGNORECASE)
        group = by_subtopic.get(name, [])
        supported = sum(1 for o in group if o.status == "supported")
        grounded = bool(group) and supported * 2 > len(group)
        is_failed = _normal(name) in failed or any(f and f in _normal(name) for f in failed)
        if is_failed or not grounded:
            marked.append(name)
            reason = ("its research failed" if is_failed
                      else "most of its claims were not supported by their sources")
            notes[i] = [f"{heading.group(1)} {title} {UNVERIFIED}", "",
                        f"*This subtopic could not be verified ({reason}); treat what follows as "
                        "unverified, not as established fact.*"]
    for i in sorted(notes, reverse=True):
        lines[i:i + 1] = notes[i]
    return marked


def _removal_note(lines: list[str], removed: Sequence[Outcome]) -> list[str]:
    sections = ", ".join(dict.fromkeys(o.claim.section for o in removed))
    note = (f"- Removed after verification: {len(removed)} claim"
            f"{'s' if len(removed) != 1 else ''} that the cited sources did not support "
            f"(from: {sections}).")
    for i, line in enumerate(lines):
        heading = _HEADING.match(line)
        if heading and len(heading.group(1)) == 2 and _kind_of(heading.group(2)) == "skip" \
                and re.search(r"open questions|gaps", heading.group(2), re.IGNORECASE):
            end = i + 1
            while end < len(lines) and not _HEADING.match(lines[end]):
                end += 1
            while end > i + 1 and not lines[end - 1].strip():
                end -= 1
            return [*lines[:end], note, *lines[end:]]
    return [*lines, "", "## Open questions and gaps", "", note]


def _fill_empty_sections(lines: list[str]) -> list[str]:
    """A ## or ### section left with nothing under it says so instead of standing empty."""
    out: list[str] = []
    heads = [(i, len(m.group(1))) for i, m in ((i, _HEADING.match(line)) for i, line in enumerate(lines))
             if m and len(m.group(1)) in (2, 3)]
    empty: set[int] = set()
    for n, (i, level) in enumerate(heads):
        end = next((j for j, lv in heads[n + 1:] if lv <= level), len(lines))
        if not any(line.strip() for line in lines[i + 1:end]):
            empty.add(i)
    for i, line in enumerate(lines):
        out.append(line)
        if i in empty:
            out += ["", INSUFFICIENT, ""]
    return out


def _single_blank_lines(lines: list[str]) -> list[str]:
    """No runs of blank lines where sentences were cut (code blocks keep theirs)."""
    out: list[str] = []
    in_fence = False
    for line in lines:
        if _FENCE.match(line):
            in_fence = not in_fence
        if not in_fence and not line.strip() and out and not out[-1].strip():
            continue
        out.append(line)
    return out


def _only_gathered(body: str, numbering: Mapping[int, str], sources: Mapping[str, Any]) -> str:
    """Drop citations that do not resolve to a gathered source and links to pages never gathered."""
    valid = {n for n, sid in numbering.items() if sid in sources}

    def renumber(match: re.Match[str]) -> str:
        kept = [n for n in dict.fromkeys(expand_citation(match.group("items"))) if n in valid]
        return match.group("space") + "".join(f"[{n}]" for n in kept) if kept else ""

    body = map_prose(body, lambda chunk: CITATION_RE.sub(renumber, chunk))
    return strip_foreign_links(body, (str(s.get("url") or "") for s in sources.values()))


# --- the step ---------------------------------------------------------------------------------


def run(ctx: RunContext, plan: list[dict[str, Any]], failed: list[dict[str, Any]]) -> None:
    """Verify the latest draft and save the result as a new "verified" draft (skipped on resume)."""
    ctx.run_step(STEP_KEY, "verify", "Verifying claims against their sources",
                 lambda: _verify(ctx, plan, failed))


def _verify(ctx: RunContext, plan: list[dict[str, Any]], failed: list[dict[str, Any]]) -> dict[str, Any]:
    drafts = ctx.store.get_drafts(ctx.run_id)
    base = [d for d in drafts if d["kind"] != "verified"][-1]
    redo = [d for d in drafts if d["kind"] == "verified" and d["version"] > base["version"]]
    version = redo[0]["version"] if redo else max(d["version"] for d in drafts) + 1
    sources = {s["id"]: s for s in ctx.store.get_sources(ctx.run_id)}
    numbering = base["numbering"]
    claims = split_claims(base["text"], numbering, sources)
    for claim in claims:
        found = {sid: excerpt(_source_text(sources[sid]), claim.text) for sid in claim.source_ids}
        wanted = _words(claim.text)
        ranked = sorted(found, key=lambda sid: -len(wanted & _words(found[sid])))  # stable
        claim.excerpts = {sid: found[sid] for sid in ranked[:MAX_SOURCES_PER_CLAIM]}

    checkable = [c for c in claims if c.source_ids]
    errors: list[str] = []
    workers = max(1, min(VERIFY_THREADS, 2 * len(_batches(checkable))))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="verify") as pool:
        # Both passes at once; neither sees the other's answers.
        pending = [_submit_pass(ctx, spec, checkable, sources, pool)
                   for spec in (VERIFIER_PASS, AUDITOR_PASS)]
        (first, errs1), (second, errs2) = (_collect(ctx, futures) for futures in pending)
    errors += errs1 + errs2

    outcomes = []
    for claim in claims:
        a = guard(first.get(claim.id, PassVerdict("")), claim, sources)
        b = guard(second.get(claim.id, PassVerdict("")), claim, sources)
        combined = combine(a.verdict, b.verdict) if claim.source_ids else "unsupported"
        if not claim.source_ids:
            a = b = PassVerdict("UNSUPPORTED", note="cites no source gathered in this run")
        outcomes.append(Outcome(claim, a, b, combined))

    challenged = [o for o in outcomes if o.claim.source_ids and (
        o.combined == "contested"
        or (o.claim.kind in CRITICAL_KINDS and o.combined in ("supported", "overstated")))]
    judgements, errs = _challenge(ctx, challenged, sources)
    errors += errs
    for o in challenged:
        if o.claim.id in judgements:
            o.critic = judgements[o.claim.id].verdict
            o.critic_reason = judgements[o.claim.id].reason.strip()
    for o in outcomes:
        decide(o)

    rewrites, errs = _rewrite(ctx, [o for o in outcomes if o.status == "qualified"])
    errors += errs
    for o in outcomes:
        if o.claim.id in rewrites:
            o.final_text, o.rewritten = rewrites[o.claim.id], True
        o.single_source = (o.status in ("supported", "qualified")
                           and o.claim.kind in LOAD_BEARING_KINDS and len(o.claim.source_ids) == 1)

    failed_titles = [s.get("title", "") for s in failed]
    text, unverified = apply(base["text"], outcomes, numbering=numbering, sources=sources,
                             failed_titles=failed_titles)
    rows = [_row(o, numbering) for o in outcomes]
    ctx.store.save_draft(ctx.run_id, version, "verified", text, numbering, word_count(text))
    ctx.store.save_verifications(ctx.run_id, rows)
    result = summarise(rows, unverified)
    if errors:
        unchecked = sum(1 for o in outcomes if o.status == "unverified")
        ctx.emit(WarningEvent(ctx.run_id, f"{len(errors)} verification call(s) failed ({errors[0]}); "
                         f"{unchecked} claim(s) could not be checked and are marked as not verified.",
                         step=STEP_KEY))
    ctx.emit(DraftCompleted(ctx.run_id, f"Verified draft {version} saved. {result['line']}",
                            step=STEP_KEY, data={"version": version, **_counts(result)}))
    return {**result, "version": version, "draft_version": base["version"],
            "errors": errors[:10]}


def _source_text(source: Mapping[str, Any]) -> str:
    return str(source.get("text") or source.get("snippet") or source.get("title") or "")


def _row(o: Outcome, numbering: Mapping[int, str]) -> dict[str, Any]:
    quote = next((v.quote for v in (o.first, o.second)
                  if v.verdict in ("SUPPORTED", "OVERSTATED", "CONTRADICTED") and v.quote), "")
    numbers = {sid: n for n, sid in numbering.items()}
    return {
        "claim_id": o.claim.id, "claim": o.claim.text, "source_ids": o.claim.source_ids,
        "verdict": o.combined.upper(), "passage": quote or None,
        "reviewer": "verifier, auditor" + (", critic" if o.critic else ""),
        "section": o.claim.section, "subtopic": o.claim.subtopic,
        "verifier_verdict": o.first.verdict or None, "auditor_verdict": o.second.verdict or None,
        "critic_verdict": o.critic or None, "status": o.status,
        "final_text": o.final_text if o.status != "removed" else None,
        "note": " ".join(n for n in (o.note, o.first.note, o.second.note) if n) or None,
        "details": {
            "numbers": [numbers.get(sid) for sid in o.claim.source_ids],
            "invalid_citations": o.claim.invalid,
            "verifier": _pass_dict(o.first), "auditor": _pass_dict(o.second),
            "critic_reason": o.critic_reason, "rewritten": o.rewritten,
            "single_source": o.single_source,
            "excerpts": {sid: text[:PASSAGE_CHARS] for sid, text in o.claim.excerpts.items()},
        },
    }


def _pass_dict(v: PassVerdict) -> dict[str, str]:
    return {"verdict": v.verdict, "quote": v.quote, "source": v.source, "reason": v.reason,
            "note": v.note}


# --- the summary ------------------------------------------------------------------------------

_COUNT_KEYS = ("claims", "supported", "share_supported", "unsupported_removed", "rewritten",
               "single_source")


def _counts(summary: Mapping[str, Any]) -> dict[str, Any]:
    return {k: summary[k] for k in _COUNT_KEYS}


def summarise(rows: Sequence[Mapping[str, Any]], unverified_subtopics: Sequence[str]) -> dict[str, Any]:
    claims = len(rows)
    supported = sum(1 for r in rows if r.get("status") == "supported")
    removed = sum(1 for r in rows if r.get("status") == "removed")
    rewritten = sum(1 for r in rows if r.get("status") == "qualified")
    single = sum(1 for r in rows if (r.get("details") or {}).get("single_source"))
    share = round(supported / claims, 3) if claims else 0.0
    if claims:
        line = (f"{supported} of {claims} cited claims ({share:.0%}) are supported by the "
                f"sources they cite; {removed} removed as unsupported, {rewritten} qualified, "
                f"{single} load-bearing claim{'s' if single != 1 else ''} marked as resting on "
                "a single source.")
    else:
        line = "The report contained no cited claims to check."
    if unverified_subtopics:
        line += " Unverified subtopics: " + "; ".join(unverified_subtopics) + "."
    return {"claims": claims, "supported": supported, "share_supported": share,
            "unsupported_removed": removed, "rewritten": rewritten, "single_source": single,
            "unverified_subtopics": list(unverified_subtopics), "line": line}


def summary(ctx_or_store: RunContext | Store, run_id: str) -> dict[str, Any]:
    """The verification summary of a run: the stored step result, or rebuilt from its rows.

    {claims, supported, share_supported, unsupported_removed, rewritten, single_source,
    unverified_subtopics: [titles], line}; `line` is plain words for the report header
    ("" when the run was not verified).
    """
    store = ctx_or_store.store if isinstance(ctx_or_store, RunContext) else ctx_or_store
    step = store.get_step(run_id, STEP_KEY)
    result = (step or {}).get("result") or {}
    if step and step.get("status") == "done" and "line" in result:
        return {k: result[k] for k in (*_COUNT_KEYS, "unverified_subtopics", "line")}
    rows = store.get_verifications(run_id)
    if not rows:
        empty = summarise([], [])
        return {**empty, "line": ""}
    return summarise(rows, [])

