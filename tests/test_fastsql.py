"""The store's hot statements on the driver's cursor (storage/fastsql.py) say exactly what
SQLAlchemy would: the same SQL, parameters converted by the column types (JSON), and the
values a statement carries itself (a literal in .values()) sent along."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy.dialects import postgresql, sqlite

from research.core.records import Finding, Source
from storage import Store
from storage.dialects import insert_event
from storage.fastsql import Plans
from storage.steps import _FINISH

_INSERT_EVENT = insert_event("sqlite")  # the plain INSERT ... RETURNING of SQLite

FINISH_KEYS = ("b_run", "b_key", "now", "duration", "result", "source_count")
FINISH_PARAMS = {"b_run": "r1", "b_key": "research:t1", "now": "2025-01-01T00:00:00.000Z",
                 "duration": 1.5, "result": {"kept": ["s1"], "note": "é"}, "source_count": 3}


def test_sqlite_plan_is_sqlalchemys_sql_with_json_as_text_and_literals_in_place() -> None:
    dialect = sqlite.dialect()
    plan = Plans(dialect).plan(_FINISH, FINISH_KEYS)
    assert plan.sql == str(_FINISH.compile(dialect=dialect, column_keys=list(FINISH_KEYS)))
    args = plan.args(FINISH_PARAMS)
    by_name = dict(zip([name for name, _ in plan.order], args, strict=True))
    assert json.loads(by_name["result"]) == FINISH_PARAMS["result"]
    assert by_name["status"] == "done" and by_name["error"] is None
    assert (by_name["b_run"], by_name["source_count"]) == ("r1", 3)


def test_postgresql_plan_names_every_parameter_and_wraps_json_for_psycopg() -> None:
    pytest.importorskip("psycopg")
    dialect = postgresql.psycopg.dialect()
    plan = Plans(dialect).plan(_FINISH, FINISH_KEYS)
    args = plan.args({**FINISH_PARAMS, "result": None})
    assert set(args) == {"status", "now", "duration", "result", "source_count", "error",
                         "b_run", "b_key"}
    assert all(f"%({name})s" in plan.sql for name in args)
    assert args["result"] is None and args["status"] == "done"
    wrapped = plan.args(FINISH_PARAMS)["result"]
    assert type(wrapped).__name__ == "Jsonb" and wrapped.obj == FINISH_PARAMS["result"]


def test_a_plan_is_compiled_once_per_set_of_parameter_names() -> None:
    plans = Plans(sqlite.dialect())
    keys = ("run_id", "ts", "type", "step", "message", "data")
    first = plans.plan(_INSERT_EVENT, keys)
    assert plans.plan(_INSERT_EVENT, keys) is first
    fewer = plans.plan(_INSERT_EVENT, keys[:3])
    assert fewer is not first and "message" not in fewer.sql


def test_hot_writes_round_trip_on_both_databases(db_target: str) -> None:
    """An event, a research step and its rows written on the fast path read back intact."""
    with Store(db_target) as store:
        run_id = store.create_run("q", {})
        event_id = store.append_event({"run_id": run_id, "type": "note", "message": "m",
                                       "data": {"n": 1, "text": "ü"}})
        assert store.get_events(run_id)[0].id == event_id
        assert store.get_events(run_id)[0].data == {"n": 1, "text": "ü"}
        store.start_step(run_id, "research:t1", kind="research", label="t1")
        source = Source("s1", "https://a.example/1", title="A", signals=("peer",))
        again = replace(source, id="s2")  # the same URL under another id: not stored twice
        inserted = store.complete_research_step(
            run_id, "research:t1", sources=[source, again],
            findings=[Finding(None, "c", ("s2", "s1"))],
            result={"kept": 1})
        assert inserted == ["s1"]
        assert [f.source_ids for f in store.get_findings(run_id)] == [("s1",)]
        [step] = store.get_steps(run_id)
        assert step.status == "done" and step.result == {"kept": 1}
        assert store.get_sources(run_id)[0].signals == ("peer",)


def test_databases_of_one_kind_share_their_plans_once_connected(tmp_path: Path) -> None:
    """A store opened per run compiles nothing its kind of database has compiled before; a
    dialect that has not met its server yet (what it compiles may still change) keeps its own."""
    first, second = (Store(tmp_path / f"{name}.db") for name in ("first", "second"))
    try:
        assert first._database.plans.plan(_FINISH, FINISH_KEYS) is second._database.plans.plan(_FINISH, FINISH_KEYS)
    finally:
        first.close()
        second.close()
    unconnected = [Plans(sqlite.dialect()), Plans(sqlite.dialect())]
    assert unconnected[0].plan(_FINISH, FINISH_KEYS) is not unconnected[1].plan(_FINISH, FINISH_KEYS)
    connected_elsewhere = sqlite.dialect()
    connected_elsewhere.server_version_info = (1, 0, 0)  # another SQLite library
    assert Plans(connected_elsewhere).plan(_FINISH, FINISH_KEYS) \
        is not Plans(first._database.plans.dialect).plan(_FINISH, FINISH_KEYS)
