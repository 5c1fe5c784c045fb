"""Python processes that start warm: a fork server for the tests' `python -m research` children
(and, with its own preload, for their `streamlit run` dashboards: tests/browser_helpers.py).

Why (measured, issue 15 point 6): a `python -m research` child of the crash tests spends about
2.5 of its 4.5 CPU-seconds importing SQLAlchemy, pydantic, the OpenAI SDK, trafilatura and
alembic and parsing the list of web suffixes, before it does any research; every crash case
starts two of them, the worker tests ten. A fork server does that work once per test process;
each child is an `os.fork()` of it: a real process, in a session (process group) of its own,
with its own environment, working directory and output files, that runs `python -m MODULE
ARGS` (through `runpy`, as the interpreter does) or `python -c CODE ARGS`, leaves as the
interpreter does (threads joined, `atexit` run, the exit status of its `SystemExit` or
uncaught exception) and dies of SIGKILL like any other. It skips only the interpreter's last
step, tearing down every module: in a fork of this server that walked the whole preloaded
heap, about 0.9 CPU-s and seconds of copy-on-write page faults for each child (a child that
ran `pass` took 4 s on a busy machine; now 0.1).

How a warm child differs from a fresh interpreter: the imports are done already (no
import reads the environment: STYLE point 4; the server itself starts with the settings
stripped), and all children of one server share its string hash seed.

The server is a child of the test process, and reaps its own children: their CPU time, and
its own, shows in the test process's children when the server ends, with the session (in the
last test's figures); `cpu_seconds` gives the children's share so far. Under xdist the
`python -m research` server is shared by the run's workers (`shared_socket`): it is then
started in a session of its own and its CPU time shows in no test process's figures.
"""

from __future__ import annotations

import atexit
import fcntl
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SETTINGS_PREFIXES = ("DEEP_RESEARCH_", "OPENAI_", "GEMINI_", "TAVILY_")
SPAWN_TIMEOUT_S = 120.0  # the first request waits for the imports, on a busy two-core machine

# What a `python -m research` run imports (measured: sys.modules at the end of a quick run
# against the stand-in), and what it loads once per process (`module:function`: the HTML
# extractor's list of web suffixes, the CA bundle).
PRELOAD = (
    "research.cli", "research.llm.openai_llm", "research.phases.writing.sections_job",
    "research.search.arxiv", "research.search.semanticscholar", "research.search.tavily",
    "alembic.command", "alembic.config", "openai.resources.chat", "openai.types.chat", "jiter",
    "tiktoken", "requests",
    "xml.etree.ElementTree", "_strptime", "netrc",
    "research.runs.worker", "research.runs.jobs",  # `python -m research worker`; the door to runs
    "research.untrusted.html_text:warm_up", "research.llm.tls:shared_tls_context",
)
# What the OpenAI SDK imports on a client's first use (its resources load lazily).
WARM_CODE = """
import openai
openai.OpenAI(api_key="warm-up", base_url="http://127.0.0.1:9").chat.completions
"""

