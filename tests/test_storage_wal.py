"""The WAL stays bounded by size while readers poll back to back and a run writes large events.

Without the writers' own checkpoint the WAL grows with nearly everything written (the
readers never leave SQLite a moment to restart it); with it, the file stays near the limit.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bench.wal import wal_peak
from storage import Store

LIMIT = 2 * 2**20
EVENT_KB = 128


def test_the_wal_stays_under_its_bound_with_readers_polling(tmp_db: Path) -> None:
    peak = wal_peak(tmp_db, readers=6, events=64, event_kb=EVENT_KB, wal_limit_bytes=LIMIT)
    assert peak.polls > 100, "the readers should have been polling the whole time"
    assert peak.written_mb == 8  # four times the limit
    # The limit, plus the commit that crossed it and one more that raced the checkpoint.
    assert peak.peak_mb * 2**20 < LIMIT + 4 * EVENT_KB * 1024, peak


def test_every_connection_limits_the_journal_size(tmp_db: Path) -> None:
    store = Store(tmp_db, wal_limit_bytes=LIMIT)
    store.create_run("q", {})
    raw = store._database.engine.raw_connection().driver_connection  # the pool's own, as configured
    assert raw.execute("PRAGMA journal_size_limit").fetchone()[0] == LIMIT
    store.close()


def test_a_checkpoint_empties_the_wal_when_no_reader_is_in_the_way(tmp_db: Path) -> None:
    store = Store(tmp_db, wal_limit_bytes=LIMIT)
    run_id = store.create_run("q", {})
    for n in range(40):
        store.append_event({"run_id": run_id, "type": "source_found", "message": str(n),
                            "data": {"text": "x" * 100_000}})
    assert store.wal.checkpoints >= 1
    assert Path(f"{tmp_db}-wal").stat().st_size < LIMIT
    assert len(store.get_events(run_id)) == 40  # nothing lost by checkpointing
    other = sqlite3.connect(tmp_db)
    assert other.execute("SELECT count(*) FROM events").fetchone()[0] == 40
    other.close()
    store.close()
