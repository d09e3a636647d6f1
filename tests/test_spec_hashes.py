"""Env ids are immutable: the code behind an id may not change without a ``-vN`` bump.

``spec_hashes.json`` pins the content hash of every registered id: a hash of the
id, its fixed arguments and every module its entry point imports (the import
closure, see :mod:`rollgym.core.spec_hash`). When the pin test fails, code that
an id runs changed. If tasks or scores can differ, register a new ``-vN`` id
(keep the old one); if they cannot (a pure refactor), re-pin with
``ROLLGYM_UPDATE_SPEC_HASHES=1 pytest tests/test_spec_hashes.py`` and say why in
the commit. A re-pin appends each id's old hash to ``rollgym/core/spec_lineage.json``,
so bundles recorded before the refactor still verify (their episodes are replayed on
the new code, so a refactor that did change behaviour still fails them).
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import rollgym
from rollgym.core.spec_hash import HASH_EXCLUDE, import_closure
from tests.conftest import require_module

LOCK = Path(__file__).with_name("spec_hashes.json")
PACKAGE = Path(rollgym.__file__).resolve().parent
LINEAGE = PACKAGE / "core" / "spec_lineage.json"


def _rollgym_ids() -> list[rollgym.EnvInfo]:
    # only rollgym's own ids: tests register toy envs of their own
    return [info for info in rollgym.list_envs()
            if info.entry_point.startswith("rollgym.envs.") and info.family != "test"]


def test_spec_hashes_match_the_lock():
    current = {info.id: info.content_hash for info in _rollgym_ids()}
    if os.environ.get("ROLLGYM_UPDATE_SPEC_HASHES"):
        before = json.loads(LOCK.read_text()) if LOCK.exists() else {}
        lineage = json.loads(LINEAGE.read_text())
        for env_id, old in before.items():
            if env_id in current and current[env_id] != old and old not in lineage.get(env_id, []):
                lineage.setdefault(env_id, []).append(old)
        LINEAGE.write_text(json.dumps(lineage, indent=2, sort_keys=True) + "\n")
        LOCK.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n")
    pinned = json.loads(LOCK.read_text()) if LOCK.exists() else {}
    changed = sorted(i for i in current if i in pinned and pinned[i] != current[i])
    missing = sorted(set(current) - set(pinned))
    assert not changed, f"code behind {changed} changed: bump the version or re-pin (see this file's docstring)"
    assert not missing, f"{missing} are not pinned yet: re-pin (see this file's docstring)"


def _grimp_graph():
    require_module("grimp")
    import grimp

    graph = grimp.build_graph("rollgym", cache_dir=None, exclude_type_checking_imports=True)
    for module in HASH_EXCLUDE:
        if module in graph.modules:
            graph.remove_module(module)
    return graph


def test_the_hashed_modules_are_closed_under_imports_as_grimp_sees_them():
    # grimp (import-linter's import graph) is an independent reading of the same imports
    graph = _grimp_graph()
    for info in _rollgym_ids():
        hashed = set(info.hashed_modules)
        assert info.entry_point.partition(":")[0] in hashed
        for module in hashed:
            leaks = graph.find_modules_directly_imported_by(module) - hashed
            assert not leaks, f"{info.id}: {module} imports {sorted(leaks)}, which its hash does not cover"


def test_every_excluded_module_exists_and_says_why():
    for module, reason in HASH_EXCLUDE.items():
        assert (PACKAGE.parent / (module.replace(".", "/") + ".py")).is_file(), module
        assert len(reason.split()) >= 3


def test_lazy_imports_inside_functions_are_followed():
    # text_env imports records inside a method (excluded: rendering); the games' opponents are
    # imported at module level, MATH's verifier pool inside functions
    closure = import_closure(["rollgym.envs.games.connect_four"])
    assert "rollgym.envs.games.bots" in closure and "rollgym.envs.games.mcts" in closure
    assert "rollgym.envs.games.records" not in closure
    assert "rollgym.envs.games.chess_state" not in closure  # another game's rules do not define this one


# -- editing a copy of the package -------------------------------------------------------------------------


def _copy_package(root: Path) -> Path:
    shutil.copytree(PACKAGE, root / "rollgym", ignore=shutil.ignore_patterns("__pycache__", "*.pt", "*.npz"))
    return root / "rollgym"


def _edit_function(path: Path, qualname: str, mode: str = "code") -> None:
    """Insert a statement at the top of a function's body (``mode="code"``), or reword its docstring."""
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    node: ast.AST = tree
    for part in qualname.split("."):
        node = next(n for n in ast.iter_child_nodes(node)
                    if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == part)
    assert isinstance(node, ast.FunctionDef)
    lines = text.splitlines(keepends=True)
    first = node.body[0]
    has_doc = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(
        first.value.value, str)
    if mode == "docstring":
        assert has_doc, qualname
        lines.insert(first.lineno - 1, " " * first.col_offset + "# a comment changes nothing either\n")
        text = "".join(lines).replace(first.value.value, first.value.value + " (reworded)", 1)  # type: ignore[attr-defined]
    else:
        target = node.body[1] if has_doc and len(node.body) > 1 else first
        lines.insert(target.lineno - 1, " " * target.col_offset + "_edited_by_a_test = True\n")
        text = "".join(lines)
    path.write_text(text, encoding="utf-8")


