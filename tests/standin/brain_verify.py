"""The stand-in's answers for claim verification (research/phases/verify.py).

Deterministic and built only from the prompt, so tests can predict every verdict:

- a claim whose words appear as a passage in one of its source excerpts is SUPPORTED with
  that passage quoted; any other claim with an excerpt is SUPPORTED with the excerpt's first
  factual sentence quoted (the stand-in writer paraphrases, it never copies);
- a claim with no excerpt, an excerpt marked OFF-TOPIC, or the writer's revision sentence
  ("This revision addresses the reviewer's feedback") is UNSUPPORTED;
- "The strongest evidence ..." is OVERSTATED in both passes;
- "Sources differ on how large the effect is" divides the passes: the verifier says
  SUPPORTED, the auditor UNSUPPORTED (a contested claim for the critic);
- "... different periods and samples" makes the verifier quote a passage that is in no
  source (the engine's quote guard must overrule it), while the auditor quotes a real one;
- the critic REJECTs a claim whose block reports an UNSUPPORTED check, DOWNGRADEs one with
  an OVERSTATED check, and lets the others SURVIVE;
- the writer's rewrite attributes the sentence: "According to the cited source, ...".
"""

from __future__ import annotations

import re
from typing import Any

from tests.standin import brain

REVISION_MARK = "addresses the reviewer's feedback"
OVERSTATED_MARK = "strongest evidence"
CONTESTED_MARK = "Sources differ on how large"
FAKE_QUOTE_MARK = "different periods and samples"
FAKE_QUOTE = "Every study in this field used exactly the same period and the same sample."

_CLAIM = re.compile(r'<claim id="([^"]+)"[^>]*>(.*?)</claim>', re.DOTALL)
_CITE = re.compile(r"\s*\[\d+(?:[,\s\d–-]*)\]")


def _claims(user: str) -> list[tuple[str, str]]:
    return [(cid, body.strip()) for cid, body in _CLAIM.findall(user)]


def _plain_claim(text: str) -> str:
    return " ".join(_CITE.sub("", text.splitlines()[0] if text else "").split()).rstrip(".!? ")


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w]+", " ", text.lower()).split())


def _judge(claim_id: str, text: str, blocks: list[tuple[str, str]], *, auditor: bool) -> dict[str, Any]:
    cited = set(re.findall(r"\[(\d+)\]", text))  # an excerpt is named by its citation number
    mine = [(bid, t) for bid, t in blocks if bid.startswith(claim_id + "/") or bid in cited]
    answer: dict[str, Any] = {"claim_id": claim_id, "verdict": "UNSUPPORTED", "quote": "",
                              "source": mine[0][0] if mine else "", "reason": ""}
    if not mine:
        return {**answer, "reason": "No source excerpt came with this claim."}
    if REVISION_MARK in text:
        return {**answer, "reason": "The excerpts say nothing about a review."}
    if any("OFF-TOPIC" in t for _, t in mine):
        return {**answer, "reason": "The excerpt is about something else."}
    plain = _plain_claim(text)
    for bid, block in mine:  # the claim copied from the source
        if len(plain.split()) >= 5 and _norm(plain) in _norm(block):
            return {**answer, "verdict": "SUPPORTED", "quote": plain, "source": bid,
                    "reason": "The excerpt states it."}
    bid, block = mine[0]
    quote = brain.claim_from(block)
    if OVERSTATED_MARK in text.lower():
        return {**answer, "verdict": "OVERSTATED", "quote": quote, "source": bid,
                "reason": "The excerpt reports figures but does not rank the evidence."}
    if CONTESTED_MARK in text and auditor:
        return {**answer, "reason": "No excerpt compares effect sizes across sources."}
    if FAKE_QUOTE_MARK in text and not auditor:
        return {**answer, "verdict": "SUPPORTED", "quote": FAKE_QUOTE, "source": bid,
                "reason": "The excerpt explains the difference."}
    return {**answer, "verdict": "SUPPORTED", "quote": quote, "source": bid,
            "reason": "The excerpt gives the figures behind the claim."}


def claim_verdicts(user: str, *, auditor: bool = False) -> dict[str, Any]:
    blocks = brain.source_blocks(user)
    return {"verdicts": [_judge(cid, text, blocks, auditor=auditor) for cid, text in _claims(user)]}


def critic_verdicts(user: str) -> dict[str, Any]:
    judgements = []
    for cid, body in _claims(user):
        if "UNSUPPORTED" in body:
            verdict, reason = "REJECT", "One check found no support in the excerpts."
        elif "OVERSTATED" in body:
            verdict, reason = "DOWNGRADE", "The excerpts carry only a weaker version."
        else:
            verdict, reason = "SURVIVES", "The excerpts carry the claim."
        judgements.append({"claim_id": cid, "verdict": verdict, "reason": reason})
    return {"judgements": judgements}


def claim_rewrites(user: str) -> dict[str, Any]:
    rewrites = []
    for cid, text in _claims(user):
        sentence = text.splitlines()[0].strip()
        if sentence:
            rewrites.append({"claim_id": cid, "text": "According to the cited source, "
                             + sentence[0].lower() + sentence[1:]})
    return {"rewrites": rewrites}


brain.register("ClaimVerdicts", claim_verdicts)
brain.register("AuditVerdicts", lambda user: claim_verdicts(user, auditor=True))
brain.register("CriticVerdicts", critic_verdicts)
brain.register("ClaimRewrites", claim_rewrites)
