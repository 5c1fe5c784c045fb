"""Steering between rounds ("Ask me between rounds", `--steer`): after each round's triage the
lead's proposed branches for the next round are numbered and the run waits (status
"waiting", like clarifying questions) until the person follows some, adds their own, or says
"enough, write the report". The proposals and the answer are the `steer:N` step's result, so
the wait survives a closed tab and a restart.
"""

from __future__ import annotations

from research.core.context import RunContext
from research.core.errors import ConfigError, NeedsInput
from research.core.records import JsonObject, Subtopic
from storage import Store

MAX_ADDED = 5


def wait(ctx: RunContext, round_no: int) -> bool:
    """Ask once after round `round_no`; raise NeedsInput while unanswered. True: the person
    said enough (research stops; the report is written)."""
    key = f"steer:{round_no}"
    done = ctx.stored_result(key)
    if done is None:
        proposals = [{"n": i, "id": s.id, "title": s.title,
                      "why": s.description, "parent": s.parent or ""}
                     for i, s in enumerate(next_round(ctx.store, ctx.run_id, round_no), start=1)]
        done = {"round": round_no, "proposals": proposals, "answer": None}
        ctx.store.start_step(ctx.run_id, key, kind="steer",
                             label=f"Asking you what to explore after round {round_no}")
        ctx.store.finish_step(ctx.run_id, key, result=done)
    answer = done.get("answer")
    if answer is None:
        raise NeedsInput(f"Round {round_no} is done: waiting for you to choose what to "
                         "explore next.")
    if answer.get("enough"):
        ctx.store.update_totals(ctx.run_id, rounds=round_no, stop_reason=(
            f"You asked to write the report after round {round_no}."))
        return True
    return False


def next_round(store: Store, run_id: str, round_no: int) -> list[Subtopic]:
    """The plan's subtopics of round `round_no + 1`."""
    return [s for s in store.get_plan(run_id) or [] if s.round == round_no + 1]


def pending(store: Store, run_id: str) -> JsonObject | None:
    """The unanswered proposals of a waiting run, if that is what it waits for."""
    for step in reversed(store.get_steps(run_id)):
        if step.kind == "steer":
            return step.result if step.result.get("answer") is None else None
    return None


def answer(store: Store, run_id: str, *, follow: list[int], add: list[str],
           enough: bool = False) -> None:
    """Record the person's choice and make the next round's plan follow it: only the chosen
    proposals, plus their own branches. The run continues when resumed."""
    asked = pending(store, run_id)
    if asked is None:
        raise ConfigError("This run is not waiting for a choice of what to explore next.")
    numbers = {p["n"]: p for p in asked["proposals"]}
    wrong = [n for n in follow if n not in numbers]
    if wrong:
        raise ConfigError(f"There is no proposal {', '.join(map(str, wrong))}; choose from "
                          f"1 to {len(numbers)}." if numbers else "There were no proposals to "
                          "follow; add your own branch or say enough.")
    added = [" ".join(a.split())[:300] for a in add if a.strip()][:MAX_ADDED]
    round_no = int(asked["round"])
    plan = store.get_plan(run_id) or []
    keep = {numbers[n]["id"] for n in follow}
    kept = [s for s in plan if s.round != round_no + 1 or (s.id in keep and not enough)]
    if not enough:
        kept += [Subtopic(id=f"r{round_no + 1}u{i}", title=text[:150],
                          description="A branch the person asked for.", questions=(text,),
                          round=round_no + 1)
                 for i, text in enumerate(added, start=1)]
    store.save_plan(run_id, kept, kind="edited")
    store.finish_step(run_id, f"steer:{round_no}", result={
        **asked, "answer": {"follow": sorted(set(follow)), "add": added, "enough": enough}})
