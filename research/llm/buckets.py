"""A per-minute allowance that refills continuously: the pacer's measure of an account's
requests and tokens a minute (research.llm.pacing), as OpenAI documents its own limiter
(https://platform.openai.com/docs/guides/rate-limits: limits "replenish continuously")."""

from __future__ import annotations

MINUTE_S = 60.0


class Bucket:
    """A per-minute allowance that refills continuously up to its capacity."""

    def __init__(self, capacity: float, now: float) -> None:
        self.capacity = capacity
        self.level = capacity
        self.stamp = now

    @property
    def rate(self) -> float:
        return self.capacity / MINUTE_S

    def refill(self, now: float) -> None:
        if now > self.stamp:
            self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = max(self.stamp, now)

    def seconds_until(self, amount: float) -> float:
        """How long until `amount` fits (a request larger than the whole bucket waits for a
        full one: the fitting layer keeps such requests from being made at all)."""
        need = min(amount, self.capacity)
        return 0.0 if self.level >= need else (need - self.level) / self.rate


def sized(bucket: Bucket | None, limit: int | None, now: float) -> Bucket | None:
    """`bucket` for a per-minute `limit` (a new one, full, when first learned)."""
    if not limit or limit <= 0:
        return bucket
    if bucket is None:
        return Bucket(float(limit), now)
    bucket.refill(now)
    bucket.capacity = float(limit)
    bucket.level = min(bucket.level, bucket.capacity)
    return bucket
