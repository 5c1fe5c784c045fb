"""Claim verification (SPEC step 7): full runs against the stand-in (over real HTTP where
provider faults are needed, otherwise through the in-process fakes), whose verification
answers are scripted in tests/standin/brain_verify.py, plus the deterministic parts (claim
splitting, the quote guard, combining verdicts, rewrites, marking) on their own."""

from __future__ import annotations

import io
import json
import re
from typing import Any

import pytest
from pypdf import PdfReader
from streamlit.testing.v1 import AppTest

from research.core.records import Source, Verdict
from research.export import to_markdown, to_pdf
from research.export.run_document import build_document_for_run
from research.phases import verify
from research.phases.verify import Claim, Outcome, PassVerdict
from research.untrusted.urls import canonical_url
from storage import Store
from tests.dashboard_fixtures import APP, dash_env_fixture  # noqa: F401 - fixture
from tests.runs import Runner
from tests.standin import StandinServer
from tests.standin.brain import INVENTED_SENTENCE, REVISION_SENTENCE
from tests.standin.brain_verify import CONTESTED_MARK, FAKE_QUOTE, FAKE_QUOTE_MARK, OVERSTATED_MARK


def _run(runner: Runner, **overrides: Any) -> tuple[Store, str]:
    store, run_id, _ = runner.completed(preset="quick", **overrides)
    return store, run_id


def _pdf_text(data: bytes) -> str:
    return " ".join(" ".join(page.extract_text().split()) for page in PdfReader(io.BytesIO(data)).pages)


def _row(rows: list[Verdict], marker: str) -> Verdict:
    found = [r for r in rows if marker in r.claim]
    assert len(found) == 1, marker
    return found[0]


def _schemas(standin: StandinServer, api: str) -> list[str]:
    names = []
    for request in standin.requests_for(api):
        body = request.get("json") or {}
        fmt = (body.get("response_format") or {}).get("json_schema") or {}
        config = body.get("generationConfig") or body.get("generation_config") or {}
        schema = config.get("responseJsonSchema") or config.get("response_json_schema") \
            or config.get("responseSchema") or {}
        names.append(fmt.get("name") or schema.get("title") or "")
    return names


# --- full runs --------------------------------------------------------------------------------


