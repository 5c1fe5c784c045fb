"""Updating a finished report with what is new (issue 36, points 1, 2 and 5's update test).

Over real HTTP: the real SDKs talk to the stand-in, whose web a test can change
(`tests/standin/pages.WORLD`). A quick run is made once; an update before the world changed
finds nothing new and keeps the report; after the world gained two pages and one figure
changed, an update's "What changed since" names exactly those, and reuses the earlier plan,
sources and searches (its searches carry the providers' date filters).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from research import Credentials, run_research
from research.core.config import build_config
from research.core.errors import ConfigError
from research.living.changes import changes
from research.living.update import start_update
from research.llm.pacing import forget_pacers
from research.phases.verify.carried import key
from research.runs import Runs
from storage import Store
from storage.versions import version_link, versions_of
from tests.cli_helpers import RunCli
from tests.runs import QUESTION
from tests.standin import StandinServer
from tests.standin.pages import WORLD
from tests.store_files import migrated_copy

FILLER = ("The figures were collected by independent surveyors who visited each site, and the "
          "methods are described in full in the appendix so that others can repeat the work. "
          "Readers should note that the sample covers urban and rural areas alike.")
NEW_PAGES = {
    "field-trial-results": ("Field trial results", [
        "A field trial completed this month found that 41% of households that switched cut "
        "their winter bills by more than a quarter.", FILLER, FILLER]),
    "installer-waiting-lists": ("Installer waiting lists", [
        "Installers reported a waiting list of 14 weeks in the latest industry count, the "
        "longest since records began.", FILLER, FILLER]),
}


@pytest.fixture(scope="module")
def world(standin: StandinServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One quick run, finished, and a door to start its updates (module-scoped: the run is
    made once for every test here)."""
    standin.reset()
    forget_pacers()
    env = {**standin.env(), "DEEP_RESEARCH_SEARCH_PACE": "0"}
    db = migrated_copy(tmp_path_factory.mktemp("update") / "research.sqlite3")
    credentials = Credentials.from_env(env)
    store = Store(db, secrets=credentials.secrets())
    config = build_config(env=env, preset="quick", fetch_timeout_s=5)
    first = run_research(QUESTION, store=store, config=config, credentials=credentials)
    assert store.get_run(first).status == "completed"  # type: ignore[union-attr]
    runs = Runs(db, env=lambda: env, credentials=lambda: credentials)
    try:
        yield {"store": store, "first": first, "runs": runs, "env": env,
               "credentials": credentials, "standin": standin, "db": db}
    finally:
        runs.close()
        store.close()
        standin.reset()


def _update(world: dict[str, Any], run_id: str) -> str:
    runs: Runs = world["runs"]
    new = start_update(runs, run_id, credentials=world["credentials"])
    assert runs.wait(new, 120)
    run = world["store"].get_run(new)
    assert run is not None and run.status == "completed", run and run.error
    return new


def _what_changed(markdown: str) -> str:
    match = re.search(r"^## What changed since .*?(?=^#|^---|\Z)", markdown,
                      re.MULTILINE | re.DOTALL)
    assert match, markdown[:500]
    return match.group(0)


def test_an_update_that_finds_nothing_new_keeps_the_report_and_says_so(
        world: dict[str, Any], run_cli: RunCli, tmp_path: Path) -> None:
    """`python -m research update RUN_ID`, before the world changed."""
    store: Store = world["store"]
    standin: StandinServer = world["standin"]
    standin.requests.clear()
    out = tmp_path / "updated.md"
    result = run_cli(["update", world["first"], "--db", str(world["db"]), "--out", str(out)],
                     world["env"], tmp_path)
    assert result.returncode == 0, result.stderr
    new = result.stdout.strip().splitlines()[-1]
    assert f"an update of run {world['first']}" in result.stderr
    assert "## What changed since" in out.read_text(encoding="utf-8")

    found = changes(store, new)
    assert found is not None and found.nothing and found.score == 0
    report = store.get_report(new)
    earlier = store.get_report(world["first"])
    assert report is not None and earlier is not None
    section = _what_changed(report.markdown)
    assert "0 claims added, 0 changed, 0 no longer supported" in section
    assert "Nothing new was found" in section
    # The earlier version's final draft is kept as it was, under the section.
    kept = store.get_drafts(new)[-1].text.replace(section, "")
    assert kept.split() == store.get_drafts(world["first"])[-1].text.split()
    assert "## What changed since" not in earlier.markdown
    # Every search asked only for what is newer than the earlier version.
    since = found.since
    tavily = [r["json"] for r in standin.requests_for("tavily")]
    assert tavily and all(body.get("start_date") == since for body in tavily)
    arxiv = [r["query"]["search_query"] for r in standin.requests_for("arxiv")]
    assert arxiv and all(f"AND submittedDate:[{since.replace('-', '')}0000 TO " in q for q in arxiv)
    s2 = [r["query"].get("publicationDateOrYear") for r in standin.requests_for("semanticscholar")]
    assert s2 and all(value == f"{since}:" for value in s2)
    # The plan was reused, and nothing was written, reviewed or verified again.
    assert not store.get_reviews(new)
    assert not {"write", "review:1", "plan_call"} & {s.key for s in store.get_steps(new)}
    plan = [s.title for s in store.get_plan(new) or [] if not s.inherited]
    assert plan == [s.title for s in store.get_plan(world["first"]) or [] if not s.inherited]
    link = version_link(store, new)
    assert link is not None and link.previous_run_id == world["first"]


