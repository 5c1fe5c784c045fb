"""The latency benchmark's lower bound for checks sent before the verify step (bench/latency.py,
EarlyChecks): they leave the review they ran beside and count in the verify phase, from the
phase they were first sent in."""

from __future__ import annotations

from bench.latency import Call, EarlyChecks, chain_bound


def _call(task: str, sent: float, cost: float) -> Call:
    return Call(sent, sent + cost, task, "", cost)


def test_checks_beside_a_review_count_in_verify_not_in_the_review() -> None:
    review = _call("ReviewResult", 100.0, 2.0)
    passes = [_call("ClaimVerdicts", 100.1, 5.0), _call("AuditVerdicts", 100.1, 5.0)]
    early = EarlyChecks()
    left = early.take([review, *passes], at=10.0)  # the review's phase starts at 10 s
    assert left == [review] and chain_bound(left) == (2.0, 1)
    # The verify step starts when the review ends (12 s); its critic waits on the passes.
    critic = _call("CriticVerdicts", 105.2, 2.0)
    bound, calls = early.verify_bound(early.calls + [critic], at=12.0)
    assert (bound, calls) == (10.0 + 5.0 + 2.0 - 12.0, 2)


def test_a_verify_step_whose_own_chain_is_longer_counts_its_own() -> None:
    early = EarlyChecks()
    early.take([_call("ClaimVerdicts", 100.0, 3.0)], at=10.0)
    own = [_call("ClaimVerdicts", 120.0, 5.0), _call("CriticVerdicts", 125.5, 2.0)]
    assert early.verify_bound(early.calls + own, at=30.0) == (7.0, 2)


def test_without_early_checks_the_verify_bound_is_its_chain() -> None:
    own = [_call("ClaimVerdicts", 0.0, 5.0), _call("AuditVerdicts", 0.0, 4.0),
           _call("CriticVerdicts", 5.5, 2.0)]
    assert EarlyChecks().verify_bound(own, at=50.0) == (7.0, 2)
