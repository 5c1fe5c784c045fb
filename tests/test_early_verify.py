"""Verification starts before the review cycles end (issue 11): every draft a review will read is
checked while the review reads it, and the verify step reuses those outcomes for the claims no
revision changed instead of judging the same claims again. Full runs through the in-process
fakes (engine logic, not transport); the order of events is read from the stand-in's request
log, where each model call records when it was sent and answered."""

from __future__ import annotations

import re
from typing import Any

from storage import Store
from tests.runs import Runner
from tests.standin import StandinServer
from tests.standin.server import _task_of

QUESTION = "How is heat pump adoption changing in Europe?"
# (claim id, claim): the checks see a claim without its section (issue 31), by its place's id.
CLAIM = re.compile(r'<claim id="([^"]+)"(?: section="[^"]*")?>(.*?)</claim>', re.DOTALL)


def _run(runs: Runner, review_cycles: int = 1) -> tuple[Store, str]:
    # No source counts as stale: the stand-in dates about one page in seven more than two
    # years back, and which dozen sources a small draft cites varies with timing, so now and
    # then most of them were stale and the check failed a review the model had approved
    # (seen once in a slowed suite). When claims are judged is this file's subject, not age.
    return runs(QUESTION, fetch_timeout_s=3, subtopic_count=3, max_rounds=1,
                review_cycles=review_cycles, source_max_age_days=3650)


def _calls(standin: StandinServer) -> list[dict[str, Any]]:
    """Every model call: when it was sent and answered, its task and its user prompt."""
    out = []
    for r in standin.requests_for("openai"):
        body = r["json"] or {}
        user = "\n".join(str(m.get("content")) for m in body.get("messages", []) if m.get("role") == "user")
        out.append({"sent": r["time"], "answered": r.get("answered", r["time"]),
                    "task": _task_of("openai", body) or "writer", "user": user})
    return out


def _verdict_claims(calls: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(claim id, claim) of every claim the first pass was asked about."""
    return [m for c in calls if c["task"] == "ClaimVerdicts" for m in CLAIM.findall(c["user"])]


def _outcomes(store: Store, run_id: str) -> list[tuple[str, str, str]]:
    return [(r.claim, r.status, r.verdict) for r in store.get_verifications(run_id)]


def test_the_draft_is_verified_while_it_is_reviewed_and_each_claim_is_judged_once(
    standin: StandinServer, runs: Runner
) -> None:
    standin.add_fault("openai", "hang", times=1, task="ReviewResult", seconds=1.0)  # reviewing takes a while
    store, run_id = _run(runs)
    assert store.get_run(run_id).status == "completed"  # type: ignore[union-attr]
    review = store.get_reviews(run_id)[0]
    assert not review.approved  # the stand-in's first review flags key findings and summary
    calls = _calls(standin)
    reviewing = [c for c in calls if c["task"] == "ReviewResult"]
    early = [c for c in calls if c["task"] == "ClaimVerdicts"
             and c["sent"] < reviewing[0]["answered"]]
    assert early, "no claim was checked while the draft was being reviewed"

    result = store.get_step(run_id, "verify").result
    assert result["checked_early"] > 0
    # No claim was judged twice: a claim the revision left as it was kept its early outcome;
    # only the revised sections' new claims were judged after.
    asked = _verdict_claims(calls)
    assert len(asked) == len(set(asked))
    checked = [r for r in store.get_verifications(run_id) if r.source_ids]
    assert {r.claim for r in checked} <= {claim for _, claim in asked}
    assert 0 < result["checked_early"] < len(checked)  # the revised claims were judged after


def test_early_outcomes_are_the_ones_the_verify_step_would_reach(runs: Runner) -> None:
    """The same run's verification done again, all of it at the end (a resume stores no early
    outcomes), reaches the same statuses and verdicts for every claim."""
    store, run_id = _run(runs)
    with_early = _outcomes(store, run_id)
    assert store.get_step(run_id, "verify").result["checked_early"] > 0
    store.fail_step(run_id, "verify", "checked again for the test")
    store.set_run_status(run_id, "failed", error="checked again for the test")
    run = runs.resume(run_id)
    assert run.status == "completed"
    assert store.get_step(run_id, "verify").result["checked_early"] == 0
    assert with_early and _outcomes(store, run_id) == with_early


def test_a_revision_is_checked_while_the_next_review_reads_it(
    standin: StandinServer, runs: Runner
) -> None:
    """Two review cycles: the stand-in's first review flags sections, its second approves the
    revision. The revision's claims are judged while the second review reads it, and the verify
    step judges none itself: every outcome is the early one, each claim judged once."""
    standin.add_fault("openai", "hang", times=1, task="ReviewResult", seconds=1.0)  # review 1
    standin.add_fault("openai", "hang", times=1, task="ReviewResult", seconds=1.0)  # review 2
    store, run_id = _run(runs, review_cycles=2)
    assert store.get_run(run_id).status == "completed"  # type: ignore[union-attr]
    first, second = store.get_reviews(run_id)
    assert not first.approved and second.approved
    calls = _calls(standin)
    reviews = [c for c in calls if c["task"] == "ReviewResult"]
    assert len(reviews) == 2
    checks = [c for c in calls if c["task"] == "ClaimVerdicts"]
    of_draft = [c for c in checks if c["sent"] < reviews[0]["answered"]]
    of_revision = [c for c in checks if reviews[0]["answered"] < c["sent"] < reviews[1]["answered"]]
    assert of_draft and of_revision  # each checked while the next review read it
    # Only the revision's new claims are judged again: fewer than the draft's.
    assert (sum(len(CLAIM.findall(c["user"])) for c in of_revision)
            < sum(len(CLAIM.findall(c["user"])) for c in of_draft))

    checked = [r for r in store.get_verifications(run_id) if r.source_ids]
    assert checked and store.get_step(run_id, "verify").result["checked_early"] == len(checked)
    asked = _verdict_claims(calls)
    assert len(asked) == len(set(asked))  # a claim the revision kept was not judged again
    assert {r.claim for r in checked} <= {claim for _, claim in asked}


def test_a_few_claims_go_out_in_small_batches_many_in_batches_of_four() -> None:
    from research.phases.verify.judge import BATCH_CLAIMS, batch_size

    assert batch_size(10, 32) == 1  # a revised section's claims: one a call, all at once
    assert batch_size(40, 32) == 2
    assert batch_size(116, 32) == BATCH_CLAIMS == 4  # a whole report's
    assert batch_size(1000, 32) == BATCH_CLAIMS
    assert batch_size(0, 32) == 1 and batch_size(5, 0) == BATCH_CLAIMS
