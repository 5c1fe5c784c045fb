"""The sandbox's children: each forked fresh from one starter per process, stopped at their
deadline or when their parent goes, and never left running.

What the children do under hostile input (layout and PDF bombs, memory caps) is in
tests/test_render_limits.py; their environment and imports in test_render_limits.py and
test_startup_imports.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

import research.untrusted.sandbox as sandbox
from research.untrusted.sandbox import ChildFailed, ChildLimits, run_child
from tests.cli_helpers import ROOT
from tests.sandbox_targets import children_alive, descendants

LIMITS = ChildLimits(timeout_s=30, memory_mb=1024)


def _gone(pids: list[int], within_s: float = 10) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not [pid for pid in pids if os.path.exists(f"/proc/{pid}")
                and "Z" not in _state(pid)]:
            return True
        time.sleep(0.05)
    return False


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def test_each_child_is_a_fresh_fork_of_one_starter_and_gets_its_payload_and_arguments() -> None:
    payload = os.urandom(3 * 1024 * 1024)  # bigger than any pipe buffer
    first = run_child("tests.sandbox_targets:echo", payload, LIMITS, args=("a", "b c"))
    second = run_child("tests.sandbox_targets:echo", b"x", LIMITS)
    assert first["length"] == len(payload) and first["args"] == ["a", "b c"]
    assert second["length"] == 1 and second["args"] == []
    assert first["pid"] != second["pid"]  # a new process each time
    starter = sandbox.starter_pid()
    assert starter is not None and starter != os.getpid()
    # Each child's parent is its keeper, forked by the starter; both are gone once answered.
    assert first["parent"] != starter and first["parent"] != os.getpid()
    assert children_alive() == []


def test_a_child_past_its_deadline_is_killed_and_reported_as_a_timeout() -> None:
    started = time.monotonic()
    with pytest.raises(ChildFailed) as failed:
        run_child("tests.sandbox_targets:sleep", b"", ChildLimits(timeout_s=0.5, memory_mb=1024),
                  args=("30",))
    assert failed.value.reason == "timeout"
    assert time.monotonic() - started < 10
    assert children_alive() == []


def test_a_crashing_child_is_reported_with_its_exit_code() -> None:
    with pytest.raises(ChildFailed) as failed:
        run_child("tests.sandbox_targets:crash", b"", LIMITS)
    assert failed.value.reason == "crashed" and failed.value.detail == "exit code 3"


def test_a_target_that_cannot_be_loaded_is_reported_and_the_starter_carries_on() -> None:
    for target in ("tests.sandbox_targets:no_such_function", "tests.no_such_module:run"):
        answer = run_child(target, b"", LIMITS)
        assert answer["error"] == "failed" and "no_such" in answer["detail"]
    assert run_child("tests.sandbox_targets:echo", b"ok", LIMITS)["length"] == 2


def test_a_starter_that_died_is_replaced_on_the_next_call() -> None:
    run_child("tests.sandbox_targets:echo", b"", LIMITS)
    starter = sandbox.starter_pid()
    assert starter is not None
    os.kill(starter, signal.SIGKILL)
    assert _gone([starter])
    assert run_child("tests.sandbox_targets:echo", b"again", LIMITS)["length"] == 5
    assert sandbox.starter_pid() not in (None, starter)


def test_an_idle_starter_exits_and_the_next_call_starts_another(
        monkeypatch: pytest.MonkeyPatch) -> None:
    sandbox.stop_starter()
    monkeypatch.setattr(sandbox, "STARTER_IDLE_S", 0.3)
    run_child("tests.sandbox_targets:echo", b"", LIMITS)
    starter = sandbox.starter_pid()
    assert starter is not None
    assert _gone([starter])  # it left on its own after 0.3 s without work
    assert run_child("tests.sandbox_targets:echo", b"later", LIMITS)["length"] == 5
    sandbox.stop_starter()  # the next test's starter has the ordinary idle time


def test_children_run_side_by_side_from_several_threads() -> None:
    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(
            lambda i: run_child("tests.sandbox_targets:sleep", b"", LIMITS, args=("0.3",)),
            range(6)))
    assert len({answer["pid"] for answer in answers}) == 6


def test_when_the_parent_dies_its_children_and_starter_go_too() -> None:
    script = (
        "import sys, threading, time\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "import research.untrusted.sandbox as sandbox\n"
        "limits = sandbox.ChildLimits(timeout_s=120, memory_mb=1024)\n"
        "threading.Thread(target=sandbox.run_child, daemon=True,\n"
        "                 args=('tests.sandbox_targets:sleep', b'', limits, ('120',))).start()\n"
        "while sandbox.starter_pid() is None: time.sleep(0.02)\n"
        "print(sandbox.starter_pid(), flush=True)\n"
        "time.sleep(120)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        starter = int(parent.stdout.readline())
        deadline = time.monotonic() + 30
        while len(descendants(starter)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        below = descendants(starter)
        assert len(below) == 2, below  # the keeper and the sleeping child
    finally:
        parent.kill()
        parent.wait()
    assert _gone([starter, *below]), "the starter or a child outlived its parent"