# The server: import, then answer each request line {argv, env, cwd, stdout, stderr} with the
# pid of a forked child, and each reaped child with its exit code (as Popen's returncode).
SERVER = r'''
import importlib, json, os, runpy, select, signal, sys

for name in sys.argv[2:]:
    module, _, function = name.partition(":")
    loaded = importlib.import_module(module)
    if function:
        getattr(loaded, function)()
exec(sys.argv[1], {})

signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C to pytest's group is not for us
wake_r, wake_w = os.pipe()
os.set_blocking(wake_r, False)
os.set_blocking(wake_w, False)
signal.set_wakeup_fd(wake_w)
signal.signal(signal.SIGCHLD, lambda *_: None)


def say(message, to=None):
    """To the test process that asked: on stdout, or on its connection (shared mode)."""
    line = (json.dumps(message) + "\n").encode()
    if to is None:
        os.write(1, line)
        return
    try:
        to.sendall(line)
    except OSError:  # that test process has gone
        pass


def child(request):
    """In the forked child: become the requested process, then run it as `python` would."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a fresh interpreter
    os.close(wake_r)
    os.close(wake_w)
    os.setsid()
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 1)
    if request["stderr"] == request["stdout"]:  # one log, as Popen's stderr=STDOUT
        os.dup2(1, 2)
    else:
        os.dup2(os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 2)
    flag, target, *args = request["argv"]
    code, interrupted = 0, False
    try:
        if flag == "-m":
            sys.argv = [target, *args]
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.argv = ["-c", *args]
            exec(compile(target, "<string>", "exec"), {"__name__": "__main__"})
    except SystemExit as exc:  # as the interpreter reads it (pythonrun.c, handle_system_exit)
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException as exc:  # an uncaught exception: its traceback, and status 1
        sys.excepthook(type(exc), exc, exc.__traceback__)
        code, interrupted = 1, isinstance(exc, KeyboardInterrupt)
    leave(code, interrupted)


def leave(code, interrupted):
    """The interpreter's own way out (Py_FinalizeEx, 3.11: wait for the other threads, run
    `atexit`, flush the standard streams), without tearing down every module: in a child
    of this server that teardown walks the whole preloaded heap (about 0.9 CPU-s, and seconds
    of copy-on-write page faults, for each child) and nothing of it is seen outside."""
    import atexit, threading
    try:
        threading._shutdown()
    except BaseException:  # a Ctrl-C while waiting for threads, as the interpreter allows
        pass
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    if interrupted:  # an uncaught Ctrl-C ends the process by SIGINT, as a fresh interpreter's
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code)


def reap():
    while True:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        to = owners.pop(pid, None)
        say({"exit": pid, "code": os.waitstatus_to_exitcode(status),
             "cpu": usage.ru_utime + usage.ru_stime}, to)
        if to is not None and to in clients:
            del clients[to]
            to.close()


def spawn(request, to):
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        for sock in (listener, *clients):  # not the child's to hold open
            if sock is not None:
                sock.close()
        child(request)
    owners[pid] = to
    say({"id": request["id"], "pid": pid}, to)


# Shared mode (WARM_PYTHON_SOCKET): requests come over a Unix socket, one connection a child,
# which hears the child's pid and then its exit; the server ends with the process OWNER.
path = os.environ.pop("WARM_PYTHON_SOCKET", "")
owner = int(os.environ.pop("WARM_PYTHON_OWNER", "0"))
listener, clients, owners = None, {}, {}  # clients: socket -> bytes not yet a line
if path:
    import socket
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path + ".new")
    listener.listen(64)
    os.rename(path + ".new", path)  # appears only once it is listening

pending = b""
while True:
    watched = [wake_r, *clients] + ([listener] if listener is not None else [0])
    ready, _, _ = select.select(watched, [], [], 1.0 if path else None)
    if wake_r in ready:
        while True:
            try:
                if not os.read(wake_r, 512):
                    break
            except BlockingIOError:
                break
        reap()
    if path:
        try:
            os.kill(owner, 0)
        except ProcessLookupError:
            for name in (path, path + ".lock"):
                os.unlink(name)
            if not os.path.getsize(path + ".log"):
                os.unlink(path + ".log")
            os._exit(0)  # no teardown of the preloaded modules: nothing of it is seen outside
        if listener in ready:
            clients[listener.accept()[0]] = b""
        for sock in [s for s in ready if s in clients]:
            data = sock.recv(65536)
            if not data:  # the test process is gone; its child is not ours to end
                del clients[sock]
                sock.close()
                continue
            *lines, clients[sock] = (clients[sock] + data).split(b"\n")
            for line in lines:
                spawn(json.loads(line), sock)
    elif 0 in ready:
        data = os.read(0, 65536)
        if not data:
            break
        pending += data
        *lines, pending = pending.split(b"\n")
        for line in lines:
            spawn(json.loads(line), None)
'''


# `python -c PATCHED_MODULE SETTINGS MODULE ARGS`: `python -m MODULE ARGS` with some of its
# modules' constants set first (SETTINGS: JSON of {"package.module.NAME": value}). For tests
# that would otherwise wait out a production interval in a child (a worker's liveness beat,
# a queue's polling): the child runs the same code, on a shorter clock. A name that does not
# exist is an error, so a renamed constant cannot silently stop being shortened.
PATCHED_MODULE = """
import importlib, json, runpy, sys
for name, value in json.loads(sys.argv[1]).items():
    module_name, _, attribute = name.rpartition(".")
    module = importlib.import_module(module_name)
    if not hasattr(module, attribute):
        raise SystemExit(f"no {attribute} in {module_name} to set for this test")
    setattr(module, attribute, value)
sys.argv = [sys.argv[2], *sys.argv[3:]]
runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
"""


