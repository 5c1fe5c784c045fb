"""The tree's rules (issue 33): no two modules import each other, and no module imports another
module's private (underscore) names. Read from the source with `ast`, so a lazy import inside a
function counts as much as one at the top."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("research", "storage", "dashboard")


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> tuple[set[str], list[str]]:
    """The modules of ours that `name` imports, and the private names it takes from others."""
    deps: set[str] = set()
    private: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            deps.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                if f"{node.module}.{alias.name}" in modules:
                    deps.add(f"{node.module}.{alias.name}")
                elif node.module in modules:
                    deps.add(node.module)
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        private.append(f"{name} takes {alias.name} from {node.module}")
    deps.discard(name)
    return deps, private


def _graph() -> tuple[dict[str, set[str]], list[str]]:
    modules = _modules()
    edges: dict[str, set[str]] = {}
    private: list[str] = []
    for name, path in modules.items():
        edges[name], taken = _imports(name, path, modules)
        private += taken
    return edges, private


def test_no_two_modules_import_each_other():
    edges, _ = _graph()
    pairs = sorted(f"{a} <-> {b}" for a, deps in edges.items() for b in deps
                   if a < b and a in edges.get(b, set()))
    assert pairs == []


def test_no_module_imports_another_modules_private_names():
    _, private = _graph()
    assert sorted(private) == []


def test_the_checks_see_a_cycle_and_a_private_import(tmp_path, monkeypatch):
    """The scan itself: a planted pair of modules is caught by both rules."""
    package = tmp_path / "research"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from research.b import _hidden\n")
    (package / "b.py").write_text("def f():\n    from research import a\n_hidden = 1\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGES", ("research",))
    edges, private = _graph()
    assert "research.b" in edges["research.a"] and "research.a" in edges["research.b"]
    assert private == ["research.a takes _hidden from research.b"]


def test_no_module_of_the_product_is_over_500_lines():
    """Each module small enough to read at once (issue 33): the engine, the store, the
    dashboard's logic and its pages."""
    paths = [ROOT / "app.py", *(ROOT / "app_pages").glob("*.py")]
    paths += [p for package in PACKAGES for p in (ROOT / package).rglob("*.py")]
    long = {str(p.relative_to(ROOT)): n for p in paths
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 500}
    assert long == {}
