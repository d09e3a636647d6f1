"""The repository's layout: the research runs sit beside ``bench/``, out of the installed package.

``research/`` imports rollgym; rollgym never imports ``research`` (import-linter's ``research`` contract sees
the import statements; this also catches a module named in a string, as ``importlib.import_module`` takes it),
and the wheel's package discovery does not pick it up.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tomllib

REPO = Path(__file__).resolve().parents[1]


def _names_research(node: ast.AST) -> bool:
    def is_research(name: str | None) -> bool:
        return bool(name) and (name == "research" or name.startswith("research."))  # type: ignore[union-attr]

    if isinstance(node, ast.Import):
        return any(is_research(alias.name) for alias in node.names)
    if isinstance(node, ast.ImportFrom):
        return node.level == 0 and is_research(node.module)
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return called in {"import_module", "__import__", "find_spec"} and isinstance(node.args[0].value, str) \
            and is_research(node.args[0].value)
    return False


def test_rollgym_never_imports_the_research_tree() -> None:
    offenders = []
    for path in sorted((REPO / "rollgym").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        offenders += [f"{path.relative_to(REPO)}:{node.lineno}" for node in ast.walk(tree) if _names_research(node)]
    assert not offenders, f"rollgym imports research/ (which is not installed): {offenders}"


def test_the_check_sees_each_way_of_importing_research() -> None:
    for source in ("import research", "import research.runner as r", "from research.cli import main",
                   "importlib.import_module('research.erils')", "__import__('research')"):
        assert any(_names_research(n) for n in ast.walk(ast.parse(source))), source
    for source in ("import researchers", "from .research import x", "from rollgym.research import x",
                   "importlib.import_module('rollgym.train')"):
        assert not any(_names_research(n) for n in ast.walk(ast.parse(source))), source


def test_the_wheel_does_not_contain_the_research_tree() -> None:
    from setuptools import find_packages

    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    find = config["tool"]["setuptools"]["packages"]["find"]
    packages = find_packages(where=str(REPO), include=find["include"], exclude=find.get("exclude", ()))
    assert "rollgym" in packages and "rollgym.train" in packages
    assert not [p for p in packages if p == "research" or p.startswith("research.")], packages
    assert not [p for p in packages if "experiments" in p.split(".")], packages
    assert (REPO / "research" / "__main__.py").is_file()  # still in the checkout, run as `python -m research`
