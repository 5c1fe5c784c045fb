"""Verify, part 4: the writer rewrites the claims the checks found overstated, so that they say
no more than their sources; a rewrite that adds a number or a citation is refused."""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel, Field

from research.core.agents import Role
from research.core.context import RunContext
from research.core.errors import ProviderError, SchemaError
from research.core.prompts import clean_untrusted, system
from research.llm.messages import Message
from research.phases.verify.claims import Outcome
from research.phases.verify.judge import claim_text
from research.report.checks import CITATION, cited_numbers

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


def rewrite(ctx: RunContext, outcomes: Sequence[Outcome]) -> tuple[dict[str, str], list[str]]:
    if not outcomes:
        return {}, []
    writer = ctx.lead.delegate(Role.WRITER)
    items = []
    for o in outcomes:
        quote = o.first.quote if o.first.verdict in ("SUPPORTED", "OVERSTATED") else o.second.quote
        why = o.critic_reason or o.first.reason or o.second.reason
        items.append(
            f'<claim id="{o.claim.id}">{claim_text(o.claim.text)}</claim>\n'
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
    except Exception as exc:  # noqa: BLE001 - costs the rewrites (ctx.lose decides)
        ctx.lose("some qualified claims could not be rewritten and are marked instead", exc,
                 step="verify")
        return {}, ["a problem in the program itself"]
    wanted = {o.claim.id: o.claim.text for o in outcomes}
    accepted: dict[str, str] = {}
    for r in answer.rewrites:
        if r.claim_id in wanted:
            text = accept_rewrite(wanted[r.claim_id], r.text)
            if text:
                accepted[r.claim_id] = text
    return accepted, []
