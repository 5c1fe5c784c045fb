"""A worker's findings: what its kept sources establish, and what they leave open.

A real model writes at 50-150 tokens a second, and a worker that asked for the findings of
all its sources (up to SOURCES_PER_SUBTOPIC, 20 by default) in one answer waited for one
long answer at the end of every research unit (issue 11). So the kept sources are split into
groups of FINDINGS_GROUP, in the order of their relevance, and every group's findings are
asked for at the same time, each from the text of its own sources only: together they send
the same page text as one call would, and each answer is a fraction of the length. Beside
them one short call reads a passage of every kept source and names the gaps (what the
sources do not answer) and the follow-up questions worth researching: those need the view of
the whole subtopic, which no single group has, but not the pages again (issue 31: the passage
of each source nearest the subtopic, a line per source in one block).

Prompts put what every call of the unit shares first (the rules, the question, the
subtopic) and the sources last, so that a provider's prompt caching can reuse the start.
A call that still fails after its own retries fails the unit, as one findings call did;
the unit is then retried as a whole (research.phases.gather.research).
"""

from __future__ import annotations

from concurrent.futures import Future, wait

from pydantic import BaseModel, Field

from research.core.agents import Agent
from research.core.context import RunContext
from research.core.errors import ContextTooLong
from research.core.prompts import clean_untrusted, new_nonce, system, untrusted_block
from research.core.records import Finding, FindingKind, Source, Subtopic
from research.llm.messages import Message
from research.phases.gather.searching import WORKER_ROLE
from research.untrusted.excerpts import excerpt, without_title

# Page text for the whole unit, shared out among its sources: of a longer page, its opening and
# then its passages nearest the subtopic (issue 31: the first 2,000 characters of a page are
# often its menus and preamble; the passages about the subtopic serve the findings better).
FINDINGS_CONTEXT_CHARS = 32_000
MIN_SHARE_CHARS = 800
OPENING_SHARE = 3  # a third of a source's share is its opening
FINDINGS_GROUP = 2  # sources per findings call: an answer of a few findings, not twenty
OPEN_QUESTIONS_CHARS = 100  # of each kept source the gaps call reads: its passage nearest the subtopic

# How many items an answer may hold (answer_limits.py adds a small margin).
FINDINGS_PER_SOURCE = 5
OPEN_QUESTIONS_CAPS = {"gaps": 10, "follow_up_questions": 10}

FINDINGS_PROMPT = """Report what the sources below establish about the subtopic: one factual
claim a finding, from these sources only, with the ids of those supporting it and a confidence
of 0-1; numbers, dates and names exact; opinions and forecasts as "according to ...".

The research question: "{question}"
<subtopic>{title}</subtopic>
Its research questions:
{questions}

{blocks}"""

OPEN_QUESTIONS_PROMPT = """Below, one line per source kept for the subtopic: its title and its
passage nearest the subtopic. Name the gaps (research questions or important aspects they do
not answer) and a few follow-up questions worth researching next, each answerable by web
searches and mattering to the research question.

The research question: "{question}"
<subtopic>{title}</subtopic>
Its research questions:
{questions}

{blocks}"""


class WorkerFinding(BaseModel):
    claim: str
    source_ids: list[str]
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)


class SubtopicFindings(BaseModel):
    findings: list[WorkerFinding]


class OpenQuestions(BaseModel):
    gaps: list[str] = Field(default_factory=list)
    follow_up_questions: list[str] = Field(default_factory=list)


def groups(kept: list[Source]) -> list[list[Source]]:
    """The kept sources in groups of FINDINGS_GROUP, most relevant first (the order kept)."""
    return [kept[i:i + FINDINGS_GROUP] for i in range(0, len(kept), FINDINGS_GROUP)]


