"""What changed between two versions of a report (research/living/changes.py): claims added,
changed (same words, other figures) and no longer supported (the update's verification
removed them), and the one number a watcher compares with its threshold."""

from __future__ import annotations

from research.core.records import Finding, Verdict
from research.living.changes import SourceRef, compare

OLD = [
    Finding("t1", "In 2024 adoption of heat pumps rose 45% to 3.2 million users.", ("s_a",)),
    Finding("t1", "The average installed cost fell 12% between 2021 and 2023.", ("s_b",)),
    Finding("t2", "Installers reported waiting lists of 9 weeks in most regions.", ("s_c",)),
    Finding("t2", "Long-term data is scarce.", (), kind="gap"),
]
REFS = {"s_a": SourceRef("s_a", "Old figures", "https://example.org/a"),
        "s_new": SourceRef("s_new", "Revised figures", "https://example.org/new")}


def test_a_new_figure_for_an_old_claim_is_a_change_and_a_new_claim_is_added() -> None:
    found = [
        Finding("t1", "In 2024 adoption of heat pumps rose 52% to 3.2 million users.", ("s_new",)),
        Finding("t2", "A field trial found that 41% of households cut their bills.", ("s_d",)),
        Finding("t1", "The average installed cost fell 12% between 2021 and 2023.", ("s_b2",)),
    ]
    changes = compare(run_id="u", previous_run_id="p", since="2026-01-01", earlier=OLD,
                      found=found, refs=REFS)
    assert [(c.old, c.claim) for c in changes.changed] == [(OLD[0].claim, found[0].claim)]
    assert changes.changed[0].sources == (REFS["s_new"],)
    assert changes.changed[0].old_sources == (REFS["s_a"],)
    assert [c.claim for c in changes.added] == [found[1].claim]  # found again: not news
    assert changes.no_longer_supported == ()
    assert changes.count == 2 and changes.score == round(2 / 3, 4)  # the gap is no claim
    assert changes.as_json()["changed"][0]["old_sources"][0]["url"] == "https://example.org/a"


def test_a_claim_the_update_removed_as_unsupported_is_no_longer_supported() -> None:
    removed = Verdict(claim_id="c4", claim="Installers reported waiting lists of 9 weeks in "
                      "most regions [3].", source_ids=("s_c",), verdict="UNSUPPORTED",
                      status="removed", note="The new survey does not bear it out.")
    kept = Verdict(claim_id="c5", claim="The average installed cost fell 12% between 2021 "
                   "and 2023 [2].", source_ids=("s_b",), verdict="SUPPORTED", status="supported")
    changes = compare(run_id="u", previous_run_id="p", since="2026-01-01", earlier=OLD,
                      found=[], verdicts=[removed, kept])
    assert [(c.claim, c.note) for c in changes.no_longer_supported] == [
        (OLD[2].claim, "The new survey does not bear it out.")]
    assert changes.added == () and changes.changed == () and changes.score == round(1 / 3, 4)


def test_nothing_new_scores_zero() -> None:
    changes = compare(run_id="u", previous_run_id="p", since="2026-01-01", earlier=OLD,
                      found=[OLD[1]])
    assert changes.nothing and changes.score == 0
