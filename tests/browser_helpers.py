"""Helpers for the browser tests: a real `streamlit run` on a free port and headless Chromium.

The dashboard runs as a child process in its own process group (so stopping it also stops any
child), with the database and secrets file in a temporary folder and the provider base URLs
pointed at the local stand-in server. It is `python -m streamlit run app.py`, started warm
(tests/warm_python.py): a fork of a server that has imported Streamlit and the dashboard's
modules once per test process. Measured: a cold server spent 2.1 CPU-s up to its first page,
1.5 of them importing; a warm one 0.65 (the imports, 1.4 CPU-s, are paid once per process),
and the suite starts about ten. Chromium is Debian's build (see CHROMIUM), driven by the
Playwright Python package (Playwright cannot download its own browsers here).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.warm_python import WarmProcess, WarmPython

ROOT = Path(__file__).resolve().parent.parent
# Debian's headless build of Chromium (package `chromium-headless-shell`, from the same source
# and version as `chromium`), which is also what Playwright itself drives for headless tests.
# It draws the same pages with about 40 % less CPU than `chromium --headless=new` (two loads
# of the Run page: 3.4 against 5.8 CPU-s over all its processes), and Chromium was a fifth of
# the suite's CPU. BROWSER_TESTS_CHROMIUM picks another build, such as the full browser,
# `/usr/bin/chromium` (scripts/setup.sh --dev installs both).
HEADLESS_SHELL = "/usr/bin/chromium-headless-shell"
CHROMIUM = os.environ.get("BROWSER_TESTS_CHROMIUM") or (
    HEADLESS_SHELL if os.path.exists(HEADLESS_SHELL) else "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# Settings from the outer environment that would change what the dashboard does.
_SCRUBBED_PREFIXES = ("DEEP_RESEARCH_", "OPENAI_", "GEMINI_", "GOOGLE_API", "TAVILY_", "SEMANTIC_SCHOLAR_",
                      "ARXIV_", "STREAMLIT_")
ARTIFACTS = Path(os.environ.get("BROWSER_ARTIFACTS") or ROOT / "test-artifacts" / "browser")


# What a dashboard imports by its first page: Streamlit's server, pandas and plotly, and our
# modules (the pages import them; app.py runs the preflight check).
DASHBOARD_PRELOAD = (
    "streamlit.web.cli", "streamlit.web.bootstrap", "pandas", "plotly.graph_objects",
    "research.phases.start.preflight", "research.export.run_document",
    *(f"dashboard.{p.stem}" for p in sorted((ROOT / "dashboard").glob("*.py")) if p.stem != "__init__"),
)
# `python -m streamlit ARGS` in a warm child. PYTHONFAULTHANDLER is read when an interpreter
# starts, which for a fork was long before: the child turns the handler on itself.
STREAMLIT_MAIN = """
import faulthandler, runpy, sys
faulthandler.enable()
sys.argv = ["streamlit", *sys.argv[1:]]
runpy.run_module("streamlit", run_name="__main__", alter_sys=True)
"""
_starter: WarmPython | None = None
_starter_lock = threading.Lock()


def dashboard_starter() -> WarmPython:
    """This test process's fork server for dashboards, started on first use and ended at exit."""
    global _starter
    with _starter_lock:
        if _starter is None:
            _starter = WarmPython(preload=DASHBOARD_PRELOAD, warm_code="")
            atexit.register(_starter.close)
        return _starter


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def clean_environ(extra: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(_SCRUBBED_PREFIXES)}
    env.update(extra)
    return env


