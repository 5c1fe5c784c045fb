"""An update's claims its earlier version verified keep their verdicts (issue 36: an update
costs a fraction of a new run): the same words (citation numbers aside), the same section
and the same sources carry over; anything else is judged again."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from research.core.config import build_config
from research.core.records import Verdict
from research.phases.verify.carried import carry_over
from research.phases.verify.claims import split_claims
from storage import Store
from tests.store_files import migrated_copy

EARLIER = """# Report

## Key findings

- Heat pump adoption in Europe rose 45% in 2024 [1].
- The average installed cost fell 12% over the same two years [2].
- Installers in most regions reported waiting lists of 9 weeks [1].
"""
UPDATED = """# Report

## Key findings

- Heat pump adoption in Europe rose 45% in 2024 [3].
- The average installed cost fell 12% over the same two years [1].
- Installers in most regions reported waiting lists of 9 weeks [2].
- A field trial found that 41% of households cut their bills [4].

## Executive summary

Heat pump adoption in Europe rose 45% in 2024 [3].
"""


def _ctx(store: Store, run_id: str, config: object) -> SimpleNamespace:
    return SimpleNamespace(store=store, run_id=run_id, config=config)


def test_only_the_same_claim_in_the_same_section_on_the_same_sources_carries_over(
        tmp_path: Path) -> None:
    store = Store(migrated_copy(tmp_path / "r.db"))
    config = build_config(env={}, preset="quick")
    earlier = store.create_run("q?", config.model_dump(mode="json"))
    known = ["s_a", "s_b", "s_c", "s_d"]
    before = split_claims(EARLIER, {1: "s_a", 2: "s_b"}, known)
    store.save_verifications(earlier, [
        Verdict(claim_id=c.id, claim=c.text, source_ids=tuple(c.source_ids), verdict=verdict,
                section=c.section, status=status,
                details={"verifier": {"verdict": "SUPPORTED", "quote": "rose 45%"},
                         "auditor": {"verdict": "SUPPORTED"}})
        for c, (verdict, status) in zip(before, [("SUPPORTED", "supported"),
                                                 ("OVERSTATED", "qualified"),
                                                 ("SUPPORTED", "supported")], strict=True)])
    update_config = config.model_copy(update={"update_since": "2026-01-01"})
    update = store.create_run("q?", update_config.model_dump(mode="json"), parent_run_id=earlier)
    # Renumbered: 3 is s_a now, 1 is s_b, 2 is s_c (the waiting lists cite another source).
    claims = split_claims(UPDATED, {1: "s_b", 2: "s_c", 3: "s_a", 4: "s_d"}, known)
    carried, todo = carry_over(_ctx(store, update, update_config), claims)  # type: ignore[arg-type]
    texts = {c.id: c.text for c in claims}
    assert [texts[i] for i in carried] == ["Heat pump adoption in Europe rose 45% in 2024 [3]."]
    outcome = next(iter(carried.values()))
    assert outcome.status == "supported" and outcome.first.quote == "rose 45%"
    assert outcome.single_source  # a key finding on one source, as judged now
    # Qualified before, another source now, new, or in another section: judged again.
    assert len(todo) == len(claims) - 1
    # A run that is not an update carries nothing over.
    plain = store.create_run("q?", config.model_dump(mode="json"), parent_run_id=earlier)
    assert carry_over(_ctx(store, plain, config), claims)[0] == {}  # type: ignore[arg-type]
    store.close()
