"""Targets for research.untrusted.sandbox's children, used by the tests to make a child misbehave, and
the tests' look at what is left running under the sandbox's starter.

The sandbox's starter imports this module with its parent package registered bare (as it does
research's), so it imports only the standard library.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def crash(payload: bytes, *args: str) -> dict[str, object]:
    """Die the way a crashing C library would: at once, with an exit code and no answer."""
    os._exit(3)


def environment(payload: bytes, *args: str) -> dict[str, object]:
    """The names in the child's environment."""
    return {"names": sorted(os.environ)}


def modules(payload: bytes, *args: str) -> dict[str, object]:
    """What the child has loaded (what its starter had, plus this module)."""
    package = sys.modules.get("research")
    return {"modules": sorted(sys.modules),
            "research_init_ran": getattr(package, "__file__", None) is not None}


def sleep(payload: bytes, seconds: str) -> dict[str, object]:
    """Take `seconds`, then answer with this child's process id."""
    time.sleep(float(seconds))
    return {"pid": os.getpid()}


def echo(payload: bytes, *args: str) -> dict[str, object]:
    """The payload's length and the arguments, and who we are."""
    return {"length": len(payload), "args": list(args), "pid": os.getpid(),
            "parent": os.getppid()}


# --- in the test process --------------------------------------------------------------------

def children_alive() -> list[int]:
    """Processes still running under this process's sandbox starter (children and their
    keepers). A keeper exits just after it reports, so it gets a moment to go."""
    from research.untrusted.sandbox import starter_pid

    starter = starter_pid()
    deadline = time.monotonic() + 5
    while True:
        alive = descendants(starter) if starter is not None else []
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


def descendants(pid: int) -> list[int]:
    """Process ids below `pid`: its children, theirs, and so on."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [pid]
    while frontier:
        frontier = [child for child, parent in parents.items() if parent in frontier]
        found += frontier
    return found
