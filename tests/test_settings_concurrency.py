"""Settings saved at the same moment (threads of one server, or separate processes) lose nothing."""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path

from dashboard.settings_files import load_defaults, read_secrets, save_defaults, save_secrets
from research.core.constants import CONSTANTS, DEFAULTS

SAVES = 80


def _save_secret(path: str, i: int) -> None:
    save_secrets({f"SETTING_{i:03d}": f"value-{i}"}, Path(path))


def test_many_concurrent_secret_saves_keep_every_change(tmp_path: Path) -> None:
    path = tmp_path / "secrets.toml"
    save_secrets({"OPENAI_API_KEY": "sk-existing-key-000000"}, path)
    barrier = threading.Barrier(SAVES // 2)

    def save(i: int) -> None:
        barrier.wait()
        _save_secret(str(path), i)

    # Processes first: a fork while a thread holds the lock would copy its open lock file.
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_save_secret, args=(str(path), i)) for i in range(SAVES // 2, SAVES)]
    for p in procs:
        p.start()
    threads = [threading.Thread(target=save, args=(i,)) for i in range(SAVES // 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for p in procs:
        p.join()
        assert p.exitcode == 0
    data = read_secrets(path)
    assert {f"SETTING_{i:03d}" for i in range(SAVES)} <= set(data)
    assert data["OPENAI_API_KEY"] == "sk-existing-key-000000"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".secrets-")]  # no temp left


def test_concurrent_default_saves_from_stale_pages_keep_each_change(tmp_path: Path) -> None:
    """Each save comes from a page that showed the built-in defaults and changed one setting."""
    path = tmp_path / "defaults.json"
    numeric = [n for n, c in CONSTANTS.items() if c.kind is not bool]
    wanted = {n: CONSTANTS[n].maximum if CONSTANTS[n].kind is int else 0.9 for n in numeric}
    shown = dict(DEFAULTS)
    barrier = threading.Barrier(len(numeric) * 4)

    def save(name: str) -> None:
        page = dict(shown)
        page[name] = wanted[name]
        barrier.wait()
        save_defaults(page, path, base=shown)

    threads = [threading.Thread(target=save, args=(n,)) for n in numeric * 4]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert load_defaults(path) == {n: v for n, v in wanted.items() if v != DEFAULTS[n]}


def test_reset_without_a_base_writes_the_whole_state(tmp_path: Path) -> None:
    path = tmp_path / "defaults.json"
    save_defaults({"SUBTOPIC_COUNT": 8}, path)
    save_defaults({"REVIEW_CYCLES": 1}, path)
    assert load_defaults(path) == {"SUBTOPIC_COUNT": 8, "REVIEW_CYCLES": 1}
    save_defaults(dict(DEFAULTS), path)
    assert load_defaults(path) == {}