def _hashes(root: Path) -> dict[str, str]:
    code = ("import json, rollgym; print(json.dumps({e.id: e.content_hash for e in rollgym.list_envs() "
            "if e.entry_point.startswith('rollgym.envs.')}))")
    env = {**os.environ, "PYTHONPATH": str(root)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env,
                            cwd=root, check=True)
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def base_hashes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The hashes of an unedited copy, computed the same way as the edited ones."""
    root = tmp_path_factory.mktemp("base")
    _copy_package(root)
    return _hashes(root)


@pytest.mark.parametrize(("module", "function", "known_users"), [
    ("rollgym.core.extraction", "extract_tag", {"Countdown-v0", "Sudoku-v0", "MATH500-v0"}),
    ("rollgym.core.seeding", "task_seed_sequence", {"Countdown-v0", "Sudoku-v0", "ConnectFour-v0", "WorldModel-v0"}),
    ("rollgym.envs.games.bots", "GreedyBot.choose", {"ConnectFour-v0", "Hex-v0", "Chess-v1", "Chess960-v1"}),
    ("rollgym.envs.games.mcts", "MCTS.search", {"ConnectFour-v0", "Hex-v0", "Chess-v1", "Chess960-v1"}),
])
def test_editing_a_function_changes_the_hash_of_every_id_that_imports_it(
    tmp_path: Path, base_hashes: dict[str, str], module: str, function: str, known_users: set[str]
) -> None:
    base = base_hashes
    edited_root = tmp_path / "edited"
    package = _copy_package(edited_root)
    _edit_function(package.parent / (module.replace(".", "/") + ".py"), function)
    edited = _hashes(edited_root)
    changed = {env_id for env_id in base if base[env_id] != edited[env_id]}
    # who uses the module, by grimp's independent import graph (entry modules that reach it)
    graph = _grimp_graph()
    users = graph.find_downstream_modules(module) | {module}
    expected = {info.id for info in _rollgym_ids()
                if info.entry_point.partition(":")[0] in users
                or any(extra in users for extra in info.components)}
    assert known_users <= changed
    assert changed == expected


def test_docstrings_and_comments_do_not_change_any_hash(tmp_path: Path, base_hashes: dict[str, str]) -> None:
    base = base_hashes
    edited_root = tmp_path / "edited"
    package = _copy_package(edited_root)
    _edit_function(package / "core" / "extraction.py", "extract_tag", mode="docstring")
    assert _hashes(edited_root) == base
