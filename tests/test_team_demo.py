"""`scripts/team-demo.sh` (issue 18, point 7): PostgreSQL, two workers, two dashboards and nginx
with sticky sessions on 127.0.0.1; Ctrl-C stops every process and removes its temporary files.

The script runs as it would in a terminal, in its own process group, and Ctrl-C is SIGINT to
that group. PostgreSQL is started by `pg_ctl`, which detaches it into a session of its own, so
its processes are found by the demo's data directory on their command line. Skipped with the
reason where nginx or PostgreSQL is not installed, unless DEEP_RESEARCH_REQUIRE_POSTGRES=1.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from storage import Store
from tests.browser_helpers import clean_environ, free_port
from tests.crash_helpers import ONE_WORKER
from tests.warm_python import WarmPython, warm_python  # noqa: F401 - a fixture

QUESTION = "How do heat pumps perform in cold climates?"
# A short run: what is tested is where it runs (the demo's workers), not what it finds.
CLI_ARGS = ["--preset", "quick", "--subtopics", "3", "--sources", "5", "--reviews", "0"]
KEY_NAMES = ("OPENAI_API_KEY", "GEMINI_API_KEY", "TAVILY_API_KEY")

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "team-demo.sh"
START_TIMEOUT_S = 240.0  # two workers and two dashboards on a busy two-core machine
STOP_TIMEOUT_S = 40.0


def _require_binaries() -> None:
    missing = []
    if not (shutil.which("nginx") or os.path.exists("/usr/sbin/nginx")):
        missing.append("nginx")
    if not glob.glob("/usr/lib/postgresql/*/bin/initdb"):
        missing.append("PostgreSQL")
    if missing:
        reason = f"{' and '.join(missing)} not installed (scripts/setup.sh --dev installs them)"
        if os.environ.get("DEEP_RESEARCH_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"the team demo is required here but {reason}")
        pytest.skip(f"team demo skipped: {reason}")


def _alive(pid: int) -> bool:
    """A process that exists and is not a zombie waiting for its parent."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _demo_processes(pgid: int, demo_dir: str) -> dict[int, str]:
    """Every live process of the demo: its process group, and PostgreSQL by its data dir."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        try:
            in_group = os.getpgid(pid) == pgid
        except OSError:
            continue
        cmd = _cmdline(pid)
        if (in_group or demo_dir in cmd) and _alive(pid):
            found[pid] = cmd
    return found


def _get(url: str, cookie: str | None = None) -> tuple[int, dict[str, str]]:
    request = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    with urllib.request.urlopen(request, timeout=10) as resp:
        resp.read()
        return resp.status, {k.lower(): v for k, v in resp.headers.items()}


def _websocket_handshake(port: int) -> str:
    """The status line the proxy returns to a websocket upgrade on the dashboard's stream."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall((f"GET /_stcore/stream HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                      f"Origin: http://127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                      "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n").encode())
        return sock.recv(4096).decode(errors="replace").split("\r\n", 1)[0]


