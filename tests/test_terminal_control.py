"""A model whose plan titles carry terminal escape sequences cannot drive the person's terminal,
nor put control characters into the exported report (CLI subprocess against the stand-in)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from research.core.prompts import strip_control
from tests.cli_helpers import RunCli
from tests.standin import brain

ESCAPES = ("\x1b]52;c;SGVsbG8gY2xpcGJvYXJk\x07", "\x1b[8m", "\x1b[2J\x1b[H", "\x9b31m", "\x07\x08\x7f")


def _is_control(c: str) -> bool:
    return (ord(c) < 32 and c not in "\t\n") or 0x7f <= ord(c) <= 0x9f


@pytest.fixture
def hostile_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    plain = brain._BUILDERS["ResearchPlan"]

    def plan(user: str) -> dict[str, Any]:
        answer = plain(user)
        for i, sub in enumerate(answer["subtopics"]):
            sub["title"] = ESCAPES[i % len(ESCAPES)] + sub["title"] + "\x1b[0m"
            sub["questions"] = [ESCAPES[0] + q for q in sub["questions"]]
        return answer

    monkeypatch.setitem(brain._BUILDERS, "ResearchPlan", plan)


@pytest.mark.usefixtures("hostile_plan")
def test_progress_lines_and_export_carry_no_control_characters(
    run_cli: RunCli, standin_env: dict[str, str], tmp_path: Path
) -> None:
    out = tmp_path / "report.md"
    result = run_cli(["How do heat pumps perform in cold climates?", "--preset", "quick",
                   "--sources", "5", "--out", str(out)],
                  {**standin_env, "DEEP_RESEARCH_DB": str(tmp_path / "t.db")}, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "%]" in result.stderr
    assert [hex(ord(c)) for c in result.stderr + result.stdout if _is_control(c)] == []
    report = out.read_text(encoding="utf-8")
    assert [hex(ord(c)) for c in report if _is_control(c)] == []
    assert "52;c;" not in report + result.stderr


def test_strip_control_removes_sequences_and_keeps_text() -> None:
    assert strip_control("\x1b]52;c;SGVsbG8=\x07Title") == "Title"
    assert strip_control("\x1b]0;window\x1b\\rest") == "rest"
    assert strip_control("\x1b[8mhidden\x1b[0m ok") == "hidden ok"
    assert strip_control("a\x9b31mb\x9d8;;http://x\x9cc") == "abc"
    assert strip_control("tab\tnl\n\x00\x7f\x85x\r\ny\rz") == "tab\tnl\nx\ny\nz"
    assert strip_control("ünïcödé ✓ €") == "ünïcödé ✓ €"