def patched_module(module: str, args: Sequence[str], constants: dict[str, float]) -> list[str]:
    """The argv for `WarmPython.spawn` that runs `python -m MODULE ARGS` with `constants`
    (dotted names) set first: see PATCHED_MODULE."""
    return ["-c", PATCHED_MODULE, json.dumps(constants), module, *args]


class WarmProcess:
    """A forked child, with the part of `subprocess.Popen`'s interface the tests use."""

    def __init__(self, server: WarmPython, pid: int) -> None:
        self._server = server
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._server.exit_code(self.pid, timeout=0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """The exit code (negative: the signal that ended it); TimeoutExpired as Popen's."""
        if self.returncode is None:
            code = self._server.exit_code(self.pid, timeout=timeout)
            if code is None:
                raise subprocess.TimeoutExpired(f"warm child {self.pid}", timeout or 0)
            self.returncode = code
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(9)


class WarmPython:
    """The fork server: `spawn(["-m", "research", ...], env, cwd, stdout, stderr)`.

    With `shared` (a socket path), the server is shared by every process that names the same
    path (the xdist workers of one run: `shared_warm_python`), started by the first of them,
    and ends when the process `owner` ends (their controller); each child is asked for and
    heard of over a connection of its own."""

    def __init__(self, preload: Sequence[str] = PRELOAD, warm_code: str = WARM_CODE,
                 shared: Path | None = None, owner: int = 0) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(SETTINGS_PREFIXES)}
        env["PYTHONPATH"] = str(ROOT)
        self._argv = [sys.executable, "-c", SERVER, warm_code, *preload]
        self._changed = threading.Condition()
        self._pids: dict[int, int] = {}  # request id -> child pid
        self._codes: dict[int, int] = {}  # child pid -> exit code
        self._lost: set[int] = set()  # children whose connection ended before their exit
        self._ended = False
        self._next_id = 0
        self.cpu_seconds = 0.0  # of the children reaped so far
        self._shared = shared
        self._proc: subprocess.Popen[bytes] | None = None
        if shared is not None:
            self._start_shared(env, owner)
            return
        self._proc = subprocess.Popen(self._argv, cwd=ROOT, env=env,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self._reader = threading.Thread(target=self._read, name="warm-python", daemon=True)
        self._reader.start()

    def _start_shared(self, env: dict[str, str], owner: int) -> None:
        """Start the shared server unless another process has: one at a time (a file lock)."""
        assert self._shared is not None
        with open(f"{self._shared}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if self._shared.exists():
                return
            env = {**env, "WARM_PYTHON_SOCKET": str(self._shared), "WARM_PYTHON_OWNER": str(owner)}
            with open(f"{self._shared}.log", "ab") as log:
                # A session of its own: it outlives this worker, and no Ctrl-C to our group
                # is for it; it is reaped by init once the worker that started it is gone.
                self._proc = subprocess.Popen(self._argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                                              stdout=subprocess.DEVNULL, stderr=log,
                                              start_new_session=True)
            deadline = time.monotonic() + SPAWN_TIMEOUT_S
            while not self._shared.exists():  # it renames its socket there once listening
                if self._proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"the shared warm Python server did not start "
                                         f"(status {self._proc.poll()}; see {self._shared}.log)")
                time.sleep(0.05)

    def _heard(self, message: dict[str, Any]) -> None:
        with self._changed:
            if "exit" in message:
                self._codes[message["exit"]] = message["code"]
                self.cpu_seconds += message["cpu"]
            else:
                self._pids[message["id"]] = message["pid"]
            self._changed.notify_all()

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            self._heard(json.loads(line))
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    def _read_connection(self, connection: socket.socket, request_id: int) -> None:
        with connection, connection.makefile("rb") as lines:
            for line in lines:
                self._heard(json.loads(line))
        with self._changed:
            pid = self._pids.get(request_id)
            if pid is None or pid not in self._codes:
                self._lost.add(request_id if pid is None else pid)
            self._changed.notify_all()

    def spawn(self, argv: list[str], env: dict[str, str], cwd: Path, stdout: Path,
              stderr: Path) -> WarmProcess:
        """Start `python *argv` (argv begins with "-m" or "-c") warm; output goes to files
        (one file if `stdout` and `stderr` are the same path)."""
        assert argv[0] in ("-m", "-c"), argv
        with self._changed:
            self._next_id += 1
            request_id = self._next_id
        for path in (stdout, stderr):  # there from the start, for a test to read
            path.touch()
        request = {"id": request_id, "argv": argv, "env": env, "cwd": str(cwd),
                   "stdout": str(stdout), "stderr": str(stderr)}
        line = json.dumps(request).encode() + b"\n"
        if self._shared is not None:
            connection = socket.socket(socket.AF_UNIX)
            connection.connect(str(self._shared))
            connection.sendall(line)
            threading.Thread(target=self._read_connection, args=(connection, request_id),
                             name="warm-python", daemon=True).start()
        else:
            assert self._proc is not None and self._proc.stdin is not None
            self._proc.stdin.write(line)
            self._proc.stdin.flush()
        with self._changed:
            if not self._changed.wait_for(
                    lambda: request_id in self._pids or request_id in self._lost or self._ended,
                    SPAWN_TIMEOUT_S):
                raise AssertionError(f"the warm Python server started nothing in {SPAWN_TIMEOUT_S} s")
            if request_id not in self._pids:
                status = self._proc.poll() if self._proc is not None else "unknown"
                raise AssertionError(f"the warm Python server ended (status {status})")
            return WarmProcess(self, self._pids[request_id])

    def exit_code(self, pid: int, timeout: float | None) -> int | None:
        """The child's exit code once it has ended, waiting at most `timeout` seconds."""
        with self._changed:
            self._changed.wait_for(lambda: pid in self._codes or pid in self._lost or self._ended,
                                   timeout)
            return self._codes.get(pid)

    def close(self) -> None:
        """End the server (its children are the tests' to end: each test kills its own); a
        shared one ends with its owner instead."""
        if self._shared is not None:
            return
        assert self._proc is not None
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(30)
        finally:
            if self._proc.poll() is None:
                self._proc.kill()
                self._proc.wait(10)
            self._reader.join(10)


_shared: WarmPython | None = None
_shared_lock = threading.Lock()


def shared_socket() -> tuple[Path, int] | None:
    """Under xdist, the socket of the fork server the run's workers share, and the process
    it ends with (their controller, each worker's parent); None in a lone test process.

    Why shared (measured): each xdist worker started its own server, about 3.5 CPU-s of
    imports apiece, for children that are alike whichever worker asks."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run:
        return None
    return Path(tempfile.gettempdir()) / f"warm-python-{run[:16]}.sock", os.getppid()


def shared_warm_python() -> WarmPython:
    """This test process's fork server, started on first use (by the `warm_python` fixture
    or by a helper that starts processes for other fixtures: tests/api_server.py); under
    xdist, the one all workers of the run share (`shared_socket`)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            where = shared_socket()
            _shared = WarmPython() if where is None else WarmPython(shared=where[0], owner=where[1])
            atexit.register(close_shared_warm_python)  # if no fixture closes it first
        return _shared


def close_shared_warm_python() -> None:
    global _shared
    with _shared_lock:
        server, _shared = _shared, None
    if server is not None:
        server.close()


@pytest.fixture(scope="session")
def warm_python() -> Iterator[WarmPython]:
    """One fork server per test run, started by the first test that asks for it.

    Per session rather than per module: its imports cost about 3.5 CPU-seconds, as much as
    two cold children spend importing, and under xdist each worker would start it again for
    every module it passes through (and the workers share it: `shared_socket`). In a lone
    test process its CPU time (and its children's) is counted when the session ends, in the
    figures of that process's last test."""
    try:
        yield shared_warm_python()
    finally:
        close_shared_warm_python()
