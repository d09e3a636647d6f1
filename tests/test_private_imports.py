"""No module imports another module's private name (``from rollgym.x import _name``).

A leading underscore says "this module's own business"; a name another module needs is public
(no underscore, a docstring, a place in the docs). Dunder names (``__version__``) are public.
"""

from __future__ import annotations

import ast
from pathlib import Path

import rollgym

ROOT = Path(rollgym.__file__).resolve().parent


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_module(node: ast.ImportFrom, here: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = here.split(".") if is_package else here.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def private_imports(root: Path = ROOT) -> list[str]:
    """``path:line: from module import _name`` for every private name imported from another rollgym module."""
    found = []
    for path in sorted(root.rglob("*.py")):
        here = _module_name(path, root)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            module = _imported_module(node, here, path.name == "__init__.py")
            if not (module == "rollgym" or module.startswith("rollgym.")) or module == here:
                continue
            for alias in node.names:
                name = alias.name
                if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno}: from {module} import {name}")
    return found


def test_the_finder_sees_a_private_import(tmp_path: Path) -> None:
    package = tmp_path / "rollgym"
    (package / "a").mkdir(parents=True)
    (package / "__init__.py").write_text("from rollgym import __version__\n")
    (package / "a" / "__init__.py").write_text("")
    (package / "a" / "b.py").write_text("from rollgym.a.c import _hidden, shown\nfrom .c import _also\n")
    (package / "a" / "c.py").write_text("_hidden = shown = _also = 1\n")
    assert private_imports(package) == ["rollgym/a/b.py:1: from rollgym.a.c import _hidden",
                                        "rollgym/a/b.py:2: from rollgym.a.c import _also"]


def test_no_module_of_rollout_imports_a_private_name() -> None:
    offenders = [line for line in private_imports() if line.startswith("rollgym/rollout/")
                 or " from rollgym.rollout." in line]
    assert offenders == []


def test_no_module_of_rollgym_imports_another_modules_private_name() -> None:
    assert private_imports() == []


def test_the_research_runs_import_no_private_name_of_rollgym() -> None:
    research = ROOT.parent / "research"
    found = []
    for path in sorted(research.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        found += [f"{path.name}:{node.lineno}: {node.module}.{alias.name}" for node in ast.walk(tree)
                  if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rollgym")
                  for alias in node.names if alias.name.startswith("_") and not alias.name.endswith("__")]
    assert found == []
