"""Shared fixtures: the local stand-in server, a temporary database path, and research runs
(`runs`: in-process fakes; `http_runs`: real HTTP through the real SDKs; see tests/runs.py)."""

from __future__ import annotations

import compileall
import functools
import gc
import os
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from research.core.errors import raise_unexpected
from research.llm.pacing import forget_pacers
from tests.browser_fixtures import (  # noqa: F401 - fixtures (browser tests)
    _shared_dashboard,
    browser,
    dashboard_env,
    shared_dashboard,
    stop_shared_dashboard,
)
from tests.cli_helpers import RunCli, cli_in_process
from tests.pg_server import (  # noqa: F401 - fixtures (PostgreSQL)
    db_target,
    pg_server,
    pg_url,
    stop_job_engine,
)
from tests.runs import Runner
from tests.standin import StandinServer
from tests.store_files import migrated_copy

ROOT = Path(__file__).resolve().parent.parent
# A programming error inside one unit of work (a section, a page's scoring, a claim's check)
# costs only that piece in a real run; in the tests it is raised, so the test that met it fails.
raise_unexpected()
# pytest rewrites the asserts of every test module on import and caches the result beside it,
# unless bytecode writing is off (PYTHONDONTWRITEBYTECODE): then each xdist worker rewrites all
# ~140 test modules again, about a quarter of its collection time. The suite writes them.
sys.dont_write_bytecode = False
# The project's own code, compiled once before any test process starts (see pytest_configure).
_COMPILED = ("research", "storage", "dashboard", "app_pages", "tests", "bench", "app.py")


def pytest_configure(config: pytest.Config) -> None:
    """Write the project's bytecode once, in the controller, before the xdist workers start.

    The suite starts about a hundred Python processes (xdist workers, `python -m research`
    children, workers, dashboards, sandboxed renderers) that all import the engine; where
    PYTHONDONTWRITEBYTECODE is set (the sandboxed renderers always set it), none of them writes .pyc files,
    so each would compile the same ~150 modules from source again. `compileall` writes them
    regardless (up-to-date files are skipped), and every process then only reads them.
    Every test process, controller and workers alike, also collects young garbage less often.
    """
    _collect_young_garbage_less_often()
    if hasattr(config, "workerinput"):  # an xdist worker: the controller has done it
        return
    _take_ctrl_c_as_a_terminal_would()
    for name in _COMPILED:
        path = ROOT / name
        if path.is_dir():
            compileall.compile_dir(path, quiet=2, workers=1)
        elif path.exists():
            compileall.compile_file(path, quiet=2)


def _collect_young_garbage_less_often() -> None:
    """Run the garbage collector's young passes after 10,000 new objects instead of 700.

    A test process allocates fast (runs, SDK clients, Streamlit's AppTest), and with Python's
    default thresholds (700, 10, 10) its collector ran some 2,300 young passes and 25 full ones
    over 95 engine tests: 4.2-5.5 of 55-60 CPU-s. With (10,000, 20, 20): 3.2-3.4 CPU-s, the
    same tests passing. Reference counting still frees almost everything at once; only cycles
    wait a little longer."""
    gc.set_threshold(10_000, 20, 20)


def _take_ctrl_c_as_a_terminal_would() -> None:
    """Give Ctrl-C back its usual meaning when the suite was started with it ignored.

    A shell starts a command it runs in the background (`./test.sh &`, nohup, some CI
    runners) with SIGINT ignored, and an ignored signal stays ignored in every process
    started from there: the tests' `python -m research` children then never see the Ctrl-C
    the Ctrl-C tests send (a quick run finished with status 0), and the team demo's shell
    cannot trap it. Set back here, before the xdist workers start, every test process and
    child starts as it would from a terminal."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """After a test's fixtures are torn down: stop what the next tests do not need.

    The shared dashboard stops once the browser tests are done (tests/browser_fixtures.py).
    The job engine a dashboard or durable-jobs test launched in this process (DBOS, one per
    process) stops when the next test is in another file, after this test's fixtures have
    cancelled what it left queued: idle, it polls its database about four times a second (about
    0.02 CPU-s a second, 0.04 on PostgreSQL) for the rest of the session. A later file that
    needs it launches it again (about 0.2 CPU-s). After the session's last test it stops too;
    if it ran on the session's PostgreSQL server, that server's fixture stopped it first
    (tests/pg_server.py), after the test's own fixtures were done with it."""
    try:
        return (yield)
    finally:
        stop_shared_dashboard(nextitem)
        if nextitem is None or nextitem.path != item.path:
            stop_job_engine()
            _freeze_survivors()


