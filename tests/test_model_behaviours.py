"""Full research runs while the stand-in behaves like common real models (tests/standin/brain_behaviours.py): whatever the model's habits, the report
cites in [n], lists its sources, had its claims verified, and its parts and the run status agree.
A representative few (and both cut-off answers) go through the real openai SDK over HTTP; the
rest use the in-process fakes, which answer with the same brain and behaviours.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from research.export import to_markdown
from research.export.run_document import build_document_for_run
from research.phases import verify
from storage import Store
from tests.runs import Runner
from tests.standin import StandinServer
from tests.standin.brain_behaviours import BEHAVIOURS

# A refused or cut-off report: checked for what a user must see.
CUT_OFF = ("truncated", "refusal")
FOREIGN_STYLES = re.compile(r"\[\^\w+\]|【|\(Sources? \d|\]\(https?://[^)]*\)|^\[\^\w+\]:", re.MULTILINE)


# Behaviours also run over real HTTP, through the real openai SDK.
OVER_HTTP = ("house", "think", "fenced_json", "cite_markdown", *CUT_OFF)


def run_under(standin: StandinServer, runner: Runner, behaviour: str) -> tuple[Store, str]:
    """A quick run with one review; the model's habits are what is tested, so research is the
    smallest: one search a subtopic, no academic or other-side searches."""
    standin.set_behaviour(behaviour)
    return runner(preset="quick", review_cycles=1, searches_per_subtopic=1,
                  include_academic_sources=False, search_other_side=False)


def _runner(behaviour: str, runs: Runner, http_runs: Runner) -> Runner:
    return http_runs if behaviour in OVER_HTTP else runs


def report_facts(store: Store, run_id: str) -> dict[str, Any]:
    """What the report, its header, its Sources, the Review and Verification tabs say."""
    doc = build_document_for_run(store, run_id)
    summary = verify.summary(store, run_id)
    reviews = store.get_reviews(run_id)
    cited = sorted({int(n) for n in re.findall(r"\[(\d+)\]", doc.body)})
    return {"doc": doc, "summary": summary, "reviews": reviews, "cited": cited,
            "rows": store.get_verifications(run_id), "markdown": to_markdown(doc)}


def assert_report_is_ours_and_consistent(store: Store, run_id: str, *,
                                         min_cited: float = 0.8) -> dict[str, Any]:
    facts = report_facts(store, run_id)
    doc, summary = facts["doc"], facts["summary"]
    # Cited in [n], every number resolving to a listed source, and no other style left.
    assert facts["cited"], doc.body[:2000]
    assert facts["cited"] == list(range(1, len(doc.sources) + 1))
    assert not FOREIGN_STYLES.search(doc.body), FOREIGN_STYLES.search(doc.body)
    assert "No sources were cited." not in facts["markdown"]
    # Verification ran on the claims, and the header says what the Verification tab counts.
    assert summary.claims == len(facts["rows"]) > 0
    assert summary.supported > 0
    assert doc.verification == " ".join(summary.line.split())
    assert "no factual claims" not in doc.verification and "no cited claims" not in doc.verification
    # The Review tab saw the normalised draft: its citations counted.
    assert facts["reviews"] and facts["reviews"][0].checks["cited_share"] >= min_cited
    # The run status agrees with the report.
    run = store.get_run(run_id) or {}
    assert run.status == "completed", run.error
    if summary.incomplete:
        assert "Verification could not be completed" in doc.body
    return facts


BEHAVED = [b for b in BEHAVIOURS if b not in CUT_OFF]


@pytest.mark.parametrize("behaviour", BEHAVED)
def test_a_full_run_under_each_model_behaviour_gives_a_cited_verified_consistent_report(
    standin: StandinServer, runs: Runner, http_runs: Runner, behaviour: str
) -> None:
    store, run_id = run_under(standin, _runner(behaviour, runs, http_runs), behaviour)
    facts = assert_report_is_ours_and_consistent(
        store, run_id, min_cited=0.5 if behaviour == "sparse_citations" else 0.8)
    if behaviour.startswith("cite_"):
        # The writer's text was converted, not thrown away: most claims kept their source.
        assert facts["summary"].uncited == 0
        assert facts["summary"].unsupported_removed < facts["summary"].claims / 2
    if behaviour == "sparse_citations":
        # Uncited statements were flagged by the review, then marked or removed by verification.
        first = facts["reviews"][0].checks
        assert first["uncited_examples"], first
        uncited = [r for r in facts["rows"] if not r.source_ids]
        assert uncited and all(r.status in ("uncited", "removed") for r in uncited)
        assert "42%" not in facts["doc"].body  # a figure with no source does not survive
    if behaviour == "loose_quotes":
        # Typographic quotes, an ellipsis and odd spaces do not overrule a real quote.
        overruled = [r for r in facts["rows"] if "overruled" in (r.note or "")]
        assert facts["summary"].supported >= len(facts["rows"]) / 2, overruled
        quotes = [r.details["verifier"]["quote"] for r in facts["rows"]]
        assert any("\u201c" in q and "…" in q for q in quotes)  # the quotes really were loose
    if behaviour == "sloppy_verdicts":
        # Verdicts in other words count; answers about ids that do not exist leave the claim
        # unchecked and marked, never removed as unsupported.
        rows = facts["rows"]
        unanswered = [r for r in rows if r.source_ids and not r.verifier_verdict
                      and not r.auditor_verdict]
        assert unanswered and all(r.status == "unchecked" for r in unanswered)
        assert facts["summary"].unchecked == len(unanswered)
        assert facts["doc"].body.count("(not verified)") == len(unanswered)
        assert any(r.verifier_verdict == "SUPPORTED" for r in rows)


@pytest.mark.parametrize("behaviour", ["truncated", "refusal"])
def test_a_refused_or_cut_off_report_is_named_and_nothing_gathered_is_lost(
    standin: StandinServer, runs: Runner, http_runs: Runner, behaviour: str
) -> None:
    store, run_id = run_under(standin, _runner(behaviour, runs, http_runs), behaviour)
    run = store.get_run(run_id) or {}
    assert store.get_sources(run_id, with_text=False), "gathered sources must be kept"
    if run.status == "completed":
        facts = assert_report_is_ours_and_consistent(store, run_id)
        notes = " ".join(facts["doc"].notes) + " " + facts["doc"].verification
        assert re.search(r"refus|cut off|truncat|length limit", notes, re.IGNORECASE)
    else:
        assert run.status == "failed"
        message = str(run.error or "")
        assert re.search(r"refus|cut off|truncat|length limit", message, re.IGNORECASE), message
        assert "Traceback" not in message and "broader question" not in message


def test_the_stand_in_really_behaves_differently(standin: StandinServer, standin_env: dict[str, str]) -> None:
    """Each citation style reaches the engine as written (so the runs above test something)."""
    from tests.standin.brain_behaviours import restyle

    user = ("SOURCES (cite by number):\n[1] Heat pump sales statistics — https://a.example/x\n"
            "[2] Cold climate field study — https://b.example/y\n")
    report = "# T\n\nSales grew [1][2].\n"
    styles = {b: restyle(report, user, b) for b in BEHAVIOURS if b.startswith("cite_")}
    assert len(set(styles.values())) == len(styles)
    assert all("[1]" not in text or b == "cite_own_list" for b, text in styles.items())
    with pytest.raises(ValueError):
        standin.set_behaviour("no-such-behaviour")


def test_the_behaviours_reach_the_client_over_http(standin: StandinServer, standin_env: dict[str, str]) -> None:
    """Through the real openai SDK: a cut-off writer answer says finish_reason "length", a refusal
    comes as message.refusal, fences and <think> blocks arrive as written."""
    import openai

    client = openai.OpenAI(base_url=standin_env["OPENAI_BASE_URL"], api_key=standin_env["OPENAI_API_KEY"])
    writer = [{"role": "user", "content": "Write the report.\n<question>Q?</question>\nSOURCES (cite by "
                                          "number):\n[1] Heat pump sales statistics — https://a.example/x\n"}]
    schema = {"type": "json_schema", "json_schema": {"name": "Ping", "schema": {
        "title": "Ping", "type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}}

    def ask(behaviour: str, **extra: Any) -> Any:
        standin.set_behaviour(behaviour)
        return client.chat.completions.create(model="gpt-standin", messages=writer, **extra).choices[0]

    assert ask("house").finish_reason == "stop"
    cut = ask("truncated")
    assert cut.finish_reason == "length" and len(cut.message.content) < len(ask("house").message.content)
    refused = ask("refusal")
    assert refused.message.refusal and not refused.message.content
    assert ask("think").message.content.startswith("<think>")
    assert ask("fenced_json", response_format=schema).message.content.startswith("```json")
    assert "confidence_note" in ask("extra_keys", response_format=schema).message.content
