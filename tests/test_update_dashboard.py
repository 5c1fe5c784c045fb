"""A report's versions in the dashboard (issue 36, point 2): "Update with what's new" on a
finished run, the versions listed and compared section by section on the Run page, and the
Library keeping the versions of one report together."""

from __future__ import annotations

import pytest

from dashboard.versions_view import grouped, section_diff, sentences
from research.core.records import Run
from storage import Store
from storage.versions import link_version, version_link
from tests.dashboard_fixtures import (  # noqa: F401 - fixtures
    FakeExecutor,
    dash_env_fixture,
    fake_jobs_fixture,
    finished_run,
    open_page,
    open_run_page,
)

OLD = """# Question

**Date:** 2026-01-01

---

# Research report

## Summary

Adoption rose 45% in 2024 [[1]](#source-1). Costs fell [[2]](#source-2).

## Costs

- Installers charge more in winter [[3]](#source-3).

## Outlook

Growth will slow [[1]](#source-1).
"""
NEW = """# Question

**Date:** 2026-02-01

---

# Research report

## What changed since 2026-01-01

This version updates the earlier report: 1 claim added, 1 changed, 0 no longer supported.

## Summary

Adoption rose 52% in 2024 [[4]](#source-4). Costs fell [[1]](#source-1).

## Costs

- Installers charge more in winter [[2]](#source-2).

## Waiting lists

Installers reported a waiting list of 14 weeks [[3]](#source-3).
"""


def test_sections_are_compared_by_their_sentences_without_citation_numbers() -> None:
    diff = {c.title: c for c in section_diff(OLD, NEW)}
    assert list(diff) == ["Summary", "Costs", "Waiting lists", "Outlook"]  # no "What changed"
    assert diff["Summary"].status == "changed"
    assert diff["Summary"].added == ("Adoption rose 52% in 2024.",)
    assert diff["Summary"].removed == ("Adoption rose 45% in 2024.",)
    assert diff["Costs"].status == "same"  # renumbered citations are no change
    assert diff["Waiting lists"].status == "added"
    assert diff["Outlook"].status == "removed" and diff["Outlook"].removed == ("Growth will slow.",)
    assert sentences("| A | B |\n| --- | --- |\n| x [1] | y |") == ["| A | B |", "| x | y |"]


def _update_of(store: Store, earlier: str, markdown: str) -> str:
    new = finished_run(store)
    report = store.get_report(new)
    assert report is not None
    store.save_report(new, markdown, meta=report.meta)
    link_version(store, new, previous_run_id=earlier, since="2026-01-01")
    return new


def test_the_run_page_lists_the_versions_and_marks_what_changed(dash_env: Store) -> None:
    first = finished_run(dash_env)
    dash_env.save_report(first, OLD, meta=dash_env.get_report(first).meta)  # type: ignore[union-attr]
    second = _update_of(dash_env, first, NEW)
    at = open_run_page(second, "Report")
    assert not at.exception
    text = "\n".join(str(m.value) for m in at.markdown)
    assert f"[Version 1](/run?run={first})" in text and "Version 2 (this one)" in text
    at.toggle(key=f"cmp_{second}").set_value(True).run()
    text = "\n".join(str(m.value) for m in at.markdown)
    assert "Added: Adoption rose 52% in 2024." in text
    assert "Removed: ~~Adoption rose 45% in 2024.~~" in text
    assert "**Waiting lists**: new in this version" in text
    assert "**Outlook**: not in this version" in text
    assert any("Costs: unchanged" in str(c.value) for c in at.caption)


def test_update_with_whats_new_starts_a_linked_update_of_the_finished_run(
        dash_env: Store, fake_jobs: FakeExecutor, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test-0123456789")
    earlier = finished_run(dash_env, SUBTOPIC_COUNT=4)
    at = open_run_page(earlier, "Report")
    next(b for b in at.button if b.label == "Update with what's new").click().run()
    assert not at.exception and not [e.value for e in at.error]
    update = next(r for r in dash_env.list_runs() if r.id != earlier)
    assert update.parent_run_id == earlier and update.question == dash_env.get_run(
        earlier).question  # type: ignore[union-attr]
    assert update.config["update_since"] and update.config["subtopic_count"] == 4
    assert at.query_params.get("run") in (update.id, [update.id])  # its Run page opened
    assert version_link(dash_env, update.id) is None  # the run itself links when it starts


def test_update_without_a_model_key_starts_nothing_and_says_why(dash_env: Store) -> None:
    earlier = finished_run(dash_env)
    at = open_run_page(earlier, "Report")
    next(b for b in at.button if b.label == "Update with what's new").click().run()
    assert any("Nothing was started" in e.value for e in at.error)
    assert dash_env.count_runs() == 1


def test_the_library_keeps_the_versions_of_a_report_together(dash_env: Store) -> None:
    first = finished_run(dash_env, "How fast is solar power growing?")
    finished_run(dash_env, "Something else entirely?")
    second = _update_of(dash_env, first, NEW)
    at = open_page("app_pages/library.py").run()
    assert not at.exception
    table = next(df.value for df in at.dataframe if "Version" in df.value.columns)
    assert list(table["Version"]) == ["Version 2 of 2", "Version 1 of 2", ""]
    assert table["Open"].iloc[0].endswith(second) and table["Open"].iloc[1].endswith(first)


def test_grouping_puts_each_report_where_its_newest_version_is() -> None:
    runs = [Run(id=i, question=i, status="completed") for i in ("b2", "a", "b1", "c")]
    assert [r.id for r in grouped(runs, {"b2": "b1"})] == ["b2", "b1", "a", "c"]
