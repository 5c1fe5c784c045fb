"""Run one function on untrusted input in a fresh Python process under a memory cap and a
wall-clock limit, so a bomb (a layout that explodes, a PDF whose content stream inflates to
megabytes of drawing commands) costs a child process, not the dashboard or the engine.

Used by PDF export (WeasyPrint on report HTML) and by the fetcher (text out of a fetched PDF).

The child is a fresh interpreter (not fork: the app has threads; not multiprocessing:
`python -m research` has an unguarded __main__). The target's parent packages are registered
as bare packages, so `research/__init__.py` (the whole engine, LLM SDKs included) is not
imported: start-up stays near a few tenths of a second. The child gets the environment without
anything that looks like a secret. Its address space is capped with RLIMIT_AS; the parent
kills it when the time is up.

Protocol: the target `module:function` is called as `function(payload: bytes, *args: str)`
and returns a JSON-able dict, written to stdout; `run_child` returns that dict or raises
`ChildFailed` naming what went wrong (timeout, memory, crash, start).
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

_ROOT = Path(__file__).resolve().parents[1]
_CHILD_CODE = """
import sys, types
root, target = sys.argv[1], sys.argv[2]
parts = target.split(":")[0].split(".")
for i in range(1, len(parts)):
    name = ".".join(parts[:i])
    package = types.ModuleType(name)
    package.__path__ = [root + "/" + name.replace(".", "/")]
    sys.modules[name] = package
sys.path.insert(0, root)
from research.sandbox import child_main
child_main(target, int(sys.argv[3]), sys.argv[4:])
"""
_SECRET_NAME = re.compile(r"KEY|SECRET|TOKEN|PASSWORD", re.IGNORECASE)
_MEMORY_WORDS = ("MemoryError", "out of memory", "Cannot allocate memory", "bad_alloc")
MEMORY = "memory"  # the "error" a child reports when it ran out of memory

# What a child answers: a JSON object read from its stdout ({"error": words} or the target's
# own keys). JSON from another process, parsed by the caller that knows its target's keys, so
# untyped here: the edge between the child and us.
ChildAnswer = dict[str, Any]

Reason = Literal["timeout", "memory", "killed", "crashed", "start"]


@dataclass(frozen=True)
class ChildLimits:
    timeout_s: float   # wall clock, start-up included
    memory_mb: int     # address space (RLIMIT_AS)


class ChildFailed(Exception):
    """The child gave no answer: `reason` says why, `detail` adds an exit code or OS error.

    "killed" is a child that died by a signal or with memory words on stderr: usually the
    memory cap hit inside a C library.
    """

    def __init__(self, reason: Reason, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


def run_child(target: str, payload: bytes, limits: ChildLimits,
              args: Sequence[str] = ()) -> ChildAnswer:
    """`target` ("package.module:function") applied to `payload` in a limited child process."""
    env = {k: v for k, v in os.environ.items() if not _SECRET_NAME.search(k)}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if limits.timeout_s <= 0:
        raise ChildFailed("timeout")
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD_CODE, str(_ROOT), target, str(limits.memory_mb),
             *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        )
    except OSError as exc:
        raise ChildFailed("start", str(exc)[:200]) from None
    try:
        out, err = proc.communicate(payload, timeout=limits.timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise ChildFailed("timeout") from None
    try:
        result = json.loads(out.decode("utf-8")) if out.strip() else None
    except (UnicodeDecodeError, json.JSONDecodeError):
        result = None
    if isinstance(result, dict) and proc.returncode == 0:
        if result.get("error") == MEMORY:
            raise ChildFailed("memory")
        return result
    tail = err.decode("utf-8", "replace")[-2000:]
    if proc.returncode < 0 or any(word in tail for word in _MEMORY_WORDS):
        raise ChildFailed("killed", f"exit code {proc.returncode}")
    raise ChildFailed("crashed", f"exit code {proc.returncode}")


def child_main(target: str, memory_mb: int, args: Sequence[str]) -> None:
    """Entry point of the child: payload on stdin, one JSON object on stdout."""
    import resource

    limit = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    payload = sys.stdin.buffer.read()
    module, _, function = target.partition(":")
    try:
        result = getattr(importlib.import_module(module), function)(payload, *args)
    except MemoryError:
        result = {"error": MEMORY}
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which words it
        if near_memory_cap():  # a C library hit the cap and failed its own way
            result = {"error": MEMORY}
        else:
            result = {"error": "failed", "detail": (str(exc) or type(exc).__name__)[:200]}
    sys.stdout.write(json.dumps(result))
    sys.stdout.flush()


def near_memory_cap() -> bool:
    """In a child: has this process come within 10% of its address-space cap?"""
    import resource

    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    return limit != resource.RLIM_INFINITY and peak_memory() >= 0.9 * limit


def peak_memory() -> int:
    """Peak address space of this process in bytes (Linux), 0 when unknown."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmPeak:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0
