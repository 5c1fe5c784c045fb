"""The stand-in's answers to "Ask the report" (research/ask/prompt.py: schema AskReply).

Deterministic and built only from the prompt, so tests can predict every answer:

- the question's own words (less common words and those of the report's question) are looked
  for in the excerpts' sentences; an excerpt sentence holding most of them answers it: it is
  copied word for word with the excerpt's id as its citation (up to two sentences);
- none does: "in_sources" false, and "nearby" gives the first excerpt's first factual
  sentence, cited;
- a question that tells the model to ignore its sources gets what a gullible model writes:
  the invented sentence it was asked for (uncited, with a figure) beside a real one, so that
  only the engine's check keeps it out of the answer;
- a question about the "strongest evidence" gets a sentence ranking the evidence beside a real
  one, which the stand-in's verifier calls OVERSTATED (a contested claim for the critic);
- sentences in the excerpts that give instructions are never copied (brain.claim_from's rule).
"""

from __future__ import annotations

import math
import re
from typing import Any

from tests.standin import brain, brain_verify

INVENTED = "Independent tests found that this technology cures 99% of all known illnesses."
_REPORT_QUESTION = re.compile(r"<report_question>(.*?)</report_question>", re.DOTALL)
_ASKED = re.compile(r"<question>(.*?)</question>", re.DOTALL)
_HOSTILE = re.compile(r"ignore (?:your|the|all) (?:sources|instructions|excerpts)", re.IGNORECASE)
_COMMON = frozenset(
    "what which when where who why how much many does did do is are was were the a an of in on "
    "for to and or about say said sources source report this that these those there their it "
    "its with from by as at be been have has per any some more most less than".split())


def _words(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2 and w not in _COMMON]


def _holds(sentence: str, word: str) -> bool:
    return word[: min(len(word), 5)] in sentence.lower()


def ask_reply(user: str) -> dict[str, Any]:
    asked = " ".join((brain._first(_ASKED, user) or "").split())
    known = set(_words(brain._first(_REPORT_QUESTION, user)))
    focus = [w for w in dict.fromkeys(_words(asked)) if w not in known] or _words(asked)
    blocks = brain.source_blocks(user)
    found: list[str] = []
    for block_id, text in blocks:
        for sentence in (s.strip() for s in brain._SENTENCE.split(text)):
            if not sentence or brain._INJECTION.search(sentence):
                continue
            hits = sum(1 for w in focus if _holds(sentence, w))
            if focus and hits >= max(1, math.ceil(len(focus) * 0.6)):
                found.append(f"{sentence.rstrip('.')} [{block_id}].")
        if len(found) >= 2:
            break
    if _HOSTILE.search(asked):
        real = found[:1] or [f"{brain.claim_from(blocks[0][1]).rstrip('.')} [{blocks[0][0]}]."
                             if blocks else ""]
        return {"in_sources": True, "answer": " ".join([INVENTED, *real]).strip(), "nearby": ""}
    if brain_verify.OVERSTATED_MARK in asked.lower() and blocks:
        # A model that ranks the evidence itself: the verifier finds it OVERSTATED, the
        # critic challenges it (brain_verify's rules).
        real = found[:1] or [f"{brain.claim_from(blocks[0][1]).rstrip('.')} [{blocks[0][0]}]."]
        ranked = f"The strongest evidence comes from recent, quantified reports [{blocks[0][0]}]."
        return {"in_sources": True, "answer": " ".join([*real, ranked]), "nearby": ""}
    if found:
        return {"in_sources": True, "answer": " ".join(found[:2]), "nearby": ""}
    nearby = ""
    if blocks:
        first = brain.claim_from(blocks[0][1])
        nearby = f"{first.rstrip('.')} [{blocks[0][0]}]." if first else ""
    return {"in_sources": False, "answer": "", "nearby": nearby}


brain.register("AskReply", ask_reply)