def test_every_claim_is_checked_twice_and_what_is_not_supported_leaves_or_is_qualified(
    standin: StandinServer, runs: Runner
) -> None:
    standin.add_fault("openai", "cite_invented", times=1)
    store, run_id = _run(runs)

    drafts = store.get_drafts(run_id)
    base, final = drafts[-2], drafts[-1]
    assert INVENTED_SENTENCE.split(" [")[0] in base.text
    assert final.kind == "verified" and final.numbering == base.numbering
    sources = {s.id: s for s in store.get_sources(run_id)}
    claims = verify.split_claims(base.text, base.numbering, sources)
    rows = store.get_verifications(run_id)
    assert [r.claim_id for r in rows] == [c.id for c in claims] and len(rows) >= 15
    assert all(r.status in ("supported", "qualified", "removed") for r in rows)
    assert all(r.verifier_verdict and r.auditor_verdict for r in rows)

    # Two separately prompted passes, and a critic, all asked over HTTP.
    schemas = _schemas(standin, "openai")
    assert {"ClaimVerdicts", "AuditVerdicts", "CriticVerdicts", "ClaimRewrites"} <= set(schemas)
    usage_roles = {u.role for u in store.get_usage(run_id)}
    assert {"verifier", "auditor", "critic", "writer"} <= usage_roles

    # The invented citation never reaches a model and never survives.
    invented = _row(rows, "40% improvement")
    assert invented.status == "removed" and invented.source_ids == ()
    assert "no source gathered" in invented.note
    assert "[99]" not in final.text and "invented.example" not in final.text

    # Contested (the passes disagree) -> the critic rejects it.
    contested = _row(rows, CONTESTED_MARK)
    assert (contested.verifier_verdict, contested.auditor_verdict) == ("SUPPORTED", "UNSUPPORTED")
    assert contested.verdict == "CONTESTED" and contested.critic_verdict == "REJECT"
    assert contested.status == "removed" and CONTESTED_MARK not in final.text

    # A SUPPORTED verdict quoting a passage that is in no source is overruled.
    faked = _row(rows, FAKE_QUOTE_MARK)
    assert faked.verifier_verdict == "UNSUPPORTED" and "overruled" in faked.note
    assert faked.details["verifier"]["quote"] == FAKE_QUOTE
    assert faked.status == "removed"
    assert "Insufficient verified data for this section." in final.text.split(
        "## Where sources disagree")[1].split("##")[0]

    # Overstated in the executive summary -> the critic downgrades, the writer qualifies it.
    overstated = _row(rows, OVERSTATED_MARK)
    assert overstated.verdict == "OVERSTATED" and overstated.critic_verdict == "DOWNGRADE"
    assert overstated.status == "qualified"
    assert overstated.final_text.startswith("According to the cited source, the strongest")
    assert "(qualified after verification)" in overstated.final_text
    assert overstated.final_text in final.text

    # Supported claims keep their quoted passage, which is really in the cited source.
    supported = [r for r in rows if r.status == "supported"]
    assert supported and all(r.passage for r in supported)
    for r in supported:
        assert verify.quote_found(r.passage, [sources[sid].text for sid in r.source_ids])

    # Load-bearing claims on one source are marked; analysis claims are not.
    summary_part = final.text.split("## Executive summary")[1].split("## Analysis")[0]
    assert summary_part.count("(single source)") >= 8
    assert "(single source)" not in final.text.split("## Analysis by subtopic")[1]
    assert "Removed after verification: 3 claims" in final.text

    result = verify.summary(store, run_id)
    assert result.claims == len(rows) and result.unsupported_removed == 3
    assert result.rewritten == 1 and result.single_source >= 8
    assert result.share_supported == round(result.supported / result.claims, 3)
    share = f"{result.share_supported:.0%}"
    assert f"{result.supported} of {result.claims} cited claims ({share})" in result.line

    # The exports: the share in the header, no invented citation or URL, only gathered sources.
    doc = build_document_for_run(store, run_id)
    markdown = to_markdown(doc)
    header = markdown.split("---")[0]
    assert "**Verification:**" in header and share.replace("%", "\\%") not in header
    assert f"({share})" in header.replace("\\(", "(").replace("\\)", ")")
    assert "invented.example" not in markdown and "40% improvement" not in markdown
    gathered = {s.canonical_url for s in sources.values()}
    assert doc.sources and all(canonical_url(s.url) in gathered for s in doc.sources)
    linked = re.findall(r"\]\((https?://[^)\s]+)\)", markdown)
    assert linked and all(canonical_url(u) in gathered for u in linked)
    numbers = {int(n) for n in re.findall(r"\[\[(\d+)\]\]", markdown)}
    assert numbers == {s.number for s in doc.sources}
    text = _pdf_text(to_pdf(doc))
    assert "Verification:" in text and f"cited claims ({share})" in text
    assert "invented.example" not in text and "[99]" not in text and "40% improvement" not in text


