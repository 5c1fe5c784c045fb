"""Keeping the write-ahead log small while dashboards read without pause.

SQLite's automatic checkpoint (every 1,000 pages, PASSIVE) copies the WAL into the database,
but the WAL file only starts over when a writer finds every frame copied and no reader still
using it. Several Run pages polling back to back always have a reader in it, so the log never
restarts and grows with everything written: 125 MiB with two readers and a run writing large
events. So the writers bound it themselves, by size, not by a timer:

- after each commit, a writer that sees the WAL past `limit_bytes` runs
  `wal_checkpoint(TRUNCATE)`: it waits (at most CHECKPOINT_WAIT_MS, through the busy handler)
  for the readers of older snapshots to finish their current query, which takes
  milliseconds, copies every frame and truncates the file to zero. If the readers do not
  clear in time it gives up without error, having copied what it could, and the next commit
  past the limit tries again;
- `journal_size_limit` trims the file to `limit_bytes` whenever SQLite restarts the log on
  its own, so a quiet database does not keep a large WAL on disk either.

Only one thread per Store checkpoints at a time; the others go on writing. Readers are never
refused: a checkpoint holds only the checkpoint lock and, while waiting, the write lock, which
the other writers queue for under their usual busy timeout.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path

WAL_LIMIT_BYTES = 16 * 2**20   # checkpoint once the WAL passes this size
CHECKPOINT_WAIT_MS = 2_000     # how long a checkpoint waits for readers of older snapshots
BUSY_TIMEOUT_MS = 30_000       # every connection's usual busy timeout


def enter_wal_mode(conn: sqlite3.Connection, wait_s: float = BUSY_TIMEOUT_MS / 1000) -> None:
    """Put the database in WAL mode (it stays so, recorded in the file), waiting out others.

    Why a loop: the switch needs the database to itself, and SQLite answers "database is
    locked" at once, without the busy handler, when another connection is switching the same
    new file at that moment (six Stores opening a fresh database together did)."""
    deadline = time.monotonic() + wait_s
    pause = 0.005
    while True:
        try:
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
        else:
            if str(mode).lower() == "wal":
                return
            if time.monotonic() >= deadline:
                raise sqlite3.OperationalError(f"could not switch the database to WAL ({mode})")
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def configure(conn: sqlite3.Connection, limit_bytes: int = WAL_LIMIT_BYTES) -> None:
    """Per-connection settings that bound the WAL file (journal_size_limit is per connection)."""
    conn.execute(f"PRAGMA journal_size_limit={int(limit_bytes)}")


class WalBound:
    """Checkpoints from the writer side once the WAL of `db_path` passes `limit_bytes`."""

    def __init__(self, db_path: Path, limit_bytes: int = WAL_LIMIT_BYTES) -> None:
        self.wal_path = Path(f"{db_path}-wal")
        self.limit_bytes = limit_bytes
        self.checkpoints = 0  # completed ones (all frames copied), for tests and benchmarks
        self._busy = threading.Lock()

    def after_commit(self, conn: sqlite3.Connection) -> None:
        """Call with no transaction open; costs one stat() while the WAL is under the limit."""
        try:
            size = os.stat(self.wal_path).st_size
        except OSError:
            return
        if size < self.limit_bytes or not self._busy.acquire(blocking=False):
            return
        try:
            self._checkpoint(conn)
        finally:
            self._busy.release()

    def _checkpoint(self, conn: sqlite3.Connection) -> None:
        conn.execute(f"PRAGMA busy_timeout={CHECKPOINT_WAIT_MS}")
        try:
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            self.checkpoints += busy == 0
        except sqlite3.OperationalError:
            pass  # another process is checkpointing or holds the lock: the next commit retries
        finally:
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
