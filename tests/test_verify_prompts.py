"""What the claim checks are sent (issue 31: fewer tokens for the same checks). The two checks
read each claim with the excerpts of its sources, not where it sits or the research question;
the critic reads where a claim sits, and a quote that is in the excerpts it reads is pointed at
by its first words, which are there in the excerpts."""

from __future__ import annotations

import re
from typing import Any

from tests.runs import Runner
from tests.standin import StandinServer
from tests.standin.brain_verify import OVERSTATED_MARK
from tests.standin.server import _task_of

_BLOCK = re.compile(r"<untrusted_source [^>]*>\n(.*?)\n</untrusted_source", re.DOTALL)
_POINTED = re.compile(r'quoted the excerpt\'s passage that begins "([^"]+) …"')


def _prompts(standin: StandinServer) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for r in standin.requests_for("openai"):
        body: dict[str, Any] = r["json"] or {}
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        out.setdefault(_task_of("openai", body) or "writer", []).append(user)
    return out


def test_the_checks_read_claims_and_excerpts_and_the_critic_is_pointed_at_quotes_it_reads(
    standin: StandinServer, runs: Runner,
) -> None:
    store, run_id = runs("How is heat pump adoption changing in Europe?", subtopic_count=3,
                         max_rounds=1, source_max_age_days=3650)
    assert store.get_run(run_id).status == "completed"  # type: ignore[union-attr]
    prompts = _prompts(standin)
    checks = prompts["ClaimVerdicts"] + prompts["AuditVerdicts"]
    assert checks
    for prompt in checks:
        assert "<claim id=" in prompt and " section=" not in prompt
        assert "<question>" not in prompt
    pointed = 0
    for prompt in prompts.get("CriticVerdicts", []):
        assert re.search(r'<claim id="[^"]+" section="[^"]*">', prompt)
        excerpts = " ".join(" ".join(b.split()) for b in _BLOCK.findall(prompt))
        for lead in _POINTED.findall(prompt):
            pointed += 1
            assert " ".join(lead.split()) in excerpts
    # The stand-in's checks find claims with its mark overstated, quoting the excerpt.
    assert pointed, f"no critic was pointed at a quote (claims with {OVERSTATED_MARK!r})"