def test_gemini_run_marks_a_failed_subtopic_unverified_removes_the_revision_claim_and_resumes(
    standin: StandinServer, http_runs: Runner
) -> None:
    http_runs.with_env(DEEP_RESEARCH_PROVIDER="gemini")
    standin.add_fault("gemini", "status", times=3, status=500, task="SearchQueries")
    store, run_id = _run(http_runs, review_cycles=1, max_retries=0, MAX_PARALLEL_WORKERS=1)
    assert standin.count("openai") == 0

    step = store.get_step(run_id, "research:t1")
    assert step is not None and step.status == "failed"
    failed_title = store.get_plan(run_id)[0].title  # type: ignore[index]
    rows = store.get_verifications(run_id)
    revision = _row(rows, REVISION_SENTENCE.split(" [")[0])
    assert revision.status == "removed" and revision.critic_verdict is None
    assert {"ClaimVerdicts", "AuditVerdicts", "CriticVerdicts"} <= set(_schemas(standin, "gemini"))

    result = verify.summary(store, run_id)
    assert result.unverified_subtopics == (failed_title,)
    assert f"Unverified subtopics: {failed_title}." in result.line
    doc = build_document_for_run(store, run_id)
    markdown = to_markdown(doc)
    assert f"### {failed_title} (UNVERIFIED)" in markdown
    assert REVISION_SENTENCE.split(" [")[0] not in markdown
    assert "could not be researched" in markdown  # deliver's caveat stays
    text = _pdf_text(to_pdf(doc))
    assert f"{failed_title} (UNVERIFIED)" in text and "Unverified subtopics" in text

    # Resume: the stored verification is reused, not redone.
    drafts = len(store.get_drafts(run_id))
    standin.reset()
    store.set_run_status(run_id, "failed")
    resumed = http_runs.resume(run_id)
    assert resumed.status == "completed", resumed.error
    verify_step = store.get_step(run_id, "verify")
    assert verify_step is not None and verify_step.attempts == 1
    assert len(store.get_drafts(run_id)) == drafts
    assert not {"ClaimVerdicts", "AuditVerdicts"} & set(_schemas(standin, "gemini"))


def test_when_both_checks_fail_the_run_completes_and_claims_are_flagged_not_verified(
    standin: StandinServer, http_runs: Runner
) -> None:
    for task in ("ClaimVerdicts", "AuditVerdicts"):
        standin.add_fault("openai", "status", times=50, status=500, task=task)
    standin.add_fault("openai", "cite_invented", times=1)
    store, run_id = _run(http_runs, max_retries=0)

    rows = store.get_verifications(run_id)
    invented = _row(rows, "40% improvement")
    assert invented.status == "removed"  # needs no model to go
    others = [r for r in rows if r is not invented]
    assert others and all(r.status == "unchecked" and r.verdict == "UNCHECKED" for r in others)
    assert "CriticVerdicts" not in _schemas(standin, "openai")
    final = store.get_drafts(run_id)[-1].text
    assert final.count("(not verified)") == len(others)
    warnings = [e for e in store.get_events(run_id) if e.type == "warning" and e.step == "verify"]
    assert warnings and "could not be checked" in warnings[0].message
    result = verify.summary(store, run_id)
    assert result.supported == 0 and result.share_supported == 0.0
    assert result.unchecked == len(others) and result.incomplete is True
    assert result.unsupported_removed == 1  # unchecked claims are never counted as removed
    assert "Verification could not be completed" in final
    header = build_document_for_run(store, run_id).verification
    assert "0 of" in header and header.startswith("Verification could not be completed")


