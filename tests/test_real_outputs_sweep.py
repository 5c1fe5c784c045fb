"""Whatever a model writes, the run finishes (issue 32): complete runs in which each text real
research systems wrote (../shared/real-outputs, skipped when absent) and mutations of them
(cut in a link or a table, only headings, no heading, empty, 100,000 characters, HTML,
right-to-left) is in turn the answer of every free-text role of the writer: a section, the
title and summary, a shortening, a revision (tests/real_outputs.py). Every run completes,
no message names an exception, and every citation of every report resolves to a gathered
source. Most runs use the in-process fakes; a few go over HTTP through the real openai SDK.
"""

from __future__ import annotations

import pytest

from tests import real_outputs
from tests.runs import Runner
from tests.standin import StandinServer

pytestmark = pytest.mark.skipif(not real_outputs.available(),
                                reason="../shared/real-outputs is not on this machine")


def _problems(figures: real_outputs.RunFigures) -> list[str]:
    found = []
    if figures.status != "completed":
        found.append(f"ended {figures.status}: {figures.error}")
    if figures.unexpected:
        found.append(f"says an exception's name: {figures.error} {figures.warnings}")
    found += figures.unresolved
    return found


def test_every_real_text_in_every_writer_role_gives_a_completed_report_citing_only_gathered_sources(
    standin: StandinServer, runs: Runner,
) -> None:
    items = real_outputs.texts()
    assert len(items) >= 219 + len(real_outputs.MUTATIONS)
    script_runs = list(real_outputs.sweep(standin, runs, items))
    failures = {f.run_id: (_problems(f), f.given) for f in script_runs if _problems(f)}
    assert not failures, failures
    # The sweep ended because every text played every role, not because it ran out of runs.
    assert len(script_runs) < 200
    assert sum(1 for f in script_runs if f.cited_sources >= 3) > len(script_runs) / 2


def test_real_texts_over_http_through_the_real_sdk(standin: StandinServer, http_runs: Runner) -> None:
    """A handful of texts in every role of one run, over real HTTP (the SDK reads the stand-in's
    JSON carrying them): one from each file, and the mutations that strain a parser most."""
    items = real_outputs.texts()
    seen: set[str] = set()
    picked = [t for t in items if t.label.split("#")[0] not in seen and not seen.add(t.label.split("#")[0])]
    picked += [t for t in items if t.label.startswith(("html of", "empty of", "rtl of", "cut_link of"))]
    script = real_outputs.Script(picked)
    standin.script = script.answer
    script.start_run(real_outputs.ROLES)
    store, run_id = http_runs(**{**real_outputs.SWEEP_CONFIG, "review_cycles": 1})
    figures = real_outputs.figures_of(store, run_id, script.run_labels)
    assert not _problems(figures), (_problems(figures), figures.given)
    assert all(script.served[role] for role in real_outputs.ROLES), script.served
