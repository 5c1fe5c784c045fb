"""A full disk, recognised wherever it surfaces, and said in plain words.

SQLite reports it as "database or disk is full" (SQLITE_FULL), the file system as ENOSPC or
EDQUOT; a write that fails half-way can also surface as SQLITE_IOERR. The engine and the
CLI turn all of them into one message with the one thing to do, instead of a traceback.
"""

from __future__ import annotations

import errno
import sqlite3

DISK_FULL_MESSAGE = (
    "The disk is full; free space and Resume (python -m research --resume RUN_ID, or Resume "
    "on the Run page). Everything stored so far is kept."
)
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def is_disk_full(exc: BaseException | None) -> bool:
    """True when `exc` (or an exception it was raised from) means the disk ran out of space."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS:
            return True
        if isinstance(exc, sqlite3.OperationalError | sqlite3.DatabaseError):
            code = getattr(exc, "sqlite_errorcode", None)
            if code == sqlite3.SQLITE_FULL or "disk is full" in str(exc).lower():
                return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False
