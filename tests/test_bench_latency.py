"""The latency benchmark's lower bound for checks sent before the verify step (bench/latency_calls.py,
EarlyChecks): they leave the review they ran beside and count in the verify phase, each check a
chain of its own from the phase its passes went out in."""

from __future__ import annotations

from bench.latency_calls import Call, EarlyChecks, chain_bound


def _call(task: str, sent: float, cost: float, *claims: str) -> Call:
    text = "\n".join(f'<claim id="c{i}" section="S">{c}</claim>' for i, c in enumerate(claims))
    return Call(sent, sent + cost, task, text, cost)


def test_checks_beside_a_review_count_in_verify_not_in_the_review() -> None:
    review = _call("ReviewResult", 100.0, 2.0)
    passes = [_call("ClaimVerdicts", 100.1, 5.0, "a", "b"), _call("AuditVerdicts", 100.1, 5.0, "a", "b")]
    early = EarlyChecks()
    left = early.take([review, *passes], at=10.0)  # the review's phase starts at 10 s
    assert left == [review] and chain_bound(left) == (2.0, 1)
    # The verify step starts when the review ends (12 s); the critic waits on the passes.
    critic = _call("CriticVerdicts", 105.2, 2.0, "a")
    assert early.verify_bound(early.calls + [critic], at=12.0) == (10.0 + 5.0 + 2.0 - 12.0, 2)


def test_two_checks_started_at_different_times_are_two_chains() -> None:
    """Draft 1's check starts with review 1 (at 10 s); the revision's, of its new claim, with
    review 2 (at 17 s). The first's critic overlaps the second's passes: the second chain still
    counts from its own start."""
    early = EarlyChecks()
    early.take([_call("ClaimVerdicts", 100.0, 5.0, "a", "b")], at=10.0)
    early.take([_call("CriticVerdicts", 105.1, 2.0, "a")], at=12.0)  # sent while revising
    early.take([_call("ClaimVerdicts", 107.2, 2.0, "c"), _call("CriticVerdicts", 107.3, 1.0, "b")],
               at=17.0)
    assert len(early.jobs) == 2
    # Verify starts at 18.5 s: its own rewrite of "c" waits on the second check's passes.
    rewrite = _call("ClaimRewrites", 109.5, 1.5, "c")
    bound, calls = early.verify_bound(early.calls + [rewrite], at=18.5)
    assert (round(bound, 6), calls) == (17.0 + 2.0 + 1.5 - 18.5, 2)


def test_a_verify_step_whose_own_chain_is_longer_counts_its_own() -> None:
    early = EarlyChecks()
    early.take([_call("ClaimVerdicts", 100.0, 3.0, "a")], at=10.0)
    own = [_call("ClaimVerdicts", 120.0, 5.0, "z"), _call("CriticVerdicts", 125.5, 2.0, "z")]
    assert early.verify_bound(early.calls + own, at=30.0) == (7.0, 2)


def test_without_early_checks_the_verify_bound_is_its_chain() -> None:
    own = [_call("ClaimVerdicts", 0.0, 5.0, "a"), _call("AuditVerdicts", 0.0, 4.0, "a"),
           _call("CriticVerdicts", 5.5, 2.0, "a")]
    assert EarlyChecks().verify_bound(own, at=50.0) == (7.0, 2)