@pytest.fixture
def demo(standin_env: dict[str, str],
         tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """The demo, started as a person would, with the stand-in's keys in its environment."""
    _require_binaries()
    out = tmp_path / "demo.out"
    env = clean_environ({**standin_env, **ONE_WORKER, "DEEP_RESEARCH_SEARCH": "tavily",
                         "DEEP_RESEARCH_SECRETS_FILE": str(tmp_path / "no-secrets.toml"),
                         "DEEP_RESEARCH_DEMO_PORT": str(free_port())})
    with out.open("wb") as log:
        proc = subprocess.Popen(["bash", str(SCRIPT)], cwd=ROOT, env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield proc, out
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        for path in re.findall(r"in (/\S+dr-team-demo\.\w+)", out.read_text(errors="replace")):
            for pid in _demo_processes(proc.pid, path):  # a failed test leaves nothing running
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            shutil.rmtree(path, ignore_errors=True)


def _wait_for_address(proc: subprocess.Popen[bytes], out: Path) -> tuple[int, str]:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        text = out.read_text(errors="replace")
        address = re.search(r"open http://127\.0\.0\.1:(\d+)", text)
        folder = re.search(r"logs and data in (/\S+)", text)
        if address and folder:
            return int(address.group(1)), folder.group(1)
        assert proc.poll() is None, f"the demo stopped (status {proc.returncode}):\n{text[-3000:]}"
        time.sleep(0.5)
    raise AssertionError(f"the demo printed no address in {START_TIMEOUT_S:.0f} s:\n"
                         f"{out.read_text(errors='replace')[-3000:]}")


def _cli(python: WarmPython, args: list[str], env: dict[str, str], tmp_path: Path, name: str,
         timeout: float) -> tuple[int, str, str]:
    """`python -m research ARGS` run to its end: exit code, stdout, stderr."""
    proc = python.spawn(["-m", "research", *args], env, ROOT, tmp_path / f"{name}.out",
                        tmp_path / f"{name}.err")
    try:
        code = proc.wait(timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return code, (tmp_path / f"{name}.out").read_text(), (tmp_path / f"{name}.err").read_text()


def _research_through_the_demo(python: WarmPython, out: Path, standin_env: dict[str, str],
                               tmp_path: Path) -> str:
    """Queue a run from the command line printed by the demo (no key: the workers have them)
    and wait for its report; returns the database URL."""
    printed = re.search(r"DEEP_RESEARCH_DB=(postgresql://\S+)", out.read_text())
    assert printed, "the demo prints no command line for its database"
    db_url = printed.group(1)
    env = clean_environ({**{k: v for k, v in standin_env.items() if k not in KEY_NAMES},
                         "DEEP_RESEARCH_DB": db_url, "DEEP_RESEARCH_WORKERS": "external",
                         "DEEP_RESEARCH_SECRETS_FILE": str(tmp_path / "no-secrets.toml")})
    env["PYTHONPATH"] = str(ROOT)
    code, stdout, stderr = _cli(python, [QUESTION, *CLI_ARGS, "--detach"], env, tmp_path,
                                "detach", 120)
    assert code == 0, stderr
    run_id = stdout.strip().splitlines()[-1]
    report = tmp_path / "report.md"
    code, _, stderr = _cli(python, ["--wait", run_id, "--out", str(report)], env, tmp_path,
                           "wait", 300)
    assert code == 0, stderr[-3000:]
    assert "Executive summary" in report.read_text()
    return db_url


def _executors(db_url: str) -> set[int]:
    """The process ids of the workers that executed runs, from the engine's own records."""
    import sqlalchemy as sa

    engine = sa.create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as conn:
            ids = conn.execute(sa.text("SELECT executor_id FROM dbos.workflow_status "
                                       "WHERE name = 'research_run'")).scalars().all()
    finally:
        engine.dispose()
    return {int(i.rsplit("-", 2)[1]) for i in ids}


def test_team_demo_serves_through_nginx_runs_on_its_workers_and_ctrl_c_stops_everything(
    demo: tuple[subprocess.Popen[bytes], Path], standin_env: dict[str, str], tmp_path: Path,
    warm_python: WarmPython,  # noqa: F811 - the fixture
) -> None:
    proc, out = demo
    port, demo_dir = _wait_for_address(proc, out)
    base = f"http://127.0.0.1:{port}"
    assert _get(f"{base}/")[0] == 200
    assert _get(f"{base}/_stcore/health")[0] == 200
    assert _websocket_handshake(port).startswith("HTTP/1.1 101"), "no websocket through the proxy"

    # Sticky: one browser (its cookie) always reaches one dashboard; browsers spread over both.
    _, first = _get(f"{base}/")
    cookie = first["set-cookie"].split(";", 1)[0]
    assert cookie.startswith("dr_route=")
    assert {_get(f"{base}/_stcore/health", cookie)[1]["x-dashboard"] for _ in range(6)} == {
        first["x-dashboard"]}
    spread = {_get(f"{base}/_stcore/health", f"dr_route=browser-{n}")[1]["x-dashboard"]
              for n in range(24)}
    assert len(spread) == 2, spread

    running = _demo_processes(proc.pid, demo_dir)
    commands = list(running.values())
    assert sum("research worker" in c for c in commands) == 2, commands
    assert sum("streamlit run app.py" in c for c in commands) == 2, commands
    assert any(c.startswith("nginx: master") for c in commands), commands
    assert any("postgres" in c and demo_dir in c for c in commands), commands

    db_url = _research_through_the_demo(warm_python, out, standin_env, tmp_path)
    store = Store(db_url)
    try:
        assert [r.status for r in store.list_runs()] == ["completed"]
    finally:
        store.close()
    workers = {pid for pid, c in running.items() if "research worker" in c}
    assert _executors(db_url) and _executors(db_url) <= workers

    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in the terminal
    assert proc.wait(STOP_TIMEOUT_S) == 130
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(pid) for pid in running):
        time.sleep(0.2)
    assert not [cmd for pid, cmd in running.items() if _alive(pid)]
    assert not _demo_processes(proc.pid, demo_dir)
    assert not Path(demo_dir).exists()