def test_run_page_shows_the_share_of_supported_claims_and_every_verdict_with_its_passage(
    runs: Runner, dash_env: Store
) -> None:
    _, run_id = _run(runs.use_store(dash_env))
    result = verify.summary(dash_env, run_id)
    at = AppTest.from_file(APP, default_timeout=30).run()
    at.switch_page("app_pages/run.py")
    at.query_params["run"] = run_id
    at.query_params["tab"] = "Verification"
    at.run()
    assert not at.exception
    share = next(m for m in at.metric if m.label.startswith("Supported claims"))
    assert share.label == f"Supported claims ({result.share_supported:.0%})"
    assert share.value == f"{result.supported} of {result.claims}"
    table = next(df.value for df in at.dataframe if "First check" in df.value.columns)
    assert len(table) == result.claims
    assert {"#", "Claim", "First check", "Second check", "Critic", "Outcome",
            "Passage"} <= set(table.columns)
    # No internal terms: no claim ids, no role names.
    assert not {"Claim id", "Verifier", "Auditor"} & set(table.columns)
    assert "Removed" in set(table["Outcome"]) and "Qualified" in set(table["Outcome"])

    rows = {r.claim_id: r for r in dash_env.get_verifications(run_id)}
    contested = next(cid for cid, r in rows.items() if CONTESTED_MARK in r.claim)
    at.selectbox(key="v_claim").set_value(contested).run()
    detail = "\n".join(m.value for m in at.markdown)
    assert "Critic\\:** REJECT" in detail or "Critic:** REJECT" in detail
    assert "Second check" in detail and "Source passages the checks read" in detail
    assert "auditor" not in detail.lower()
    quote = rows[contested].details["verifier"]["quote"]
    assert verify.quote_found(quote, [detail.replace("\\", "")])

    at.multiselect(key="v_outcome").set_value(["Removed"]).run()
    table = next(df.value for df in at.dataframe if "First check" in df.value.columns)
    assert len(table) == result.unsupported_removed

    at.query_params["tab"] = "Report"
    at.run()
    assert any("Verification" in i.value and f"{result.share_supported:.0%}" in i.value.replace("\\", "")
               for i in at.info)


# --- the deterministic parts ----------------------------------------------------------------

DRAFT = """# Title

## Executive summary

Heat pumps sold 40% more in 2024 than in 2023 [1]. Their prices fell by a tenth over the year [9].

## Key findings

- Installers report waiting lists of several months [1][2].
- A short one [2].

## Analysis by subtopic

### Subtopic: Costs

Running costs depend mainly on electricity prices [2]. Subsidies cover part of the purchase [3].

### Policy

Most national plans include heat pump targets for 2030 [3].

## Where sources disagree

Sources differ on how large the savings are [2].

## Open questions and gaps

- Long-term data remains scarce in every country [1].
"""
NUMBERING = {1: "s1", 2: "s2", 3: "s3", 9: "gone"}
SOURCES = {sid: Source(sid, f"https://ex.org/{sid}", title=sid) for sid in ("s1", "s2", "s3")}


def _outcome(claim: Claim, status: str, combined: str = "supported") -> Outcome:
    o = Outcome(claim, PassVerdict("SUPPORTED"), PassVerdict("SUPPORTED"), combined)
    o.status = status
    return o


def test_claims_carry_their_section_subtopic_and_only_gathered_sources() -> None:
    claims = verify.split_claims(DRAFT, NUMBERING, SOURCES)
    assert [c.text for c in claims] == [
        "Heat pumps sold 40% more in 2024 than in 2023 [1].",
        "Their prices fell by a tenth over the year [9].",
        "Installers report waiting lists of several months [1][2].",
        "Running costs depend mainly on electricity prices [2].",
        "Subsidies cover part of the purchase [3].",
        "Most national plans include heat pump targets for 2030 [3].",
        "Sources differ on how large the savings are [2].",
    ]  # "A short one" has too few words; open questions are not claims
    assert [c.kind for c in claims][:3] == ["executive", "executive", "findings"]
    assert claims[1].source_ids == [] and claims[1].invalid == [9]
    assert claims[2].source_ids == ["s1", "s2"]
    assert [c.subtopic for c in claims[3:6]] == ["Costs", "Costs", "Policy"]
    assert claims[6].section == "Where sources disagree" and claims[6].kind == "other"


