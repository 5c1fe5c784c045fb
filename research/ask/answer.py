"""Ask, part 5: one question about a finished run's report, from question to kept answer.

    own_run      the run must be the person's and finished (another person's reads as no run)
    index        the run's gathered sources cut into passages, in the run's full-text index
    search       the passages that best match the question (no match: no model call at all)
    answer       one model call, from those passages only, citing the report's own numbers
    check        every statement checked against its cited passages (check.py)
    keep         the question and its checked answer kept with the run (both databases)

An answer costs a few model calls (the answer, one verifier call per few claims, a critic call
when a claim is contested) and they count toward the run's cost (session.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from typing import Protocol

from research import voice
from research.ask.check import Checked, check
from research.ask.numbers import answer_numbers, passages_of
from research.ask.prompt import AskReply, ask_messages
from research.ask.session import LLMFactory, answer_context
from research.core.agents import Role
from research.core.config import Credentials, ResearchConfig
from research.core.errors import BudgetStop, ConfigError, ProviderError, ResearchError, SchemaError, redact
from research.core.records import Run, Source
from research.export.run_document import build_document_for_run
from research.llm import build_llm
from research.llm.pricing import PriceTable
from research.pipeline import validate_question
from storage import Store
from storage.conversations import Turn, add_turn, index_run, is_indexed, search_run, turns

NOT_THERE = "The sources of this report don't say."
NEARBY = "What they do say nearby:"
NOTHING_NEAR = "Nothing in them comes close to this question."
MAX_ASK_CHARS = 1000
PASSAGES = 8
_CITED = re.compile(r"\[(\d+)\]")


class AskError(ResearchError):
    """A question that could not be answered, in plain words (no run, over its cap, the model
    failed)."""


@dataclass(frozen=True, slots=True)
class AnswerSource:
    number: int
    source_id: str
    title: str
    url: str


@dataclass(frozen=True, slots=True)
class Answer:
    """A checked answer as the person sees it (and as it is kept)."""

    turn_id: int
    run_id: str
    question: str
    text: str                 # Markdown, citing [n] with the report's own numbers
    status: str               # answered | not_in_sources
    check_line: str
    sources: tuple[AnswerSource, ...]
    cost_usd: float = 0.0

    @property
    def answered(self) -> bool:
        return self.status == "answered"


def own_run(store: Store, run_id: str, person: str | None) -> Run:
    """The person's finished run (None: no sign-in, every run); AskError otherwise."""
    run = store.get_run(run_id, person=person)
    if run is None:
        raise AskError(f"There is no run with id {run_id!r}.")
    if run.status != "completed" or store.get_report(run_id) is None:
        raise AskError("This run has no finished report to ask about yet.")
    return run


def ask(store: Store, run_id: str, question: str, *, credentials: Credentials,
        person: str | None = None, prices: PriceTable | None = None,
        llm_factory: LLMFactory = build_llm, today: date | None = None) -> Answer:
    """Answer `question` from the run's own sources, check it, keep it; AskError in plain
    words when it cannot be answered (ConfigError for an invalid question)."""
    question = validate_question(question)
    if len(question) > MAX_ASK_CHARS:
        raise ConfigError(f"The question is too long ({len(question)} characters); the limit "
                          f"is {MAX_ASK_CHARS}.")
    run = own_run(store, run_id, person)
    sources = {s.id: s for s in store.get_sources(run_id)}
    numbers = answer_numbers(build_document_for_run(store, run_id).sources, sources.values())
    numbering = {n: sid for sid, n in numbers.items()}
    _index(store, run_id, sources)
    found = search_run(store, run_id, question, limit=PASSAGES)
    found = [p for p in found if p.source_id in numbers]
    checked: Checked | None = None
    cost = 0.0
    if not found:
        text, status = f"{NOT_THERE} {NOTHING_NEAR}", "not_in_sources"
    else:
        secrets = credentials.secrets()
        try:
            with answer_context(store, run, credentials, prices=prices, llm_factory=llm_factory,
                                today=today) as ctx:
                answerer = ctx.lead.delegate(Role.WRITER)
                reply = answerer.llm.structured(
                    ask_messages(question, run.question, found, sources, numbers, ctx.today),
                    AskReply, deadline=ctx.step_deadline())
                checked = check(ctx, reply.answer, numbering, sources) if reply.in_sources else None
                if checked is not None and _says_something(checked):
                    text, status = checked.text, "answered"
                else:
                    nearby = check(ctx, reply.nearby, numbering, sources)
                    checked = _together(checked, nearby)
                    text = (f"{NOT_THERE}\n\n{NEARBY} {nearby.text}" if _says_something(nearby)
                            else f"{NOT_THERE} {NOTHING_NEAR}")
                    status = "not_in_sources"
                cost = ctx.meter.total_cost() if ctx.meter else 0.0
        except BudgetStop as exc:
            raise AskError("The question was not sent: " + redact(str(exc), secrets)
                           .replace("Research stopped because ", "").rstrip(".")
                           + ". Raise the run's cost cap to ask more.") from None
        except (ProviderError, SchemaError) as exc:
            raise AskError("The model could not answer this question: "
                           + redact(str(exc), secrets)) from None
        finally:
            _add_up(store, run_id)
    line = checked.line if checked is not None else "No claims to check."
    cited = _cited_sources(text, numbering, sources)
    turn_id = add_turn(store, run_id, person=person, question=question, answer=text,
                       status=status, cost_usd=cost, details={
                           "check": checked.as_json() if checked else {"line": line},
                           "sources": [{"number": s.number, "source_id": s.source_id,
                                        "title": s.title, "url": s.url} for s in cited]})
    return Answer(turn_id, run_id, question, text, status, line, tuple(cited), cost)


