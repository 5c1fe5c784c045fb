"""The run's budget: what each role's calls used and cost, and the layer that keeps a call
within the run's cost and token caps.

`UsageMeter` adds up tokens and estimated cost per (role, provider, model) as calls are
answered, and holds the estimate of each call in flight, so parallel workers cannot all pass
the caps at once and overshoot together. The model seam's `Budget` layer asks it first: a call
whose estimate would take the run past a cap is refused (BudgetStop, from the meter's guard).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from research.llm.fitting import PromptRoom
from research.llm.messages import Completion, Request, Send, Usage
from research.llm.pricing import PriceTable

EXPECTED_OUTPUT_FIRST = 800    # output tokens assumed for a role's first call
EXPECTED_OUTPUT_MIN = 100


@dataclass
class Tally:
    """One (role, provider, model)'s use so far in this process, added to call by call."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class UsageMeter:
    """Tokens and estimated cost per (role, provider, model); thread-safe.

    `on_record` is called after each call with the increment, so the store can persist
    usage as it happens.
    """

    def __init__(
        self,
        prices: PriceTable | None = None,
        on_record: Callable[[str, str, str, int, int, float], None] | None = None,
    ) -> None:
        self.prices = prices or PriceTable()
        self._on_record = on_record
        self._lock = threading.Lock()
        self.totals: dict[tuple[str, str, str], Tally] = {}  # by (role, provider, model)
        # Tokens and cost of the calls in flight, so parallel workers cannot all pass the
        # budget check at once and overshoot together.
        self._reserved_tokens = 0
        self._reserved_cost = 0.0
        # Called before each model call with (role, tokens, cost) the run would have used
        # once that call is done (estimate); it raises BudgetStop to refuse the call.
        self.guard: Callable[[str, int, float], None] | None = None

    def expected_output(self, role: str) -> int:
        """Output tokens to expect from one call of `role`: its average so far, else a guess."""
        with self._lock:
            rows = [r for (r_role, _, _), r in self.totals.items() if r_role == role]
            calls = sum(r.calls for r in rows)
            out = sum(r.output_tokens for r in rows)
        return max(EXPECTED_OUTPUT_MIN, int(out / calls)) if calls else EXPECTED_OUTPUT_FIRST

    @contextmanager
    def reserve(self, role: str, model: str, input_tokens: int, output_tokens: int) -> Iterator[None]:
        """Hold the estimate of one call while it runs; the guard may refuse it first."""
        tokens = input_tokens + output_tokens
        cost = self.prices.cost(model, input_tokens, output_tokens)
        with self._lock:
            if self.guard is not None:
                used_tokens = sum(r.tokens for r in self.totals.values())
                used_cost = sum(r.cost_usd for r in self.totals.values())
                self.guard(role, used_tokens + self._reserved_tokens + tokens,
                           used_cost + self._reserved_cost + cost)
            self._reserved_tokens += tokens
            self._reserved_cost += cost
        try:
            yield
        finally:
            with self._lock:
                self._reserved_tokens -= tokens
                self._reserved_cost -= cost

    def record(self, role: str, provider: str, model: str, usage: Usage) -> None:
        cost = self.prices.cost(model, usage.input_tokens, usage.output_tokens)
        with self._lock:
            row = self.totals.setdefault((role, provider, model), Tally())
            row.calls += 1
            row.input_tokens += usage.input_tokens
            row.output_tokens += usage.output_tokens
            row.cost_usd += cost
        if self._on_record is not None:
            self._on_record(role, provider, model, usage.input_tokens, usage.output_tokens, cost)

    def total_cost(self) -> float:
        with self._lock:
            return sum(r.cost_usd for r in self.totals.values())

    def total_tokens(self) -> int:
        with self._lock:
            return sum(r.tokens for r in self.totals.values())


@dataclass(frozen=True)
class Budget:
    """The call refused when its estimate would take the run past a cost or token cap;
    otherwise that estimate is held while it runs, and what it used is counted once answered."""

    meter: UsageMeter
    role: str
    model: str
    room: PromptRoom

    def __call__(self, request: Request, send: Send) -> Completion:
        self.room.learn_window()  # the estimate below uses the room as it now is
        with self.meter.reserve(self.role, self.model, self.room.tokens(request.messages),
                                self.meter.expected_output(self.role)):
            completion = send(request)
            self.meter.record(self.role, completion.provider, completion.model, completion.usage)
            return completion
