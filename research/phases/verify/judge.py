"""Verify, part 2: judging the claims. Two independent passes (verifier, auditor), a quote guard
and combining their verdicts (the critic's challenge is in critic.py, the writer's rewrites of
qualified claims in rewrite.py).

A model call that fails, or an answer that says nothing (or something malformed) about a claim,
leaves that claim without a verdict: "unchecked", never silently unsupported.
"""

from __future__ import annotations

import functools
import html
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field, field_validator

from research.core.agents import Agent, Role
from research.core.context import RunContext
from research.core.errors import ProviderError, SchemaError
from research.core.prompts import clean_untrusted, new_nonce, system, untrusted_block
from research.core.records import Source
from research.llm.messages import Message
from research.phases.verify.claims import Claim, PassVerdict

# A batch's answer is written at the model's speed (a verdict with its quoted passage is about
# 100 tokens), so small batches all at once finish sooner than big ones: 4 claims answer in
# about a third of the time 8 take at 80 tokens/s (issue 11). The instructions repeated per
# batch cost a few hundred prompt tokens each.
BATCH_CLAIMS = 4
BATCH_CHARS = 18_000
MIN_QUOTE_WORDS = 4
CRITIC_BATCH_MIN = 3


# --- prompts and answers ------------------------------------------------------------------------

VERIFIER_ROLE = (
    "You are a fact-checker: you check a report's claims only against the sources they cite."
)

VERIFY_PROMPT = """Check each claim of a report only by the excerpts of the sources it cites
(each once, its id the number claims cite: [3] -> id 3), not by what you know; a citation is
no proof.
- SUPPORTED: an excerpt states it (figures, dates, direction and strength all match)
- OVERSTATED: an excerpt supports only a weaker, narrower or less certain version
- CONTRADICTED: an excerpt says otherwise
- UNSUPPORTED: the excerpts do not say it
For every claim id: the verdict and the deciding passage quoted word for word, with its id.

CLAIMS:
{claims}"""

AUDITOR_ROLE = (
    "You are an independent auditor of research reports: a claim is unproven until a source "
    "excerpt proves it."
)

AUDIT_PROMPT = """Audit these claims one by one: read the excerpts of the sources a claim cites
(each once, before the first claim citing it; its id is the number claims cite it by), then
the claim: would a careful reader of only these excerpts accept it as written?
- UNSUPPORTED when no excerpt says it (the default when in doubt)
- CONTRADICTED when an excerpt says the opposite or gives a different figure
- OVERSTATED when the claim is stronger, broader or more certain than the excerpt
- SUPPORTED only when an excerpt says it; then copy that passage exactly as "quote"
Answer every claim id, with the excerpt id you relied on; no outside knowledge.

ITEMS:
{claims}"""


VERDICTS = ("SUPPORTED", "UNSUPPORTED", "OVERSTATED", "CONTRADICTED")
CRITIC_VERDICTS = ("SURVIVES", "DOWNGRADE", "REJECT")
# How models spell the verdicts when they do not use ours; anything else is no verdict at all.
_SYNONYMS = {
    "SUPPORTS": "SUPPORTED", "TRUE": "SUPPORTED", "PARTIALLY SUPPORTED": "OVERSTATED",
    "PARTLY SUPPORTED": "OVERSTATED", "EXAGGERATED": "OVERSTATED", "OVERSTATES": "OVERSTATED",
    "NOT SUPPORTED": "UNSUPPORTED", "INSUFFICIENT EVIDENCE": "UNSUPPORTED", "NOT FOUND": "UNSUPPORTED",
    "REFUTED": "CONTRADICTED", "CONTRADICTS": "CONTRADICTED", "FALSE": "CONTRADICTED",
    "SURVIVE": "SURVIVES", "KEEP": "SURVIVES", "DOWNGRADED": "DOWNGRADE", "REJECTED": "REJECT",
}


def known_verdict(value: Any, allowed: Sequence[str]) -> str:
    """A verdict in our words, or "" when the model's word is none we know (the claim then
    counts as unchecked by this pass, never as unsupported)."""
    key = " ".join(str(value or "").replace("_", " ").replace("-", " ").upper().split())
    key = _SYNONYMS.get(key, key)
    return key if key in allowed else ""


def claim_id(value: Any) -> str:
    """Claim ids as we wrote them ("c3"); models sometimes answer 3 or "C3"."""
    text = str(value if value is not None else "").strip()
    return f"c{text}" if text.isdigit() else text.lower() if re.fullmatch(r"[Cc]\d+", text) else text


