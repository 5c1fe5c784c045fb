"""Verification of a section starts as soon as that section is final (issue 11): after the last
review, the sections it did not flag are checked while the flagged ones are revised, and the
verify step reuses those outcomes instead of judging the same claims again. Full runs over real
HTTP against the stand-in; the order of events is read from the stand-in's request log."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from research import Credentials, build_config, resume, run_research
from storage import Store
from tests.standin import StandinServer
from tests.standin.server import _task_of

QUESTION = "How is heat pump adoption changing in Europe?"
CLAIM = re.compile(r'<claim id="[^"]+" section="([^"]*)">(.*?)</claim>', re.DOTALL)


def _run(env: dict[str, str], db: Path) -> tuple[Store, str]:
    credentials = Credentials.from_env(env)
    store = Store(db, secrets=credentials.secrets())
    config = build_config(env=env, fetch_timeout_s=3, subtopic_count=3, max_rounds=1,
                          review_cycles=1)
    return store, run_research(QUESTION, store=store, config=config, credentials=credentials)


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
    """(section, claim) of every claim the first pass was asked about."""
    return [m for c in calls if c["task"] == "ClaimVerdicts" for m in CLAIM.findall(c["user"])]


def _outcomes(store: Store, run_id: str) -> list[tuple[str, str, str]]:
    return [(r.claim, r.status, r.verdict) for r in store.get_verifications(run_id)]


def test_final_sections_are_verified_while_the_flagged_ones_are_revised(
    standin: StandinServer, standin_env: dict[str, str], tmp_db: Path
) -> None:
    standin.add_fault("openai", "hang", times=50, task="writer", seconds=0.5)  # revisions take a while
    store, run_id = _run(standin_env, tmp_db)
    assert store.get_run(run_id).status == "completed"  # type: ignore[union-attr]
    review = store.get_reviews(run_id)[0]
    assert not review.approved  # the stand-in's first review flags key findings and summary
    calls = _calls(standin)
    revising = [c for c in calls if "REVIEW FEEDBACK ON YOUR PART" in c["user"]]
    assert revising
    early = [c for c in calls if c["task"] == "ClaimVerdicts"
             and c["sent"] < max(r["answered"] for r in revising)]
    assert early, "no claim was checked while the flagged sections were being revised"
    sections = {section for c in early for section, _ in CLAIM.findall(c["user"])}
    assert sections and not sections & {"Key findings", "Executive summary"}  # only final ones

    result = store.get_step(run_id, "verify")["result"]
    assert result["checked_early"] > 0
    # Every claim of the report was judged once: the early outcomes were reused, not redone.
    asked = _verdict_claims(calls)
    checked = [r for r in store.get_verifications(run_id) if r.source_ids]
    assert len(asked) == len(set(asked)) == len(checked)


def test_early_outcomes_are_the_ones_the_verify_step_would_reach(
    standin: StandinServer, standin_env: dict[str, str], tmp_db: Path
) -> None:
    """The same run's verification done again, all of it at the end (a resume stores no early
    outcomes), reaches the same statuses and verdicts for every claim."""
    store, run_id = _run(standin_env, tmp_db)
    with_early = _outcomes(store, run_id)
    assert store.get_step(run_id, "verify")["result"]["checked_early"] > 0
    store.fail_step(run_id, "verify", "checked again for the test")
    store.set_run_status(run_id, "failed", error="checked again for the test")
    run = resume(run_id, store=store, credentials=Credentials.from_env(standin_env))
    assert run.status == "completed"
    assert store.get_step(run_id, "verify")["result"]["checked_early"] == 0
    assert with_early and _outcomes(store, run_id) == with_early