def test_quote_guard_needs_a_real_passage_of_the_cited_source() -> None:
    text = "In 2024, sales of heat pumps rose 40% — the “fastest” growth on record. Prices fell."
    assert verify.quote_found("sales of heat pumps rose 40% - the \"fastest\" growth", [text])
    assert verify.quote_found("In 2024, sales of heat pumps … growth on record", [text])
    assert not verify.quote_found("sales of heat pumps rose 60%", [text])
    assert not verify.quote_found("Prices fell.", [text])  # too short to prove anything
    assert not verify.quote_found("", [text])
    claim = Claim("c1", "Sales rose 40% [1].", 0, "Key findings", "findings", None, [1], ["s1"], [])
    sources = {"s1": Source("s1", "https://s1.example/", text=text)}
    kept = verify.guard(PassVerdict("SUPPORTED", "heat pumps rose 40%, the fastest growth"), claim, sources)
    assert kept.verdict == "SUPPORTED"
    overruled = verify.guard(PassVerdict("SUPPORTED", "sales doubled across Europe in 2024"), claim, sources)
    assert overruled.verdict == "UNSUPPORTED" and "does not occur" in overruled.note
    assert verify.guard(PassVerdict("SUPPORTED", ""), claim, sources).verdict == "UNSUPPORTED"


@pytest.mark.parametrize(("first", "second", "combined"), [
    ("SUPPORTED", "SUPPORTED", "supported"),
    ("UNSUPPORTED", "UNSUPPORTED", "unsupported"),
    ("SUPPORTED", "CONTRADICTED", "unsupported"),
    ("OVERSTATED", "OVERSTATED", "overstated"),
    ("SUPPORTED", "OVERSTATED", "overstated"),
    ("SUPPORTED", "UNSUPPORTED", "contested"),
    ("OVERSTATED", "UNSUPPORTED", "contested"),
    ("SUPPORTED", "", "contested"),
    ("", "", "unchecked"),
])
def test_two_passes_combine_into_one_verdict(first: str, second: str, combined: str) -> None:
    assert verify.combine(first, second) == combined


def test_a_rewrite_may_not_add_numbers_or_citations_and_keeps_the_original_ones() -> None:
    original = "Sales rose 40% in 2024 [3]."
    assert verify.accept_rewrite(original, "One survey suggests sales rose 40% in 2024 [3].")
    assert verify.accept_rewrite(original, "Sales rose 45% in 2024 [3].") is None
    assert verify.accept_rewrite(original, "Sales rose 40% in 2024 [3][7].") is None
    assert verify.accept_rewrite(original, "Sales rose [3].") == "Sales rose [3]."
    assert verify.accept_rewrite(original, "One survey suggests sales rose 40% in 2024.") == \
        "One survey suggests sales rose 40% in 2024 [3]."
    assert verify.mark("Sales rose 40% [3][4].", "(single source)") == "Sales rose 40% (single source) [3][4]."
    assert verify.mark("Sales rose (single source) [3].", "(single source)") == "Sales rose (single source) [3]."


def test_applying_verdicts_removes_marks_and_never_leaves_a_section_empty() -> None:
    claims = verify.split_claims(DRAFT, NUMBERING, SOURCES)
    outcomes = [
        _outcome(claims[0], "supported"),
        _outcome(claims[1], "removed", "unsupported"),
        _outcome(claims[2], "qualified", "overstated"),
        _outcome(claims[3], "removed", "unsupported"),
        _outcome(claims[4], "removed", "unsupported"),  # Costs: nothing supported
        _outcome(claims[5], "supported"),                # Policy: grounded
        _outcome(claims[6], "removed", "contested"),
    ]
    outcomes[0].single_source = True
    outcomes[2].final_text, outcomes[2].rewritten = "Some installers report waiting lists [1][2].", True
    text, unverified = verify.apply(DRAFT, outcomes, numbering=NUMBERING, sources=SOURCES,
                                    failed_titles=["Policy"])
    assert unverified == ["Costs", "Policy"]
    assert "### Subtopic: Costs (UNVERIFIED)" in text and "### Policy (UNVERIFIED)" in text
    assert "Heat pumps sold 40% more in 2024 than in 2023 (single source) [1]." in text
    assert "prices fell" not in text.lower() and "[9]" not in text
    assert "- Some installers report waiting lists (qualified after verification) [1][2]." in text
    costs = text.split("### Subtopic: Costs (UNVERIFIED)")[1].split("###")[0]
    assert "could not be verified" in costs and "Insufficient verified data for this section." in costs
    disagree = text.split("## Where sources disagree")[1].split("##")[0]
    assert disagree.strip() == "Insufficient verified data for this section."
    gaps = text.split("## Open questions and gaps")[1]
    assert "Removed after verification: 4 claims" in gaps and "Executive summary" in gaps
    assert "\n\n\n" not in text


