"""New SQLite stores for tests: copies of one empty store migrated once per test process.

A new SQLite file runs every Alembic revision as a `Store` opens it: about 20 ms of CPU, and
Alembic's own import (about 0.3 s) the first time in a process. Some 330 tests opened one
(about 7 CPU-s a suite, issue 15 point 6). A copy costs a file copy; opening it still reads its
revision (storage/migrate.py), and a copy made before a new revision existed would be migrated
like any old database. Migrating a new database is tested where it is the subject:
tests/test_migrations.py, tests/test_startup_imports.py and the `db_target` stores of
tests/test_storage.py that are not made through here.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

from storage import Store


@functools.cache
def _template() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="store-template-"))
    atexit.register(shutil.rmtree, folder, True)
    Store(folder / "new.db").close()  # closed: the WAL is checkpointed into the file
    return folder / "new.db"


def migrated_copy(target: Path) -> Path:
    """`target` (made, or replaced): an empty store at the newest revision."""
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_template(), target)
    return target