def test_an_update_names_exactly_the_new_pages_and_the_changed_figure(
        world: dict[str, Any]) -> None:
    store: Store = world["store"]
    first = world["first"]
    sources = {s.id: s.url for s in store.get_sources(first)}
    article = next(f for f in store.get_findings(first) if f.kind == "finding"
                   and "/pages/article/" in sources.get(f.source_ids[0], "")
                   and re.search(r"rose \d+%", f.claim))
    old_claim = article.claim
    old_figure = re.search(r"rose (\d+)%", old_claim).group(1)  # type: ignore[union-attr]
    new_figure = str(int(old_figure) + 7)
    slug = sources[article.source_ids[0]].rsplit("/", 1)[-1]
    for page, (title, paragraphs) in NEW_PAGES.items():
        WORLD.publish(page, title, paragraphs)
    WORLD.revise(slug, f"rose {old_figure}%", f"rose {new_figure}%")
    standin: StandinServer = world["standin"]
    standin.requests.clear()
    try:
        new = _update(world, first)
    finally:
        WORLD.reset()

    found = changes(store, new)
    assert found is not None
    added = {s.url.rsplit("/", 1)[-1]: c.claim for c in found.added for s in c.sources}
    assert sorted(added) == sorted(NEW_PAGES)
    for page, (_, paragraphs) in NEW_PAGES.items():
        assert paragraphs[0] in added[page]
    assert [c.old for c in found.changed] == [old_claim]
    changed = found.changed[0]
    assert f"rose {new_figure}%" in changed.claim and f"rose {old_figure}%" not in changed.claim
    assert [s.url.rsplit("/", 1)[-1] for s in changed.sources] == [f"{slug}-revised"]
    assert [s.url for s in changed.old_sources] == [sources[article.source_ids[0]]]
    assert found.no_longer_supported == ()
    assert found.score > 0
    # The writer was given the new figure in place of the old one, not both.
    writing = [json.dumps(r["json"]) for r in standin.requests_for("openai")
               if "response_format" not in r["json"]]
    assert any(json.dumps(changed.claim)[1:-1] in body for body in writing)
    assert not any(json.dumps(old_claim)[1:-1] in body for body in writing)
    # Claims stated as the earlier version stated them, on the same sources, kept their
    # verdicts instead of being judged again; every other claim was judged.
    checked = store.get_step(new, "verify")
    assert checked is not None
    before = {key(v.claim, v.section, v.source_ids) for v in store.get_verifications(first)
              if v.outcome == "supported"}
    same = [v for v in store.get_verifications(new)
            if key(v.claim, v.section, v.source_ids) in before]
    assert checked.result["carried_over"] == len(same)  # (which depends on the writer's
    assert all(v.outcome == "supported" for v in same)  # wording: tests/test_update_verdicts.py)
    # Only the three new pages were read: everything the earlier version read was inherited.
    own = [s for s in store.get_sources(new) if s.subtopic_id != "p0"]
    assert sorted(s.url.rsplit("/", 1)[-1] for s in own) == sorted(
        [*NEW_PAGES, f"{slug}-revised"])

    report = store.get_report(new)
    assert report is not None
    section = _what_changed(report.markdown)
    body = report.markdown.split("\n---\n", 1)[1]  # after the header block
    title, rest = body.lstrip().split("\n", 1)
    assert title.startswith("# ") and rest.lstrip().startswith("## What changed since")
    assert "2 claims added, 1 changed, 0 no longer supported" in section
    plain = section.replace("\\", "")
    for _, paragraphs in NEW_PAGES.values():
        assert paragraphs[0] in plain
    assert f"Now: {changed.claim}" in plain and f"Before: {old_claim}" in plain
    assert versions_of(store, new) == [first, *[r for r in versions_of(store, new)[1:]]]
    assert new in versions_of(store, first)


def test_an_unfinished_or_unknown_run_cannot_be_updated(world: dict[str, Any], tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="There is no run"):
        start_update(world["runs"], "nope", credentials=world["credentials"])
    with pytest.raises(ConfigError, match="There is no run"):  # another person's run
        start_update(world["runs"], world["first"], person="bob", credentials=world["credentials"])