def test_excerpts_pick_the_passages_that_match_the_claim_within_the_limit() -> None:
    filler = " ".join(f"Sentence {i} is about gardening and nothing else." for i in range(300))
    text = f"{filler} Heat pump sales in Poland tripled in 2022. {filler}"
    chosen = verify.excerpt(text, "Sales of heat pumps in Poland tripled [4].", limit=400)
    assert "Heat pump sales in Poland tripled in 2022." in chosen and len(chosen) <= 400
    assert verify.excerpt("Short page.", "anything at all here") == "Short page."


UNCITED = """# Report

## Executive summary

Heat pumps sold 40% more in 2024 than in 2023 [1]. Demand keeps rising across the continent.
How will heat pump adoption change in Europe by 2030?

## Comparison

| Country | Growth | Source |
| --- | --- | --- |
| Norway | 12% | [1] |
| Poland | 30% | |
| Notes | see text | |

## Recommendations

Households should compare offers before they buy anything.

## Open questions and gaps

Nobody knows what happens after 2030.
"""


def test_every_factual_statement_is_a_claim_cited_or_not_and_table_rows_with_figures_too() -> None:
    claims = verify.split_claims(UNCITED, NUMBERING, SOURCES)
    assert [c.text for c in claims] == [
        "Heat pumps sold 40% more in 2024 than in 2023 [1].",
        "Demand keeps rising across the continent.",   # uncited, in the executive summary
        "| Norway | 12% | [1] |",
        "| Poland | 30% | |",                          # a figure without a source
    ]  # header rows, a row with no figure, an opinion without figures and open questions are not
    assert [c.table_row for c in claims] == [False, False, True, True]
    assert claims[3].source_ids == [] and claims[3].invalid == []


def test_uncited_claims_are_marked_or_removed_and_unanswered_ones_stay_unchecked() -> None:
    claims = verify.split_claims(UNCITED, NUMBERING, SOURCES)
    outcomes = [Outcome(c, PassVerdict(""), PassVerdict(""), "unchecked") for c in claims]
    outcomes[0].combined = "contested"
    outcomes[0].first = PassVerdict("SUPPORTED", "a passage")  # one pass answered, critic did not
    outcomes[2].first, outcomes[2].second = PassVerdict("SUPPORTED"), PassVerdict("SUPPORTED")
    outcomes[2].combined = "supported"
    for o in outcomes:
        verify.decide(o)
    assert [o.status for o in outcomes] == ["unchecked", "uncited", "supported", "removed"]
    text, _ = verify.apply(UNCITED, outcomes, numbering=NUMBERING, sources=SOURCES, failed_titles=[])
    assert "Heat pumps sold 40% more in 2024 than in 2023 (not verified) [1]." in text
    assert "Demand keeps rising across the continent (no source cited)." in text
    assert "| Norway | 12% | [1] |" in text and "Poland" not in text
    assert "Verification could not be completed" not in text  # 1 of 2 claims with a source


