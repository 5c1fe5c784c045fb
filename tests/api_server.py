"""`python -m research serve` as a real subprocess on 127.0.0.1, for the API tests (forked
warm: tests/warm_python.py).

`ApiServer.start(env, db)` picks a free port, starts the server with only `env` of our
variables (as tests/cli_helpers.py does for the CLI) and waits until /v1/health answers;
`token(person)` makes a token with `python -m research token create` (the CLI people use).
"""

from __future__ import annotations

import functools
import os
import signal
import socket
import ssl
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.cli_helpers import ROOT
from tests.warm_python import WarmProcess, shared_warm_python

_OURS = ("DEEP_RESEARCH_", "OPENAI_", "GEMINI_", "TAVILY_", "SEMANTIC_SCHOLAR_")
START_WITHIN_S = 90.0  # importing the engine on a busy machine; not a timing assertion


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def process_env(env: dict[str, str], folder: Path) -> dict[str, str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(_OURS)}
    full.update(env)
    full["PYTHONPATH"] = str(ROOT)
    full["DEEP_RESEARCH_SECRETS_FILE"] = str(folder / "no-secrets.toml")
    return full


def research(args: list[str], env: dict[str, str], folder: Path,
             timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python -m research ARGS` to its end, forked warm (tests/warm_python.py: a process of
    its own without importing the engine again)."""
    out, err = folder / "research.out", folder / "research.err"
    proc = shared_warm_python().spawn(["-m", "research", *args], process_env(env, folder),
                                      folder, out, err)
    try:
        code = proc.wait(timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
    return subprocess.CompletedProcess(["-m", "research", *args], code, out.read_text(),
                                       err.read_text())


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every test client (the server speaks plain HTTP; httpx would still
    build a context per client, loading the CA bundle: about 25 ms of CPU each)."""
    return ssl.create_default_context()


@dataclass
class Token:
    text: str
    secret: str
    id: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.text}"}


@dataclass
class ApiServer:
    env: dict[str, str]
    folder: Path
    port: int = 0
    process: WarmProcess | None = None
    log: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @classmethod
    def start(cls, env: dict[str, str], folder: Path, *args: str) -> ApiServer:
        server = cls(env, folder, free_port())
        server.process = shared_warm_python().spawn(
            ["-m", "research", "serve", "--port", str(server.port), *args],
            process_env(env, folder), folder, folder / f"serve-{server.port}.out",
            folder / f"serve-{server.port}.log")
        deadline = time.monotonic() + START_WITHIN_S
        with server.client(timeout=2) as probe:  # one client: each new one builds a TLS context
            while time.monotonic() < deadline:
                if server.process.poll() is not None:
                    raise RuntimeError("the API server stopped: " + server.stderr())
                try:
                    if probe.get("/v1/health").status_code == 200:
                        return server
                except httpx.HTTPError:
                    time.sleep(0.2)
        server.stop()
        raise RuntimeError("the API server did not answer: " + server.stderr())

    def stderr(self) -> str:
        return (self.folder / f"serve-{self.port}.log").read_text(errors="replace")

    def token(self, person: str | None, name: str = "") -> Token:
        args = ["token", "create", "--name", name]
        if person:
            args += ["--owner", person]
        made = research(args, self.env, self.folder)
        assert made.returncode == 0, made.stderr
        lines = dict(line.split(": ", 1) for line in made.stdout.strip().splitlines())
        return Token(lines["token"], lines["signing secret"], lines["id"])

    def quick_token(self, person: str | None) -> Token:
        """A token made in this process (no second engine import): for tests about other
        things than the token command."""
        from research.api.tokens import create_token
        from storage import Store

        db = self.env["DEEP_RESEARCH_DB"]
        store = Store(db)
        try:
            made = create_token(store, self.env, Path(db).parent, person=person)
        finally:
            store.close()
        return Token(made.text, made.signing_secret, made.token.id)

    def client(self, token: Token | None = None, timeout: float = 60) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=token.headers if token else {},
                            timeout=timeout, verify=_tls())

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