class ClaimVerdict(BaseModel):
    claim_id: str
    verdict: str = Field(json_schema_extra={"enum": list(VERDICTS)})
    quote: str = Field(default="", description="the deciding passage, copied word for word")
    source: str = Field(default="", description="id of the excerpt quoted")
    reason: str = ""

    @field_validator("claim_id", mode="before")
    @classmethod
    def _claim_id(cls, value: Any) -> str:
        return claim_id(value)

    @field_validator("verdict", mode="before")
    @classmethod
    def _verdict(cls, value: Any) -> str:
        return known_verdict(value, VERDICTS)

    @field_validator("quote", "source", "reason", mode="before")
    @classmethod
    def _text(cls, value: Any) -> str:
        return "" if value is None else str(value)


class ClaimVerdicts(BaseModel):
    """The verifier's answer."""
    verdicts: list[ClaimVerdict] = Field(default_factory=list)


class AuditVerdicts(ClaimVerdicts):
    """The auditor's answer (same shape, its own name: the passes stay distinguishable)."""


_WORD = re.compile(r"[a-z0-9][a-z0-9'-]*")
_SENTENCES = re.compile(r"(?<=[.!?])\s+")
_ELLIPSIS = re.compile(r"\[\s*(?:\.\.\.|…)\s*\]|\.\.\.|…")

def normalised(text: str) -> str:
    text = clean_untrusted(html.unescape(text)).lower()
    return " ".join(re.sub(r"[^\w]+", " ", text).split())


def quote_found(quote: str, texts: Iterable[str]) -> bool:
    """Whether the quoted passage occurs in one of the texts, ignoring case, whitespace and
    punctuation; an ellipsis may join pieces, each of which must occur."""
    pieces = [normalised(p) for p in _ELLIPSIS.split(quote)]
    pieces = [p for p in pieces if p]
    if not pieces or max(len(p.split()) for p in pieces) < MIN_QUOTE_WORDS:
        return False
    haystacks = (_searched(t) for t in texts if t)  # (the next one only when needed)
    return any(all(p in h for p in pieces) for h in haystacks)


@functools.lru_cache(maxsize=64)
def _searched(text: str) -> str:
    """A cited source's text as quotes are looked for in it: normalised once, not once per
    claim citing it and per pass (both passes of every claim look in the same few pages)."""
    return normalised(text)


# --- the passes -------------------------------------------------------------------------------


def claim_text(text: str) -> str:
    """A sentence from the writer, made safe to sit inside our <claim> tags."""
    return re.sub(r"<\s*/?\s*claim\b[^>]*>?", "[removed tag]", clean_untrusted(text),
                  flags=re.IGNORECASE)


def attribute(text: str) -> str:
    return claim_text(text).replace('"', "'").replace("\n", " ")


def claim_head(claim: Claim) -> str:
    """A claim as the two checks see it: its words alone (where it sits in the report does not
    change what its sources say; issue 31)."""
    return f'<claim id="{claim.id}">{claim_text(claim.text)}</claim>'


def placed_claim(claim: Claim, extra: str = "") -> str:
    """A claim with its section, as the critic sees it (the claims conclusions rest on)."""
    return (f'<claim id="{claim.id}" section="{attribute(claim.section)}">{claim_text(claim.text)}'
            f"{extra}</claim>")


def merged_excerpts(batch: Sequence[Claim], sources: Mapping[str, Source]) -> dict[str, str]:
    """Each cited source's excerpt for the whole batch: the passages every claim of the batch
    needs from it, each once, in page order."""
    pieces: dict[str, list[str]] = {}
    for claim in batch:
        for sid, text in claim.excerpts.items():
            known = pieces.setdefault(sid, [])
            for piece in (" ".join(p.split()) for p in _SENTENCES.split(text)):
                if piece and piece not in known:
                    known.append(piece)
    out = {}
    for sid, found in pieces.items():
        # A passage cut short at one claim's length limit, where another claim brought it whole.
        found = [p for p in found if not any(q != p and q.startswith(p) for q in found)]
        page = " ".join((sources[sid].text or "").split())
        found.sort(key=lambda p: page.find(p) if p in page else len(page))  # stable
        out[sid] = " ".join(found)
    return out


