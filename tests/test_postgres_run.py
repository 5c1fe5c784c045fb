"""One complete research run on PostgreSQL: the default pipeline, over real HTTP through the
real SDKs to the stand-in, stored on a real PostgreSQL server, then exported, built on and
copied back to a SQLite file. (The same run at the default constants, on SQLite, is
tests/test_pipeline_e2e.py.)"""

from __future__ import annotations

from pathlib import Path

from research.export import to_markdown
from research.export.run_document import build_document_for_run
from storage import Store
from storage.copy import copy_store, count_rows
from tests.runs import Runner  # the shared end-to-end runner, not a copy of it

# Every phase, both rounds and a review, at the smallest counts: it writes a row to every table
# the default run writes to (compared table by table: 25 sources, not 137), which is what is
# checked here on PostgreSQL.
SMALLER = {"subtopic_count": 3, "sources_per_subtopic": 5, "searches_per_subtopic": 1,
           "review_cycles": 1}


def test_a_complete_research_run_stores_everything_on_postgres(
    http_runs: Runner, pg_url: str, tmp_path: Path
) -> None:
    http_runs.use_store(Store(pg_url, secrets=http_runs.credentials.secrets()))
    store, run_id = http_runs(**SMALLER)  # real HTTP through the real SDKs
    assert store.dialect == "postgresql"
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", run and run.error
    sources = store.get_sources(run_id)
    assert sources and len({s.canonical_url for s in sources}) == len(sources)
    assert all(s.status == "done" for s in store.get_steps(run_id))
    assert store.get_findings(run_id) and store.get_queries(run_id)
    assert [d.kind for d in store.get_drafts(run_id)][-1] == "verified"
    assert store.get_verifications(run_id)
    assert store.usage_totals(run_id).calls > 10
    events = store.get_events(run_id)
    assert [e.id for e in events] == sorted(e.id for e in events)
    assert {"initiated", "plan_created", "completed"} <= {e.type for e in events}

    report = to_markdown(build_document_for_run(store, run_id))
    assert "## Sources" in report and "[1]" in report
    cited = [s for s in store.get_sources(run_id, with_text=False) if s.cited_in]
    assert cited, "the report cites sources and the store records where"

    # The whole run comes back out of the team server into a SQLite file, row for row.
    local = Store(tmp_path / "local.db")
    assert copy_store(store, local).runs == 1
    assert count_rows(local) == count_rows(store)
    assert to_markdown(build_document_for_run(local, run_id)) == report
    store.close()
    local.close()


def test_the_dashboards_job_manager_works_on_a_postgres_url(pg_url: str) -> None:
    """The door to runs keeps a PostgreSQL URL as the URL (a Path would fold its "//"), its
    run queue lives on that server, and the sweep marks a run of a dead process."""
    import socket

    from research.runs import Runs

    store = Store(pg_url)
    run_id = store.create_run("left running by a dead process", {})
    store.set_run_status(run_id, "running")
    store.heartbeat(run_id, f"pid:999999999@{socket.gethostname()}")  # no such process
    manager = Runs(pg_url, stale_after_s=3600)
    assert manager.interrupted_at_start == [run_id]
    assert store.get_run(run_id).status == "interrupted"  # type: ignore[union-attr]
    assert not Path("postgresql:").exists()
    manager.store.close()
    store.close()
