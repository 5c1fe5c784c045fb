"""The model seam's layout (issue 33, point 3): each layer a module small enough to read at
once, none importing another's private names, no two importing each other."""

from __future__ import annotations

import ast
from pathlib import Path

LLM = Path(__file__).resolve().parent.parent / "research" / "llm"
MAX_LINES = 500


def _imports(path: Path) -> list[tuple[str, str]]:
    """(module, name) for every `from research... import name` in `path`, nested ones too."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("research"):
            found.extend((node.module, alias.name) for alias in node.names)
    return found


def test_no_module_of_the_seam_is_over_500_lines() -> None:
    long = {p.name: n for p in LLM.glob("*.py") if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long


def test_no_module_imports_a_private_name_of_the_seam_or_from_it() -> None:
    research = LLM.parent
    private = [(str(p.relative_to(research)), module, name) for p in research.rglob("*.py")
               for module, name in _imports(p)
               if name.startswith("_") and (p.parent == LLM or module.startswith("research.llm"))]
    assert not private


def test_no_two_modules_of_the_seam_import_each_other() -> None:
    uses = {f"research.llm.{p.stem}": {module for module, _ in _imports(p)}
            for p in LLM.glob("*.py") if p.stem != "__init__"}
    both = sorted((a, b) for a in uses for b in uses[a] if a < b and a in uses.get(b, ()))
    assert not both