def pytest_collection_finish(session: pytest.Session) -> None:
    _freeze_survivors()


def _freeze_survivors() -> None:
    """Keep what outlives a test file out of the garbage collector's full passes.

    A test process soon holds some 800,000 long-lived objects (every test module, Streamlit,
    pandas, plotly, the SDKs, SQLAlchemy, each imported once and kept), and each full pass
    walked all of them again: about 0.3 CPU-s, some twenty times per process. After
    collection and at each change of test file, what is still alive is moved to the
    generation the collector no longer scans (`gc.freeze`); reference counting still frees
    it, and what the next tests create is collected as before."""
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True, scope="session")
def _streamlit_work_done_once() -> Iterator[None]:
    """Work Streamlit's AppTest repeats for nothing, done once per test process instead.

    Each AppTest scans every installed package's metadata for v2 components (about 0.3 CPU-s,
    over a hundred times a session), and each script run compiles app.py and its page again
    (with Streamlit's "magic"), where a real server compiles a script once and reuses it. The
    packages cannot change while the tests run, and a script is compiled again whenever its
    text differs. The patches name what they replace: if Streamlit moves it, this fails loudly."""
    from streamlit.components.v2 import manifest_scanner
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(manifest_scanner, "scan_component_manifests",
                      functools.cache(manifest_scanner.scan_component_manifests))
        patch.setattr(ScriptCache, "get_bytecode", _compiled_once(ScriptCache.get_bytecode))
        yield


def _compiled_once(get_bytecode: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    """`ScriptCache.get_bytecode` shared by every ScriptCache, keyed by the script's text."""
    compiled: dict[tuple[str, bytes, bool], Any] = {}

    def cached(cache: Any, script_path: str) -> Any:
        from streamlit import config

        path = os.path.abspath(script_path)
        key = (path, Path(path).read_bytes(), bool(config.get_option("runner.magicEnabled")))
        if key not in compiled:
            compiled[key] = get_bytecode(cache, script_path)
        return compiled[key]

    return cached


@pytest.fixture(autouse=True)
def _fresh_search_pace() -> None:
    """Each test starts with fresh search pacers (research.search.pacing), as a new process
    would: no hold left by another test's 429."""
    from research.search import pacing

    pacing.forget()


@pytest.fixture(scope="session")
def standin() -> Iterator[StandinServer]:
    """One stand-in server for the whole test session (reset it per test via standin_env)."""
    server = StandinServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def standin_env(standin: StandinServer) -> dict[str, str]:
    """A clean stand-in (no faults, no delay, empty request log) and the env pointing at it;
    no account limits learned from an earlier test (research.llm.pacing). arXiv's and Semantic
    Scholar's pace is off (tests/test_search_pacing.py turns it on): at 3 s a request, which
    academic results a run gets would depend on timing."""
    standin.reset()
    forget_pacers()
    return {**standin.env(), "DEEP_RESEARCH_SEARCH_PACE": "0"}


@pytest.fixture
def tmp_db(tmp_path: Path) -> Path:
    """Path for a fresh SQLite file (not created yet)."""
    return tmp_path / "research.sqlite3"


def _runner(standin: StandinServer, env: dict[str, str], db: Path, *, fakes: bool) -> Iterator[Runner]:
    runner = Runner(standin, env, migrated_copy(db), fakes=fakes)
    try:
        yield runner
    finally:
        runner.close()


@pytest.fixture
def runs(standin: StandinServer, standin_env: dict[str, str], tmp_db: Path) -> Iterator[Runner]:
    """Research runs through the in-process fakes (tests/fakes.py): `store, run_id = runs(...)`."""
    yield from _runner(standin, standin_env, tmp_db, fakes=True)


@pytest.fixture
def http_runs(standin: StandinServer, standin_env: dict[str, str], tmp_db: Path) -> Iterator[Runner]:
    """Research runs over real HTTP through the real SDKs to the stand-in."""
    yield from _runner(standin, standin_env, tmp_db, fakes=False)


@pytest.fixture
def run_cli(monkeypatch: pytest.MonkeyPatch) -> RunCli:
    """`python -m research` in-process (tests/cli_helpers.py): `run_cli(args, env, cwd)` gives
    the exit code, stdout and stderr a subprocess would."""
    return lambda args, env, cwd: cli_in_process(args, env, cwd, monkeypatch)
