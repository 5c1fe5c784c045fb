"""What a fresh process imports as it starts: the CLI, a store opening a current database, and
the PDF renderer's sandboxed child (forked from a starter that loads only the layout engine).

Every test, every worker and every `python -m research` pays these imports again, so the heavy
libraries load only on the path that needs them (Alembic when a migration is pending, an LLM
SDK when its provider is used, WeasyPrint in the renderer child). Each check runs the real
entry point in a new interpreter with Python's own import log (`PYTHONPROFILEIMPORTTIME`), so
it fails as soon as someone moves such an import back to the top of a module.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import research.untrusted.sandbox as sandbox
from research.export.pdf import render_pdf
from storage import Store
from tests.cli_helpers import cli

MIGRATIONS = {"alembic", "mako"}
ONLY_WHEN_USED = {"openai", "google.genai", "trafilatura", "lxml", "weasyprint", "pypdf",
                  "dbos", "streamlit", "docx", "openpyxl"}


def imported(import_log: str) -> set[str]:
    """Module names in the stderr of a process run with PYTHONPROFILEIMPORTTIME=1."""
    names = set()
    for line in import_log.splitlines():
        if line.startswith("import time:") and "imported package" not in line:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


@pytest.fixture(scope="module")
def cli_help(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    """`python -m research --help` in a fresh interpreter with its import log, once for the
    two tests that read it (a cold start costs about 1.5 CPU-s)."""
    return cli(["--help"], {"PYTHONPROFILEIMPORTTIME": "1"}, tmp_path_factory.mktemp("help"))


def test_the_import_log_is_read(cli_help: subprocess.CompletedProcess[str]) -> None:
    result = cli_help
    assert result.returncode == 0, result.stderr
    assert {"research.cli", "storage", "sqlalchemy", "argparse"} <= imported(result.stderr)


def test_the_cli_starts_without_alembic_or_a_library_only_some_runs_need(
        cli_help: subprocess.CompletedProcess[str]) -> None:
    result = cli_help
    assert result.returncode == 0, result.stderr
    assert imported(result.stderr) & (MIGRATIONS | ONLY_WHEN_USED) == set()


def test_opening_a_current_database_does_not_import_alembic(tmp_path: Path) -> None:
    db = tmp_path / "current.db"
    Store(db).close()  # made and migrated here, so the CLI below finds it current
    result = cli(["db", "upgrade", "--db", str(db)], {"PYTHONPROFILEIMPORTTIME": "1"}, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "already up to date" in result.stderr + result.stdout
    modules = imported(result.stderr)
    assert "storage.migrate" in modules
    assert modules & MIGRATIONS == set()


def test_a_new_database_is_still_built_by_alembic(tmp_path: Path) -> None:
    result = cli(["db", "upgrade", "--db", str(tmp_path / "new.db")],
                 {"PYTHONPROFILEIMPORTTIME": "1"}, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "alembic" in imported(result.stderr)


def test_the_pdf_renderer_child_loads_the_layout_engine_and_nothing_of_the_engine() -> None:
    sandbox.stop_starter()  # a starter of this test's own: it loads only what this test asks
    assert render_pdf("<h1>Report</h1><p>One claim [1].</p>").startswith(b"%PDF")
    answer = sandbox.run_child("tests.sandbox_targets:modules", b"",
                               sandbox.ChildLimits(timeout_s=60, memory_mb=1536))
    modules = set(answer["modules"])
    # The starter imported the renderer before it forked: the next child has WeasyPrint loaded.
    assert {"weasyprint", "research.export.weasy"} <= modules
    assert answer["research_init_ran"] is False  # research/__init__.py: the whole engine
    ours = {m for m in modules if m.split(".")[0] in ("research", "storage")}
    # the packages research.core and research.untrusted are docstrings only
    assert ours == {"research", "research.export", "research.export.weasy", "research.core",
                    "research.core.errors", "research.untrusted", "research.untrusted.sandbox"}
    heavy = {"sqlalchemy", "pydantic", "markdown_it", "nh3", "openai", "streamlit", "httpx"}
    assert modules & (heavy | MIGRATIONS) == set()