def test_when_most_verdicts_never_came_verification_is_reported_incomplete_not_emptied() -> None:
    claims = verify.split_claims(DRAFT, NUMBERING, SOURCES)
    outcomes = [Outcome(c, PassVerdict(""), PassVerdict(""), "unchecked") for c in claims]
    for o in outcomes:
        verify.decide(o)
    cited = [o for o in outcomes if o.claim.source_ids]
    assert all(o.status == "unchecked" for o in cited)
    text, _ = verify.apply(DRAFT, outcomes, numbering=NUMBERING, sources=SOURCES, failed_titles=[])
    assert text.count("(not verified)") == len(cited)
    assert "Verification could not be completed" in text.split("##")[0]
    rows = [Verdict(o.claim.id, o.claim.text, tuple(o.claim.source_ids), status=o.status)
            for o in outcomes]
    result = verify.summarise(rows, [])
    assert result.incomplete is True and result.unchecked == len(cited)
    assert result.unsupported_removed == 1  # only the claim citing nothing gathered ([9])
    assert result.line.startswith("Verification could not be completed")


def test_the_summary_kept_as_the_step_result_reads_back_and_older_results_lack_later_counts() -> None:
    rows = [Verdict("c1", "A", ("s1",), status="supported"),
            Verdict("c2", "B", ("s1",), status="removed"),
            Verdict("c3", "C", (), status="uncited")]
    made = verify.summarise(rows, ["Costs"])
    assert (made.claims, made.supported, made.unsupported_removed, made.uncited) == (3, 1, 1, 1)
    stored = json.loads(json.dumps(made.as_json()))  # as the step's JSON column returns it
    assert verify.VerifySummary.from_json(stored) == made
    older = {k: v for k, v in stored.items() if k not in ("unchecked", "uncited", "incomplete")}
    read = verify.VerifySummary.from_json(older)
    assert (read.unchecked, read.uncited, read.incomplete) == (0, 0, False)
    assert (read.claims, read.line, read.unverified_subtopics) == (3, made.line, ("Costs",))


def test_verdicts_in_a_models_own_words_count_and_unknown_words_are_no_verdict() -> None:
    from research.phases.verify.critic import CriticVerdicts
    from research.phases.verify.judge import ClaimVerdicts

    answer = ClaimVerdicts.model_validate({"verdicts": [
        {"claim_id": 3, "verdict": "partially_supported", "quote": None},
        {"claim_id": "C4", "verdict": "Supported"},
        {"claim_id": "c5", "verdict": "probably fine"},
    ]})
    assert [(v.claim_id, v.verdict) for v in answer.verdicts] == [
        ("c3", "OVERSTATED"), ("c4", "SUPPORTED"), ("c5", "")]
    assert ClaimVerdicts.model_json_schema()["$defs"]["ClaimVerdict"]["properties"]["verdict"]["enum"] \
        == ["SUPPORTED", "UNSUPPORTED", "OVERSTATED", "CONTRADICTED"]
    critic = CriticVerdicts.model_validate({"judgements": [{"claim_id": "1", "verdict": "rejected"}]})
    assert critic.judgements[0].verdict == "REJECT" and critic.judgements[0].claim_id == "c1"


TABLE_ONLY = """# Report

## Executive summary

Heat pumps sold 40% more in 2024 than in 2023 [1].

## Comparison

| Country | Growth |
| --- | --- |
| Norway | 12% [1] |
| Poland | 30% [1] |

## Open questions and gaps

Nobody knows what happens after 2030.
"""


def test_a_table_whose_every_row_was_removed_leaves_no_header_behind() -> None:
    claims = verify.split_claims(TABLE_ONLY, NUMBERING, SOURCES)
    outcomes = [Outcome(c, PassVerdict("SUPPORTED"), PassVerdict("SUPPORTED"), "supported")
                for c in claims]
    rows = [o for o in outcomes if o.claim.table_row]
    assert len(rows) == 2
    for o in outcomes:
        o.status = "removed" if o.claim.table_row else "supported"
    text, _ = verify.apply(TABLE_ONLY, outcomes, numbering=NUMBERING, sources=SOURCES,
                           failed_titles=[])
    assert "Country" not in text and "---" not in text, text
    comparison = text.split("## Comparison", 1)[1].split("##", 1)[0]
    assert verify.INSUFFICIENT in comparison
    assert "Heat pumps sold 40% more in 2024 than in 2023 [1]." in text
