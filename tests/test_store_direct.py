"""SQLite statements the store runs again and again go to the driver's cursor
(`storage.direct`): what they return, the errors they raise and what a new Store finds
already planned are what SQLAlchemy's own path gives."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import bindparam, event, insert, select
from sqlalchemy.exc import IntegrityError, OperationalError

from storage import Store
from storage.schema import events, runs

_RUN = select(runs).where(runs.c.id == bindparam("run_id"))
_QUESTION = select(runs.c.question).where(runs.c.id == bindparam("run_id"))
_THESE = select(runs.c.id).where(runs.c.id.in_(bindparam("ids", expanding=True))).order_by(
    runs.c.id)
_NOTE = select(runs.c.id).where(runs.c.question == "fixed question")
_EVENT = insert(events).values(type="note", message="m", ts="2026-01-01T00:00:00")


@contextmanager
def sqlalchemy_runs(store: Store) -> Iterator[list[str]]:
    """The SQL that went through SQLAlchemy's `execute` on `store` meanwhile."""
    seen: list[str] = []

    def note(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        seen.append(statement)

    engine = store._database.engine
    event.listen(engine, "before_cursor_execute", note)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", note)


def _seeded(path: Path) -> tuple[Store, str]:
    store = Store(path)
    run_id = store.create_run("What about ü?", {"preset": "quick", "nested": {"n": [1, 2]}})
    for n in range(3):
        store.append_event({"run_id": run_id, "type": "note", "message": f"m{n}",
                            "data": {"n": n, "text": "ü"}})
    return store, run_id


def test_reads_and_writes_run_again_return_what_sqlalchemy_returned(tmp_path: Path) -> None:
    """The first runs go through SQLAlchemy, later ones to the cursor: the same records,
    JSON decoded (a NULL JSON column too), the same keys, the same written rows."""
    store, run_id = _seeded(tmp_path / "a.db")
    with store:
        def read_all() -> list[Any]:
            return [store.get_run(run_id), store.get_events(run_id),
                    store.live_view(run_id, events=50), store.query(_RUN, {"run_id": run_id}),
                    store.usage_totals(run_id)]

        first, second = read_all(), read_all()  # the second run learns each plan
        with sqlalchemy_runs(store) as seen:
            later = read_all()
            event_id = store.append_event({"run_id": run_id, "type": "note", "message": "x",
                                           "data": None})
        assert later == second == first
        assert seen == []
        [row] = store.query(_RUN, {"run_id": run_id})
        assert row["config"] == {"preset": "quick", "nested": {"n": [1, 2]}}
        assert row["warnings"] == [] and row["question"] == "What about ü?"
        assert store.get_events(run_id)[-1].id == event_id
        assert store.get_events(run_id)[-1].data in ({}, None)


def test_a_new_store_runs_known_statements_without_sqlalchemy(tmp_path: Path) -> None:
    """Plans are kept per process: another Store (another file) does not plan again."""
    store, run_id = _seeded(tmp_path / "a.db")
    with store:
        for _ in range(2):
            assert store.query_value(_QUESTION, {"run_id": run_id}) == "What about ü?"
    other, other_id = _seeded(tmp_path / "b.db")
    with other, sqlalchemy_runs(other) as seen:
        assert other.query_value(_QUESTION, {"run_id": other_id}) == "What about ü?"
        assert other.query_value(_QUESTION, {"run_id": "none"}) is None
    assert seen == []


def test_values_a_statement_carries_and_in_lists_stay_right(tmp_path: Path) -> None:
    """A literal inside a statement, statements built anew per call, and an expanding IN
    list (which keeps SQLAlchemy's path) each give the right rows at every run."""
    store, run_id = _seeded(tmp_path / "a.db")
    with store:
        other = store.create_run("fixed question", {})
        for _ in range(3):
            assert store.query(_NOTE) == [{"id": other}]
            assert store.query(_THESE, {"ids": [run_id]}) == [{"id": run_id}]
            assert [r["id"] for r in store.query(_THESE, {"ids": [run_id, other]})] == sorted(
                [run_id, other])
        for rid, question in [(run_id, "What about ü?"), (other, "fixed question")] * 2:
            built = select(runs.c.question).where(runs.c.id == rid)
            assert store.query_value(built) == question


def test_driver_errors_reach_callers_as_sqlalchemys_exceptions(tmp_path: Path) -> None:
    """A constraint broken, or a table gone, on the cursor's path: SQLAlchemy's exception
    (with the driver's error inside), as `execute` raises it; the store goes on after."""
    store, run_id = _seeded(tmp_path / "a.db")
    with store:
        for _ in range(3):
            store._database.write_one(_EVENT, {"run_id": run_id})
        with sqlalchemy_runs(store) as seen, pytest.raises(IntegrityError) as broken:
            store._database.write_one(_EVENT, {"run_id": "no-such-run"})
        assert seen == [] and isinstance(broken.value.orig, sqlite3.IntegrityError)
        assert "FOREIGN KEY" in str(broken.value)
        for _ in range(3):
            store.query(_QUESTION, {"run_id": run_id})
        with store.transaction() as tx:
            tx.execute("ALTER TABLE runs RENAME TO runs_away")
        with sqlalchemy_runs(store) as seen, pytest.raises(OperationalError) as gone:
            store.query(_QUESTION, {"run_id": run_id})
        assert seen == [] and isinstance(gone.value.orig, sqlite3.OperationalError)
        with store.transaction() as tx:
            tx.execute("ALTER TABLE runs_away RENAME TO runs")
        assert store.query_value(_QUESTION, {"run_id": run_id}) == "What about ü?"