def collect(ctx: RunContext, worker: Agent, sub: Subtopic, kept: list[Source],
            deadline: float) -> list[Finding]:
    """The unit's findings (group by group, in the order kept), then its gaps and follow-up
    questions. Every call goes out at once as a task of the run's executor; the unit's
    thread waits for all of them, so none is left running when the unit ends."""
    share = max(MIN_SHARE_CHARS, FINDINGS_CONTEXT_CHARS // len(kept))
    ctx.checkpoint()
    pool = ctx.executor.tasks
    asked: list[Future[list[Finding]]] = [
        pool.submit(_group_findings, ctx, worker, sub, group, share, deadline)
        for group in groups(kept)]
    asked.append(pool.submit(_open_questions, ctx, worker, sub, kept, deadline))
    wait(asked)
    found: list[Finding] = []
    for future in asked:
        found += future.result()  # the first failure, in order, fails the unit
    return found


def _head(ctx: RunContext, sub: Subtopic) -> dict[str, str]:
    return {"question": clean_untrusted(ctx.brief), "title": sub.title,
            "questions": "\n".join(f"- {q}" for q in sub.questions)}


def _about(ctx: RunContext, sub: Subtopic) -> str:
    return " ".join([ctx.brief, sub.title, *sub.questions])


def _blocks(sources: list[Source], chars: int, about: str, *, opening: int = 0) -> str:
    """Each source's passages nearest what the call is `about` up to `chars` (its first
    `opening` characters whatever they say), without a first line that repeats its title. No
    address: the model cites by id, and the title says what the page is."""
    nonce = new_nonce()
    return "\n\n".join(
        untrusted_block(s.id, {"title": s.title, "published": s.published},
                        excerpt(without_title(s.text, s.title), about, chars, head=opening),
                        nonce)
        for s in sources)


def _group_findings(ctx: RunContext, worker: Agent, sub: Subtopic, group: list[Source],
                    share: int, deadline: float) -> list[Finding]:
    messages = [system(WORKER_ROLE, ctx.today), Message("user", FINDINGS_PROMPT.format(
        **_head(ctx, sub), blocks=_blocks(group, share, _about(ctx, sub),
                                          opening=share // OPENING_SHARE)))]
    try:
        answer = worker.llm.structured(
            messages, SubtopicFindings, deadline=deadline,
            caps={"findings": FINDINGS_PER_SOURCE * len(group), "source_ids": len(group)})
    except ContextTooLong:
        if len(group) == 1:
            raise
        # A model whose window the group does not fit even trimmed: one source a call.
        return [f for one in group
                for f in _group_findings(ctx, worker, sub, [one], share, deadline)]
    valid = {s.id for s in group}
    found: list[Finding] = []
    for f in answer.findings:
        ids = tuple(i for i in dict.fromkeys(f.source_ids) if i in valid)
        claim = clean_untrusted(f.claim).strip()
        if ids and claim:
            found.append(Finding(sub.id, claim[:1000], ids, f.confidence, "finding"))
    return found


def _passage_lines(sources: list[Source], chars: int, about: str) -> str:
    """One untrusted block with a line per source: its title and its passage nearest what the
    call is `about`. For a call whose answer names no source (the gaps): a block per source
    would cost more in tags than its passage (issue 31), and no id is needed."""
    lines = []
    for s in sources:
        title = " ".join((s.title or "").split())
        passage = " ".join(excerpt(without_title(s.text, s.title), about, chars).split())
        lines.append(f"- {title}: {passage}" if title else f"- {passage}")
    return untrusted_block("kept", {}, "\n".join(lines), new_nonce())


def _open_questions(ctx: RunContext, worker: Agent, sub: Subtopic, kept: list[Source],
                    deadline: float) -> list[Finding]:
    messages = [system(WORKER_ROLE, ctx.today), Message("user", OPEN_QUESTIONS_PROMPT.format(
        **_head(ctx, sub), blocks=_passage_lines(kept, OPEN_QUESTIONS_CHARS, _about(ctx, sub))))]
    try:
        answer = worker.llm.structured(messages, OpenQuestions, deadline=deadline,
                                       caps=OPEN_QUESTIONS_CAPS)
    except ContextTooLong:
        if len(kept) == 1:
            raise
        # Its passages are too short to trim: a model with a small window reads the more
        # relevant half of the sources (they are kept in order of relevance).
        return _open_questions(ctx, worker, sub, kept[:len(kept) // 2], deadline)
    notes: list[tuple[str, FindingKind]] = [(g, "gap") for g in answer.gaps]
    notes += [(q, "follow_up") for q in answer.follow_up_questions]
    return [Finding(sub.id, clean_untrusted(text).strip()[:500], (), 0.0, kind)
            for text, kind in notes if text.strip()]
