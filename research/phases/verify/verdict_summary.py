"""What verification found, in counts and one line of plain words: worked out from the verdict
rows when the step finishes, kept as the verify step's result, and read back by deliver, the
run's outcome, the dashboard and the benchmark."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace

from research.core.context import RunContext
from research.core.records import JsonObject, Verdict
from research.phases.verify.apply import UNCHECKED_STATUSES
from storage import Store

STEP_KEY = "verify"


@dataclass(frozen=True, slots=True)
class VerifySummary:
    """The counts by final status of a run's claims and the line the report header carries
    ("" when the run was not verified)."""

    claims: int = 0
    supported: int = 0
    share_supported: float = 0.0  # supported / claims, rounded to 3 places
    unsupported_removed: int = 0
    rewritten: int = 0  # qualified
    single_source: int = 0  # load-bearing claims marked as resting on a single source
    unchecked: int = 0  # claims no check answered for (marked as not verified)
    uncited: int = 0  # marked as citing no source
    incomplete: bool = False  # most checkable claims got no usable verdict
    unverified_subtopics: tuple[str, ...] = field(default=())  # titles research did not cover
    line: str = ""

    def as_json(self) -> dict[str, object]:
        """As the verify step's result stores it (its JSON column): every field, by name."""
        return {**asdict(self), "unverified_subtopics": list(self.unverified_subtopics)}

    @classmethod
    def from_json(cls, result: JsonObject) -> VerifySummary:
        """A stored verify step's result; one stored by an older version may lack the later
        counts (unchecked, uncited, incomplete), read as none."""
        def number(key: str) -> int:
            return int(result.get(key) or 0)

        return cls(claims=number("claims"), supported=number("supported"),
                   share_supported=float(result.get("share_supported") or 0.0),
                   unsupported_removed=number("unsupported_removed"),
                   rewritten=number("rewritten"), single_source=number("single_source"),
                   unchecked=number("unchecked"), uncited=number("uncited"),
                   incomplete=bool(result.get("incomplete")),
                   unverified_subtopics=tuple(str(t) for t in
                                              result.get("unverified_subtopics") or ()),
                   line=str(result.get("line") or ""))


def summarise(rows: Sequence[Verdict], unverified_subtopics: Sequence[str]) -> VerifySummary:
    """Counts by final status and one line of plain words for the report header. `incomplete`:
    most claims with a source got no usable verdict, so verification could not be completed."""
    claims = len(rows)
    status = [r.status or "" for r in rows]
    supported = status.count("supported")
    removed = status.count("removed")
    rewritten = status.count("qualified")
    unchecked = sum(status.count(s) for s in UNCHECKED_STATUSES)
    uncited = status.count("uncited")
    checkable = sum(1 for r in rows if r.source_ids)
    incomplete = bool(checkable) and unchecked * 2 > checkable
    single = sum(1 for r in rows if (r.details or {}).get("single_source"))
    share = round(supported / claims, 3) if claims else 0.0
    if claims:
        line = (f"{supported} of {claims} cited claims ({share:.0%}) are supported by the "
                f"sources they cite; {removed} removed as unsupported, {rewritten} qualified, "
                f"{single} load-bearing claim{'s' if single != 1 else ''} marked as resting on "
                "a single source.")
        if unchecked:
            line += f" {unchecked} could not be checked (marked as not verified)."
        if uncited:
            line += f" {uncited} cite no source (marked)."
        if incomplete:
            line = ("Verification could not be completed: the fact-checkers gave no usable "
                    f"answer for {unchecked} of {checkable} claims. " + line)
    else:
        line = "The report contained no factual claims to check."
    if unverified_subtopics:
        line += " Unverified subtopics: " + "; ".join(unverified_subtopics) + "."
    return VerifySummary(claims=claims, supported=supported, share_supported=share,
                         unsupported_removed=removed, rewritten=rewritten, single_source=single,
                         unchecked=unchecked, uncited=uncited, incomplete=incomplete,
                         unverified_subtopics=tuple(unverified_subtopics), line=line)


def summary(ctx_or_store: RunContext | Store, run_id: str) -> VerifySummary:
    """The verification summary of a run: the stored step result, or rebuilt from its rows
    (a run verified by an older version, or not verified: then `line` is "")."""
    store = ctx_or_store.store if isinstance(ctx_or_store, RunContext) else ctx_or_store
    step = store.get_step(run_id, STEP_KEY)
    if step and step.status == "done" and "line" in step.result:
        return VerifySummary.from_json(step.result)
    rows = store.get_verifications(run_id)
    if not rows:
        return replace(summarise([], []), line="")
    return summarise(rows, [])
