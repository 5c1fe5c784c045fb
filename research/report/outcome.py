"""What a finished run says about itself: warnings beside "Completed", and the real cause
when nothing could be gathered.

A run can complete and still deserve a warning (stopped by the budget, no verified citation,
verification incomplete, a model that answered short). Those sentences are stored on the run (`runs.warnings`), so the Run
page, the Library and the CLI say the same thing and the status never contradicts the report.
"""

from __future__ import annotations

from research.core import counts
from research.core.context import WRAP_UP_NOTE, WRAP_UP_REASON, RunContext
from research.phases import verify
from research.phases.writing.review import UNCITED_WARNING


def completion_warnings(ctx: RunContext) -> list[str]:
    """Plain sentences for a completed run whose report is weaker than a plain success."""
    warnings: list[str] = ctx.losses.sentences()
    # The report's notes on answers that came back short ("Only 2 of the 3 ..."): the report
    # shows them in a yellow box, so the status line must not say "no warnings" above it.
    warnings += [n for n in counts.report_notes(ctx) if n not in warnings]
    budget = ctx.budget_reason()
    if budget == WRAP_UP_REASON:
        warnings.append(WRAP_UP_NOTE)
    elif budget:
        warnings.append(f"Research was stopped by the budget: {budget}. The report covers only "
                        "what was gathered until then.")
    report = ctx.store.get_report(ctx.run_id)
    meta = report.meta if report else {}
    summary = verify.summary(ctx, ctx.run_id)
    verified = ctx.stored_result(verify.STEP_KEY) is not None or bool(summary.claims)
    if summary.incomplete:
        unchecked = summary.unchecked
        detail = f" ({unchecked} claims could not be checked)" if unchecked else ""
        warnings.append(f"Verification could not be completed{detail}: treat the report's "
                        "claims with care.")
    if meta.get("writer_cited_nothing"):
        warnings.append(UNCITED_WARNING)
    elif report and not meta.get("cited_sources"):
        warnings.append("The report cites no sources: none of its statements could be "
                        "checked against what was gathered.")
    elif verified and not summary.supported:
        warnings.append("No claim in the report is backed by a verified citation.")
    elif not verified and report:
        warnings.append("The report's claims were not verified against their sources.")
    return warnings


def nothing_gathered(ctx: RunContext) -> str:
    """Why a run ended without a single source, naming the real cause."""
    down = ctx.health.down()
    if down:
        services = ", ".join(f"{name} ({n} failed call{'s' if n != 1 else ''})"
                             for name, n in down)
        return (f"No sources could be gathered because a service could not be reached: "
                f"{services}. This is not a problem with your question, and nothing gathered "
                "is lost: press Resume when the service is back and the run carries on where "
                "it stopped.")
    budget = ctx.budget_reason()
    if budget == WRAP_UP_REASON:
        return ("Research was ended before any source was kept, so there is nothing to write a "
                "report from. Start the research again and let it gather a few sources first.")
    if budget:
        return (f"The budget stopped the run before any source was kept: {budget}. Raise the "
                "cap and start again (reports are never made from model memory alone).")
    return ("No usable sources were found, so no report was written (reports are never made "
            "from model memory alone). Try a broader question, other search providers, or a "
            "lower relevance threshold.")