@dataclass
class StreamlitServer:
    """`streamlit run app.py` on 127.0.0.1:<free port>; use as a context manager."""

    env: Mapping[str, str]
    log_path: Path
    port: int = field(default_factory=free_port)
    startup_timeout_s: float = 60.0
    process: WarmProcess | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> StreamlitServer:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        args = ["run", "app.py",
                "--server.headless", "true", "--server.address", "127.0.0.1",
                "--server.port", str(self.port), "--browser.gatherUsageStats", "false",
                "--server.fileWatcherType", "none", "--server.runOnSave", "false"]
        # Faulthandler (STREAMLIT_MAIN): a crash, or the SIGABRT `diagnose` sends, writes every
        # thread's stack to the log, so a dashboard that died or stopped answering says where.
        self.process = dashboard_starter().spawn(
            ["-c", STREAMLIT_MAIN, *args], env=clean_environ(self.env), cwd=ROOT,
            stdout=self.log_path, stderr=self.log_path)
        self._wait_healthy()
        return self

    def _wait_healthy(self) -> None:
        assert self.process is not None
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"streamlit exited with {self.process.returncode}:\n{self.log()}")
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"streamlit did not become healthy in {self.startup_timeout_s:.0f} s:\n{self.log()}")

    def _status(self) -> list[str]:
        """Is the server alive, and does it answer its health check (and how fast)?"""
        proc = self.process
        if proc is None:
            return ["streamlit: not started"]
        lines = [f"streamlit pid {proc.pid}: " + ("running" if proc.poll() is None
                                                   else f"exited with {proc.returncode}")]
        started = time.monotonic()
        try:
            with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=10) as resp:
                lines.append(f"health: HTTP {resp.status} in {time.monotonic() - started:.1f} s")
        except (urllib.error.URLError, OSError) as exc:
            lines.append(f"health: {exc!r} after {time.monotonic() - started:.1f} s")
        return lines

    def alive(self) -> bool:
        """False once stopped, or after `diagnose` (a shared server is then started again)."""
        return self.process is not None and self.process.poll() is None

    def diagnose(self) -> str:
        """After a failed test: is the server alive, does it answer, and (stopping it with
        SIGABRT) what every thread was doing; the log's tail carries the stacks."""
        lines = self._status()
        proc = self.process
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, signal.SIGABRT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10)
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            text = ""
        kept = [line for line in text.splitlines() if not line.startswith("Extension modules:")]
        return "\n".join([*lines, "log tail:", "\n".join(kept)[-30_000:]])

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-5000:]
        except OSError:
            return ""

    def stop(self) -> None:
        """SIGTERM the whole process group, then SIGKILL it if it does not go."""
        proc, self.process = self.process, None
        if proc is None or proc.poll() is not None:
            return
        for sig, wait_s in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                proc.wait(wait_s)
                return
            except subprocess.TimeoutExpired:
                continue

    def __enter__(self) -> StreamlitServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class PageWatch:
    """Everything a page did that a test may want to refuse: dialogs, requests, script errors."""

    origin: str
    dialogs: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    connection: list[str] = field(default_factory=list)  # websocket and console trouble, timed

    def attach(self, page: Any) -> None:
        started = time.monotonic()

        def note(text: str) -> None:
            self.connection.append(f"{time.monotonic() - started:6.1f} s {text}"[:300])

        def on_websocket(ws: Any) -> None:
            note(f"websocket open {ws.url}")
            ws.on("close", lambda _ws: note("websocket closed"))
            ws.on("socketerror", lambda error: note(f"websocket error {error}"))

        page.on("websocket", on_websocket)
        page.on("console", lambda msg: msg.type in ("error", "warning") and note(
            f"console {msg.type}: {msg.text}"))
        page.on("requestfailed", lambda request: note(
            f"request failed {request.url} {request.failure}"))
        def on_dialog(dialog: Any) -> None:
            self.dialogs.append(f"{dialog.type}: {dialog.message}")
            dialog.dismiss()

        page.on("dialog", on_dialog)
        page.on("request", lambda request: self.requests.append(request.url))
        page.on("pageerror", lambda error: self.page_errors.append(str(error)))

    def foreign_requests(self) -> list[str]:
        """Requests to anything but the dashboard's own origin (data: and blob: URLs are local)."""
        own = urlsplit(self.origin)
        foreign = []
        for url in self.requests:
            parts = urlsplit(url)
            if parts.scheme in ("data", "blob"):
                continue
            if parts.scheme in ("http", "https", "ws", "wss") and parts.hostname == own.hostname \
                    and parts.port == own.port:
                continue
            foreign.append(url)
        return foreign


# Run in the page: every on* attribute, javascript: link and script that came from a payload.
DOM_AUDIT_JS = """
(marker) => {
  const found = [];
  const roots = [document];
  for (const el of document.querySelectorAll('*')) { if (el.shadowRoot) roots.push(el.shadowRoot); }
  for (const root of roots) {
    for (const el of root.querySelectorAll('*')) {
      for (const attr of el.attributes) {
        const name = attr.name.toLowerCase();
        const value = attr.value || '';
        if (name.startsWith('on') && (value.includes(marker) || value.includes('alert'))) {
          found.push(`${el.tagName.toLowerCase()}[${name}=${value}]`);
        }
        if ((name === 'href' || name === 'src' || name === 'xlink:href' || name === 'action')
            && /^\\s*javascript:/i.test(value)) {
          found.push(`${el.tagName.toLowerCase()}[${name}=${value}]`);
        }
        if (name === 'src' && value.includes('tracker.example')) {
          found.push(`${el.tagName.toLowerCase()}[src=${value}]`);
        }
      }
      if (el.tagName.toLowerCase() === 'script') {
        const text = (el.textContent || '') + ' ' + (el.getAttribute('src') || '');
        if (text.includes(marker) || text.includes('alert(')) found.push(`script: ${text.slice(0, 120)}`);
      }
    }
  }
  return found;
}
"""


def wait_idle(page: Any, timeout_ms: float = 30_000) -> None:
    """Wait until Streamlit is connected and has finished the current script run.

    Checked every 100 ms rather than on every animation frame (Playwright's default), which
    made the renderer draw frames all through the wait for nothing."""
    page.wait_for_function(
        """() => {
            const app = document.querySelector('[data-testid="stApp"]');
            return app && app.dataset.testScriptState === 'notRunning'
                && app.dataset.testConnectionState === 'CONNECTED';
        }""",
        timeout=timeout_ms,
        polling=100,
    )
