"""Run one function on untrusted input in a child process under a memory cap and a wall-clock
limit, so a bomb (a layout that explodes, a PDF whose content stream inflates to megabytes of
drawing commands) costs a child process, not the dashboard or the engine.

Used by PDF export (WeasyPrint on report HTML), the fetcher (text out of a fetched PDF) and the
document reader (uploaded PDF and Word files).

Children are forked from a *starter*: one small interpreter per process, started on first use
with the environment stripped of anything that looks like a secret, in a session of its own
(a Ctrl-C at the terminal is the parent's to handle). The starter imports each target's module
once, before forking, so a child starts in a few milliseconds: a fresh interpreter took about
0.5 s of CPU per PDF, most of it WeasyPrint's import (a dozen `ldconfig` and `gcc` runs to find
its libraries). The starter never runs a target itself, holds no data and no secret, has no
threads to break a fork, and imports only the target modules and their libraries (the target's
parent packages are registered bare, so `research/__init__.py`, the whole engine with its SDKs,
is never loaded). It exits when its parent closes the control socket (the parent exited) or
after `STARTER_IDLE_S` without work; the next call starts another.

Per call the starter forks a *keeper*, which forks the child and waits for it: the keeper
kills the child at the deadline or as soon as the parent hangs up, and reports how it ended,
so the parent gets the child's exit code without being its parent. The child's stdin, stdout
and stderr are memory files the parent made, so nobody pumps pipes. Its address space is capped
with RLIMIT_AS before it reads its input. One thing a fork does not renew: the children of one
starter share its address-space layout (randomised per program start, not per fork). A child
holds nothing but its own input and is gone at its deadline, so a layout learnt from one child
opens nothing worth taking in another.

Protocol: the target `module:function` is called as `function(payload: bytes, *args: str)`
and returns a JSON-able dict, written to stdout; `run_child` returns that dict or raises
`ChildFailed` naming what went wrong (timeout, memory, crash, start).
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import types
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NoReturn

_ROOT = Path(__file__).resolve().parents[2]
_STARTER_CODE = """
import sys, types
package = types.ModuleType("research")
package.__path__ = [sys.argv[1] + "/research"]
sys.modules["research"] = package
sys.path.insert(0, sys.argv[1])
from research.untrusted.sandbox import starter_main
starter_main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]))
"""
STARTER_IDLE_S = 300.0  # a starter with no work for this long exits (it holds ~70 MB)
_REPLY_SLACK_S = 10.0   # past the deadline, how long the parent waits for the keeper's word
# DEEP_RESEARCH_MCP_SERVERS: the MCP servers a person lists, with their tokens (as JSON).
_SECRET_NAME = re.compile(r"KEY|SECRET|TOKEN|PASSWORD|MCP_SERVERS", re.IGNORECASE)
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


@dataclass(frozen=True)
class _Ending:
    """How a child ended, as its keeper reported it."""

    code: int        # exit code, or minus the signal that killed it
    timed_out: bool  # the keeper killed it at the deadline


def run_child(target: str, payload: bytes, limits: ChildLimits,
              args: Sequence[str] = ()) -> ChildAnswer:
    """`target` ("package.module:function") applied to `payload` in a limited child process."""
    if limits.timeout_s <= 0:
        raise ChildFailed("timeout")
    deadline = time.monotonic() + limits.timeout_s  # CLOCK_MONOTONIC: the same in every process
    request = json.dumps({"target": target, "memory_mb": limits.memory_mb, "args": list(args),
                          "deadline": deadline}).encode("utf-8")
    files = [os.memfd_create(name, os.MFD_CLOEXEC) for name in ("stdin", "stdout", "stderr")]
    try:
        with open(files[0], "wb", closefd=False) as stdin:
            stdin.write(payload)
        os.lseek(files[0], 0, os.SEEK_SET)
        ending = _STARTER.run(request, files, deadline)
        out = _read(files[1], 0)
        err = _read(files[2], -2000)
    finally:
        for fd in files:
            os.close(fd)
    if ending.timed_out:
        raise ChildFailed("timeout")
    try:
        result = json.loads(out.decode("utf-8")) if out.strip() else None
    except (UnicodeDecodeError, json.JSONDecodeError):
        result = None
    if isinstance(result, dict) and ending.code == 0:
        if result.get("error") == MEMORY:
            raise ChildFailed("memory")
        return result
    tail = err.decode("utf-8", "replace")
    if ending.code < 0 or any(word in tail for word in _MEMORY_WORDS):
        raise ChildFailed("killed", f"exit code {ending.code}")
    raise ChildFailed("crashed", f"exit code {ending.code}")


def _read(fd: int, start: int) -> bytes:
    """A memory file's bytes from `start` (negative: that many from the end)."""
    size = os.fstat(fd).st_size
    offset = max(0, size + start) if start < 0 else start
    chunks = []
    while offset < size:
        chunk = os.pread(fd, size - offset, offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


class _Starter:
    """This process's starter: started on first use, again after it exits or if we forked."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._control: socket.socket | None = None
        self._owner = 0  # the pid that started it: a forked copy of us must start its own

    def run(self, request: bytes, files: Sequence[int], deadline: float) -> _Ending:
        """Send one request; wait for its keeper's word. A starter that went away before
        taking the request (idle exit, crash) is replaced once."""
        for attempt in (1, 2):
            keeper, ours = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                self._send(request, [*files, keeper.fileno()])
                keeper.close()  # now only the starter's side holds it: its end means an answer
                ending = self._await(ours, deadline)
            finally:
                keeper.close()
                ours.close()
            if ending is not None:
                return ending
            self.stop()
            if attempt == 2 or time.monotonic() > deadline + _REPLY_SLACK_S:
                break
        raise ChildFailed("start", "the sandbox starter did not take the work")

    def _await(self, reply: socket.socket, deadline: float) -> _Ending | None:
        """The keeper's report, or None when the starter never took the request."""
        started = False
        while True:
            reply.settimeout(max(0.0, deadline - time.monotonic()) + _REPLY_SLACK_S)
            try:
                message = reply.recv(4096)
            except TimeoutError:  # the keeper missed its own deadline: the starter is stuck
                self.stop()
                raise ChildFailed("timeout") from None
            if not message:
                if started:  # the keeper died (the system killed it): the child's fate is unknown
                    raise ChildFailed("killed", "the keeper of the child ended")
                return None
            word = json.loads(message)
            if "code" in word:
                return _Ending(int(word["code"]), bool(word["timed_out"]))
            started = True

    def _send(self, request: bytes, fds: list[int]) -> None:
        with self._lock:
            for attempt in (1, 2):
                if self._control is None or self._owner != os.getpid():
                    self._start()
                assert self._control is not None
                try:
                    socket.send_fds(self._control, [request], fds)
                    return
                except OSError as exc:  # the starter exited: start another, once
                    self._stop_locked()
                    if attempt == 2:
                        raise ChildFailed("start", str(exc)[:200]) from None

    def _start(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {k: v for k, v in os.environ.items() if not _SECRET_NAME.search(k)}
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", _STARTER_CODE, str(_ROOT), str(theirs.fileno()),
                 str(STARTER_IDLE_S)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                env=env, pass_fds=(theirs.fileno(),), start_new_session=True,
            )
        except OSError as exc:
            ours.close()
            raise ChildFailed("start", str(exc)[:200]) from None
        finally:
            theirs.close()
        self._control, self._owner = ours, os.getpid()

    def pid(self) -> int | None:
        """The running starter's process id, if this process has one."""
        with self._lock:
            proc = self._proc
            if proc is None or proc.poll() is not None or self._owner != os.getpid():
                return None
            return proc.pid

    def stop(self) -> None:
        """Close the control socket (the starter exits when it reads the end) and reap it."""
        with self._lock:
            self._stop_locked()

    def _stop_locked(self) -> None:
        control, proc, owner = self._control, self._proc, self._owner
        self._control, self._proc = None, None
        if control is not None:
            control.close()
        if proc is not None and owner == os.getpid():
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def forget(self) -> None:
        """In a forked child: the starter belongs to the parent; drop our copies of its ends."""
        self._lock = threading.Lock()
        if self._control is not None:
            self._control.close()
        self._control, self._proc = None, None


_STARTER = _Starter()
atexit.register(_STARTER.stop)
os.register_at_fork(after_in_child=_STARTER.forget)


def starter_pid() -> int | None:
    """The process id of this process's sandbox starter, if one is running (for tests)."""
    return _STARTER.pid()


def stop_starter() -> None:
    """Stop this process's starter; the next `run_child` starts a fresh one (with the
    environment as it is then)."""
    _STARTER.stop()


# --- in the starter ------------------------------------------------------------------------------

def starter_main(root: str, control_fd: int, idle_s: float) -> NoReturn:
    """The starter's loop: per request, import the target's module, fork a keeper, go on."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # keepers are reaped by the system
    control = socket.socket(fileno=control_fd)
    control.settimeout(idle_s)
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 65536, 4)
        except OSError:  # idle too long (TimeoutError is an OSError), or the socket broke
            os._exit(0)
        if not message:  # the parent has gone
            os._exit(0)
        try:
            _serve(root, control, message, fds)
        except Exception:  # noqa: BLE001 - e.g. fork refused: the parent, seeing its request
            pass           # dropped (its keeper's socket closes unanswered), words it
        finally:
            for fd in fds:
                os.close(fd)


def _serve(root: str, control: socket.socket, message: bytes, fds: list[int]) -> None:
    """In the starter: one request: its target's module imported here, then a keeper forked."""
    request = json.loads(message)
    if len(fds) != 4:
        return
    module = str(request["target"]).partition(":")[0]
    with suppress(Exception):  # a module that fails to import here fails again in the child,
        _import_bare(root, module)  # which reports it
    if os.fork() == 0:
        control.close()
        _keeper(request, fds)


def _import_bare(root: str, module: str) -> None:
    """Import `module` with its parent packages registered bare (their __init__ not run)."""
    parts = module.split(".")
    for i in range(1, len(parts)):
        name = ".".join(parts[:i])
        if name not in sys.modules:
            package = types.ModuleType(name)
            package.__path__ = [root + "/" + name.replace(".", "/")]
            sys.modules[name] = package
    importlib.import_module(module)


def _keeper(request: dict[str, Any], fds: list[int]) -> NoReturn:  # request: JSON from our parent
    """Fork the child, wait for it (until the deadline, or until the parent hangs up), report."""
    code = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # so that waitpid sees our child
        reply = socket.socket(fileno=fds[3])
        pid = os.fork()
        if pid == 0:
            reply.close()
            _child(request, fds[:3])
        for fd in fds[:3]:
            os.close(fd)
        reply.send(b"{}")  # taken: from here a silent end means the keeper died
        child = os.pidfd_open(pid)
        ready = select.select([child, reply.fileno()], [], [],
                              max(0.0, float(request["deadline"]) - time.monotonic()))[0]
        timed_out = child not in ready
        if timed_out:  # the deadline passed, or the parent hung up: either way, stop it
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        with suppress(OSError):
            reply.send(json.dumps({"code": os.waitstatus_to_exitcode(status),
                                   "timed_out": timed_out}).encode("ascii"))
        code = 0
    finally:
        os._exit(code)


def _child(request: dict[str, Any], fds: list[int]) -> NoReturn:
    """The forked child: memory files as stdin, stdout and stderr, then the target."""
    code = 1
    try:
        for number, fd in enumerate(fds):
            os.dup2(fd, number)
            os.close(fd)
        child_main(str(request["target"]), int(request["memory_mb"]),
                   [str(arg) for arg in request["args"]])
        code = 0
    except MemoryError:
        with suppress(OSError):
            os.write(2, b"MemoryError\n")
    except BaseException:  # noqa: BLE001 - whatever it was, the child ends here, never in the loop
        with suppress(BaseException):
            import traceback

            traceback.print_exc()
    finally:
        with suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


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
