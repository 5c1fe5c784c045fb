"""Verify, part 3: the critic challenges the claims a report's conclusions rest on and those
the two checks disagreed about (SURVIVES, DOWNGRADE or REJECT)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field, field_validator

from research.core.agents import Role
from research.core.context import RunContext
from research.core.errors import ProviderError, SchemaError
from research.core.prompts import clean_untrusted, new_nonce, system
from research.core.records import Source
from research.llm.messages import Message
from research.phases.verify.claims import Claim, Outcome, PassVerdict
from research.phases.verify.judge import (
    CRITIC_BATCH_MIN,
    CRITIC_VERDICTS,
    batch_size,
    by_source,
    claim_batches,
    claim_id,
    claim_items,
    known_verdict,
    merged_excerpts,
    placed_claim,
    quote_found,
)

CRITIC_ROLE = (
    "You are a critic: you challenge the claims a report's conclusions rest on and those its "
    "fact-checkers disagreed about."
)

CRITIC_PROMPT = """Challenge each claim below once. You see the claim, where it sits in the
report, what two independent fact-checkers said, and excerpts of the sources it cites (each
source once, its id the number claims cite it by).

- SURVIVES: the excerpts carry the claim as written
- DOWNGRADE: the excerpts carry only a more cautious version; the claim must be qualified
- REJECT: the excerpts do not carry it; the claim must leave the report
Judge only by the excerpts. Answer once for every claim id.

The report answers: <question>{question}</question>

CLAIMS:
{claims}"""


class CriticJudgement(BaseModel):
    claim_id: str
    verdict: str = Field(json_schema_extra={"enum": list(CRITIC_VERDICTS)})
    reason: str = ""

    @field_validator("claim_id", mode="before")
    @classmethod
    def _claim_id(cls, value: Any) -> str:
        return claim_id(value)

    @field_validator("verdict", mode="before")
    @classmethod
    def _verdict(cls, value: Any) -> str:
        return known_verdict(value, CRITIC_VERDICTS)

    @field_validator("reason", mode="before")
    @classmethod
    def _text(cls, value: Any) -> str:
        return "" if value is None else str(value)


class CriticVerdicts(BaseModel):
    judgements: list[CriticJudgement] = Field(default_factory=list)


QUOTE_LEAD_WORDS = 8  # how a quote found in the excerpts the critic reads is pointed at


def pass_line(name: str, v: PassVerdict, quoted: str = "", shown: str = "") -> str:
    """One check's verdict for the critic; a passage the other check quoted already
    (`quoted`) is not sent twice, and one that is in the excerpts the critic reads (`shown`)
    is pointed at by its first words (issue 31: the critic reads the passage there)."""
    if not v.verdict:
        return f"{name}: no verdict"
    line = f"{name}: {v.verdict}"
    words = v.quote.split()
    if v.quote and " ".join(words) == " ".join(quoted.split()):
        line += " — quoted the same passage"
    elif len(words) > QUOTE_LEAD_WORDS + 4 and quote_found(v.quote, [shown]):
        lead = clean_untrusted(" ".join(words[:QUOTE_LEAD_WORDS]))
        line += f' — quoted the excerpt\'s passage that begins "{lead} …"'
    elif v.quote:
        line += f' — quoted "{clean_untrusted(v.quote)[:400]}"'
    if v.note:
        line += f" ({v.note})"
    return line


def challenge(ctx: RunContext, outcomes: Sequence[Outcome],
               sources: Mapping[str, Source]) -> tuple[dict[str, CriticJudgement], list[str]]:
    if not outcomes:
        return {}, []
    critic = ctx.lead.delegate(Role.CRITIC)
    by_id = {o.claim.id: o for o in outcomes}

    def judge(batch: list[Claim]) -> dict[str, CriticJudgement]:
        ctx.control.checkpoint()
        nonce = new_nonce()

        shown = " ".join(merged_excerpts(batch, sources).values())

        def head(claim: Claim) -> str:
            o = by_id[claim.id]
            return placed_claim(
                claim, f"\n{pass_line('First check', o.first, shown=shown)}\n"
                f"{pass_line('Second check', o.second, o.first.quote, shown)}")

        items = [claim_items(batch, sources, nonce, sources_first=False, head=head)]
        messages = [
            system(CRITIC_ROLE, ctx.today),
            Message("user", CRITIC_PROMPT.format(question=clean_untrusted(ctx.question),
                                                 claims="\n\n".join(items))),
        ]
        answer = critic.llm.structured(messages, CriticVerdicts, deadline=ctx.step_deadline())
        wanted = {c.id for c in batch}
        return {j.claim_id: j for j in answer.judgements if j.claim_id in wanted and j.verdict}

    # A challenge's answer is a word and a reason: a few claims a call cost little time, and
    # each call repeats the instructions (issue 31).
    batches = claim_batches(by_source([o.claim for o in outcomes]),
                       max(CRITIC_BATCH_MIN, batch_size(len(outcomes), ctx.executor.model_slots.size)))
    found: dict[str, CriticJudgement] = {}
    errors: list[str] = []
    # The batches are independent: all at once, tasks of the run's executor.
    futures = [ctx.executor.tasks.submit(judge, batch) for batch in batches]
    for future in futures:
        try:
            found.update(future.result())
        except (ProviderError, SchemaError) as exc:
            errors.append(ctx.safe(str(exc)))
        except Exception as exc:  # noqa: BLE001 - costs the batch's challenge (ctx.lose decides)
            ctx.lose("some contested claims could not be challenged", exc, step="verify")
            errors.append("a problem in the program itself")
    return found, errors
