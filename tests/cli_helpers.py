"""Running `python -m research` in a test: as a real subprocess, or in-process.

A subprocess pays for importing the whole engine (seconds) on every call, so only the tests
that need a separate process (the `-m` entry point, progress on a real stderr, Ctrl-C and
signals, a full disk) use `cli`; the others call `research.cli.main` in-process with the
same arguments, environment, working directory and captured output (`cli_in_process`).
Both return a `CompletedProcess` with the exit code, stdout and stderr.
"""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from tests.warm_python import WarmPython

ROOT = Path(__file__).resolve().parent.parent
_OURS = ("DEEP_RESEARCH_", "OPENAI_", "GEMINI_", "TAVILY_")
RunCli = Callable[[list[str], dict[str, str], Path], "subprocess.CompletedProcess[str]"]


def cli(args: list[str], env: dict[str, str], cwd: Path,
        timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """`python -m research ARGS` in a subprocess: only `env` of our variables, no secrets file."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(_OURS)}
    full_env.update(env)
    full_env["PYTHONPATH"] = str(ROOT)
    full_env["DEEP_RESEARCH_SECRETS_FILE"] = str(cwd / "no-secrets.toml")
    return subprocess.run([sys.executable, "-m", "research", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


def warm_cli(python: WarmPython, args: list[str], env: dict[str, str], cwd: Path,
             timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """`cli`, forked warm (tests/warm_python.py): the same command line, environment and
    separate process, without importing the engine again (about 2.5 CPU-s a call)."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(_OURS)}
    full_env.update(env)
    full_env["DEEP_RESEARCH_SECRETS_FILE"] = str(cwd / "no-secrets.toml")
    out, err = cwd / "cli.out", cwd / "cli.err"
    code = python.spawn(["-m", "research", *args], full_env, cwd, out, err).wait(timeout)
    return subprocess.CompletedProcess(["-m", "research", *args], code, out.read_text(), err.read_text())


def cli_in_process(args: list[str], env: dict[str, str], cwd: Path,
                   monkeypatch: pytest.MonkeyPatch) -> subprocess.CompletedProcess[str]:
    """`research.cli.main(ARGS)` under the environment `cli` would give the subprocess."""
    from research.cli import main

    for name in list(os.environ):
        if name.startswith(_OURS):
            monkeypatch.delenv(name)
    for name, value in {**env, "DEEP_RESEARCH_SECRETS_FILE": str(cwd / "no-secrets.toml")}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(cwd)
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    root.handlers.clear()  # as in a fresh process: main() installs its own one-line handler
    out, err = io.StringIO(), io.StringIO()
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse's usage errors
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        root.handlers[:], root.level = handlers, level  # back to pytest's own handlers
    return subprocess.CompletedProcess(["research", *args], code, out.getvalue(), err.getvalue())
