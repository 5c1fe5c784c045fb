"""Our own figure: the share of a report's cited claims that an independent judge finds
supported by the passages they cite.

FACT (bench/quality_fact.py) counts (statement, URL) pairs and accepts a statement found "in
whole or in part". This figure asks what a reader asks: of the claims the report makes with a
citation, how many does what they cite actually back? Each distinct cited claim (from FACT's
extraction) is judged once, against an excerpt of every source it cites (the passages about the
claim: research.untrusted.excerpts), and counts as supported only when those passages state all
of it. The judge must be a model other than the run's verifier (the CLI refuses the same one),
so a run cannot grade its own homework.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from pydantic import BaseModel

from bench.quality_fact import SYSTEM, CitedStatement, Pages
from bench.quality_judge import Judge, block
from research.untrusted.excerpts import excerpt

BATCH = 8  # claims per judge call
PASSAGE_CHARS = 1_500  # per cited source


class JudgedClaim(BaseModel):
    idx: int
    supported: bool


class JudgedClaims(BaseModel):
    verdicts: list[JudgedClaim]


CHECK = """Each claim below comes from a research report, with the passages of the sources it \
cites.

{claims}

For each claim: is everything it states (each fact, figure, date and name) stated by its \
passages? Partly backed, only implied or not found counts as not supported; a claim whose \
sources could not be read is not supported. Answer with JSON \
{{"verdicts": [{{"idx": N, "supported": true | false}}, ...]}}, one per claim, by its number."""


@dataclass(frozen=True)
class ClaimsResult:
    claims: int
    supported: int
    verdicts: tuple[tuple[str, bool], ...]  # (claim, supported)

    @property
    def share(self) -> float | None:
        return self.supported / self.claims if self.claims else None

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "share": self.share}


def cited_claims(pairs: list[CitedStatement]) -> dict[str, list[str]]:
    """Each distinct claim and the URLs it cites, in the report's order."""
    claims: dict[str, list[str]] = {}
    for p in pairs:
        urls = claims.setdefault(" ".join(p.fact.split()), [])
        if p.url not in urls:
            urls.append(p.url)
    return claims


def _entry(number: int, claim: str, urls: list[str], pages: Pages) -> str:
    passages = []
    for url in urls:
        text = pages.text(url)
        passages.append(block(url, excerpt(text, claim, PASSAGE_CHARS) if text
                              else "(this source could not be read)"))
    return f"Claim {number}: {claim}\n" + "\n".join(passages)


def check_claims(judge: Judge, pairs: list[CitedStatement], pages: Pages) -> ClaimsResult:
    claims = list(cited_claims(pairs).items())
    verdicts: list[tuple[str, bool]] = []
    for start in range(0, len(claims), BATCH):
        batch = claims[start : start + BATCH]
        text = "\n\n".join(_entry(i, c, urls, pages) for i, (c, urls) in enumerate(batch, 1))
        answer = judge.ask(SYSTEM, CHECK.format(claims=text), JudgedClaims)
        said = {v.idx: v.supported for v in answer.verdicts}
        # A claim the judge left out is not counted as supported.
        verdicts += [(c, said.get(i, False)) for i, (c, _) in enumerate(batch, 1)]
    return ClaimsResult(len(verdicts), sum(ok for _, ok in verdicts), tuple(verdicts))


def claims_summary(results: list[dict[str, int]]) -> float | None:
    """Supported claims / claims over all tasks."""
    claims = sum(r.get("claims", 0) for r in results)
    return sum(r.get("supported", 0) for r in results) / claims if claims else None
