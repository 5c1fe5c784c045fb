"""Every module reaches the store through its public methods (issue 33, point 4): nothing in
the application, inside `storage/` or outside it, calls or reads a `_private` name of the
`Store` on anything but `self` (the Store's own table-group classes). Tests may still open
it up for surgery; the application may not.

The scan is deliberately plain: an attribute access `X._name` is a use of the Store's private
`_name` when `_name` is one of the Store's private names and either `X` names a store (its
source text contains "store": `store`, `self.store`, `ctx.store`, `self._store`...) or no
other class in the application has a private name `_name` (so `source._redact(...)` is caught
whatever the variable is called, while `self._chat._clean(...)` of a chat client is not)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from storage import Store

ROOT = Path(__file__).resolve().parent.parent
APPLICATION = ("research", "dashboard", "pages", "storage", "bench", "scripts")
STORE_CLASSES = frozenset(cls.__name__ for cls in Store.__mro__)


def application_files() -> list[Path]:
    files = [ROOT / "app.py"] if (ROOT / "app.py").exists() else []
    for folder in APPLICATION:
        files += sorted((ROOT / folder).rglob("*.py"))
    return [f for f in files if "alembic" not in f.parts or f.name != "env.py"]


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def store_private_names(tmp_path: Path) -> set[str]:
    """The Store's private methods and attributes (an open store's instance ones included)."""
    names = {name for name in dir(Store) if _private(name)}
    with Store(tmp_path / "names.db") as store:
        names |= {name for name in vars(store) if _private(name)}
    return names


def others_private_names(trees: list[ast.Module]) -> set[str]:
    """Private names that classes other than the Store's own define (methods, `self._x = `)."""
    found: set[str] = set()
    for tree in trees:
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            if cls.name in STORE_CLASSES:
                continue
            for node in ast.walk(cls):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _private(node.name):
                    found.add(node.name)
                elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                      and _private(node.attr)):
                    found.add(node.attr)
    return found


def private_uses(tree: ast.Module, private: set[str], shared: set[str]) -> Iterator[tuple[int, str]]:
    """(line, expression) of each use of the Store's private names on something not `self`."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or node.attr not in private:
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue
        receiver = ast.unparse(node.value)
        if "store" in receiver.lower() or node.attr not in shared:
            yield node.lineno, f"{receiver}.{node.attr}"


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def test_no_module_uses_a_private_name_of_the_store(tmp_path: Path) -> None:
    files = application_files()
    assert any(f.parts[-2:] == ("storage", "documents.py") for f in files)
    trees = {path: _parse(path) for path in files}
    private = store_private_names(tmp_path)
    shared = others_private_names(list(trees.values()))
    found = [f"{path.relative_to(ROOT)}:{line}: {use}" for path, tree in trees.items()
             for line, use in private_uses(tree, private, shared)]
    assert found == [], "use the Store's public methods instead:\n" + "\n".join(found)


def test_the_scan_finds_private_uses_under_any_name_and_leaves_other_classes_alone(
        tmp_path: Path) -> None:
    private = store_private_names(tmp_path)
    assert {"_database", "_redact", "_clean"} <= private
    code = ast.parse(
        "def f(store, source, ctx, self):\n"
        "    store._database.read()\n"          # a store by name
        "    source._redact('x')\n"             # any name: no other class has _redact
        "    ctx.store._clean('x')\n"           # a shared name, but on a store
        "    self._chat._clean('x')\n"          # a shared name on something else: fine
        "    self._redact('x')\n")              # the Store's own method on itself: fine
    uses = sorted(use for _, use in private_uses(code, private, shared={"_clean"}))
    assert uses == ["ctx.store._clean", "source._redact", "store._database"]