# What one answer usually sends and gets back (tokens): the answer's call with its passages,
# and the verifier's call with the claims' excerpts (the critic's, when one is contested, is
# smaller). Shown before asking when the run has a cost cap; each call is also checked
# against the cap from its own estimate before it is sent (session.py).
ANSWER_CALLS = ((Role.WRITER, 3_500, 350), (Role.VERIFIER, 2_500, 500))


@dataclass(frozen=True, slots=True)
class CostCap:
    """A run's cost cap and what an answer is expected to take of it."""

    cap_usd: float
    spent_usd: float
    answer_usd: float

    @property
    def left_usd(self) -> float:
        return max(0.0, self.cap_usd - self.spent_usd)

    @property
    def line(self) -> str:
        return (f"An answer costs about {voice.money(self.answer_usd)}; this run has "
                f"{voice.money(self.left_usd)} left of its {voice.money(self.cap_usd)} cost cap.")


def cost_cap(store: Store, run: Run, prices: PriceTable | None) -> CostCap | None:
    """The run's cost cap with an answer's estimate (None: the run has no cap)."""
    config = ResearchConfig(**run.config)
    if not config.max_cost_usd:
        return None
    table = prices or PriceTable()
    each = sum(table.cost(config.role(role.value).model, i, o) for role, i, o in ANSWER_CALLS)
    return CostCap(config.max_cost_usd, store.usage_totals(run.id).cost_usd, each)


def conversation(store: Store, run_id: str, *, person: str | None = None) -> list[Answer]:
    """The run's questions and answers, oldest first (the person's run only)."""
    if store.get_run(run_id, person=person) is None:
        raise AskError(f"There is no run with id {run_id!r}.")
    return [as_answer(t) for t in turns(store, run_id)]


def as_answer(turn: Turn) -> Answer:
    found = turn.details.get("sources") or []
    cited = tuple(AnswerSource(int(s.get("number") or 0), str(s.get("source_id") or ""),
                               str(s.get("title") or ""), str(s.get("url") or ""))
                  for s in found if isinstance(s, dict))
    line = str((turn.details.get("check") or {}).get("line") or "")
    return Answer(turn.id, turn.run_id, turn.question, turn.answer, turn.status, line, cited,
                  turn.cost_usd)


class Starter(Protocol):
    """What starts a run (`research.runs.Runs` does)."""

    def start(self, question: str, config: ResearchConfig, credentials: Credentials, *,
              prices: PriceTable | None = None, parent_run_id: str | None = None,
              person: str | None = None) -> str: ...


def research_it(starter: Starter, store: Store, run_id: str, turn_id: int, *,
                credentials: Credentials, person: str | None = None,
                prices: PriceTable | None = None) -> str:
    """Start a follow-up run built on this one (its sources first: the build-on machinery,
    research/phases/start/inherit.py) with the asked question as its brief; its id."""
    run = own_run(store, run_id, person)
    turn = next((t for t in turns(store, run_id) if t.id == turn_id), None)
    if turn is None:
        raise AskError("That question is not part of this run's conversation.")
    return starter.start(turn.question, ResearchConfig(**run.config), credentials,
                         prices=prices, parent_run_id=run_id, person=person)


def _index(store: Store, run_id: str, sources: Mapping[str, Source]) -> None:
    if is_indexed(store, run_id):
        return
    index_run(store, run_id, [(sid, i, text) for sid, src in sorted(sources.items())
                              for i, text in enumerate(passages_of(src))])


def _says_something(checked: Checked) -> bool:
    """Something citing the sources is left after the check (marked when no check answered,
    as in reports); an answer citing none of them is no answer from the sources."""
    return bool(checked.text.strip()) and checked.grounded > 0


def _together(first: Checked | None, second: Checked) -> Checked:
    if first is None:
        return second
    return Checked(second.text, first.claims + second.claims, first.checked + second.checked,
                   first.supported + second.supported, first.qualified + second.qualified,
                   first.removed + second.removed, first.unchecked + second.unchecked,
                   first.uncited + second.uncited, first.errors + second.errors)


def _cited_sources(text: str, numbering: Mapping[int, str],
                   sources: Mapping[str, Source]) -> list[AnswerSource]:
    out = []
    for n in sorted({int(m) for m in _CITED.findall(text)}):
        sid = numbering.get(n, "")
        if sid in sources:
            src = sources[sid]
            out.append(AnswerSource(n, sid, src.title or src.url, src.url))
    return out


def _add_up(store: Store, run_id: str) -> None:
    """The run's totals with the answer's calls (the Library shows the run's cost from them)."""
    usage = store.usage_totals(run_id)
    store.update_totals(run_id, tokens=usage.tokens, cost_usd=round(usage.cost_usd, 6),
                        calls=usage.calls)