def claim_items(batch: Sequence[Claim], sources: Mapping[str, Source], nonce: str, *,
           sources_first: bool, head: Callable[[Claim], str] = claim_head) -> str:
    """The batch's claims, each with the excerpts of the sources it cites that no claim before
    it brought. A source several claims cite is sent once (issue 31: claims sit in batches by
    the sources they cite), with the passages each of them needs; an excerpt's id is the
    source's citation number, as the claims cite it."""
    excerpts = merged_excerpts(batch, sources)
    numbers = {sid: n for c in batch for n, sid in zip(c.numbers, c.source_ids, strict=False)}
    shown: set[str] = set()
    items = []
    for claim in batch:
        new = [sid for sid in claim.excerpts if sid not in shown]
        shown.update(new)
        blocks = [untrusted_block(str(numbers.get(sid, "?")),
                                  {"title": sources[sid].title, "published": sources[sid].published},
                                  excerpts[sid], nonce) for sid in new]
        parts = [*blocks, head(claim)] if sources_first else [head(claim), *blocks]
        items.append("\n".join(parts))
    return "\n\n".join(items)


def by_source(claims: Sequence[Claim]) -> list[Claim]:
    """The claims with those citing the same source next to each other (so that they share a
    batch, and the source's excerpt is sent once), otherwise in order."""
    first: dict[str, int] = {}
    for i, claim in enumerate(claims):
        first.setdefault(claim.source_ids[0] if claim.source_ids else "", i)
    return sorted(claims, key=lambda c: first[c.source_ids[0] if c.source_ids else ""])


def batch_size(claims: int, calls: int) -> int:
    """Claims per batch: as few as let `calls` batches carry them all at once (the run's
    model requests in flight; a smaller batch answers sooner), at most BATCH_CLAIMS. A
    check of a few claims (a revised section's, judged while the run reviews) is on the run's
    critical path: one claim a call answers in about half the time four take."""
    return max(1, min(BATCH_CLAIMS, math.ceil(claims / max(1, calls))))


def claim_batches(claims: Sequence[Claim], most: int = BATCH_CLAIMS) -> list[list[Claim]]:
    batches: list[list[Claim]] = []
    size = 0
    for claim in claims:
        chars = len(claim.text) + sum(len(e) + 120 for e in claim.excerpts.values())
        if batches and len(batches[-1]) < most and size + chars <= BATCH_CHARS:
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
                 sources: Mapping[str, Source]) -> dict[str, PassVerdict]:
    ctx.control.checkpoint()
    nonce = new_nonce()
    ordered = list(reversed(batch)) if spec.reverse else batch
    items = claim_items(ordered, sources, nonce, sources_first=spec.sources_first)
    messages = [
        system(spec.persona, ctx.today),
        Message("user", spec.prompt.format(claims=items)),  # the claims, not the question, are checked
    ]
    answer = agent.llm.structured(messages, spec.answer, deadline=ctx.step_deadline())
    wanted = {c.id for c in batch}
    return {
        v.claim_id: PassVerdict(v.verdict, v.quote.strip(), v.source.strip(), v.reason.strip())
        for v in answer.verdicts if v.claim_id in wanted
    }


def submit_pass(ctx: RunContext, spec: _Pass, claims: Sequence[Claim],
                 sources: Mapping[str, Source], pool: Executor) -> list[Future[Any]]:
    if not claims:
        return []
    agent = ctx.lead.delegate(spec.role)
    # Both passes go out at once: each gets half the run's requests in flight.
    most = batch_size(len(claims), ctx.executor.model_slots.size // 2)
    return [pool.submit(_judge_batch, ctx, agent, spec, batch, sources)
            for batch in claim_batches(by_source(claims), most)]


def collect(ctx: RunContext, futures: Sequence[Future[Any]]) -> tuple[dict[str, PassVerdict], list[str]]:
    """One pass's verdicts; a batch whose call failed leaves its claims without a verdict."""
    verdicts: dict[str, PassVerdict] = {}
    errors: list[str] = []
    for future in futures:
        try:
            verdicts.update(future.result())
        except (ProviderError, SchemaError) as exc:
            errors.append(ctx.safe(str(exc)))
        except Exception as exc:  # noqa: BLE001 - costs the batch's verdicts (ctx.lose decides)
            ctx.lose("some claim checks could not be made; those claims rest on the other "
                     "check, or are marked as not verified", exc, step="verify")
            errors.append("a problem in the program itself")
    return verdicts, errors


def guard(verdict: PassVerdict, claim: Claim, sources: Mapping[str, Source]) -> PassVerdict:
    """A SUPPORTED verdict must quote a passage that is really in a cited source."""
    if verdict.verdict != "SUPPORTED":
        return verdict
    texts = [f"{sources[sid].text}\n{sources[sid].snippet}"
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
