"""The repository's layout: the research runs sit beside ``bench/``, out of the installed package.

``research/`` imports rollgym; rollgym never imports ``research`` (import-linter's ``research`` contract sees
the import statements; this also catches a module named in a string, as ``importlib.import_module`` takes it),
and the wheel's package discovery does not pick it up.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
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


def test_bench_and_leaderboard_share_the_one_bundles_package() -> None:
    """``rollgym bench`` writes bundles and ``rollgym leaderboard`` reads them through ``rollgym.bundles``; the
    bundles package imports only core (import-linter's ``bundles`` contract)."""
    import grimp

    graph = grimp.build_graph("rollgym", cache_dir=None, exclude_type_checking_imports=False)
    writers = {"rollgym.benchmarks.runner", "rollgym.commands.bench"}
    readers = {"rollgym.leaderboard.ingest", "rollgym.leaderboard.verify", "rollgym.commands.leaderboard"}
    for module in sorted(writers | readers):
        imported = graph.find_modules_directly_imported_by(module)
        assert any(m.startswith("rollgym.bundles.") for m in imported), module
    for module in sorted(m for m in graph.modules if m.startswith("rollgym.bundles")):
        outside = {m for m in graph.find_modules_directly_imported_by(module)
                   if m.startswith("rollgym.") and not m.startswith(("rollgym.bundles", "rollgym.core"))}
        assert not outside, (module, outside)


def test_results_file_is_the_one_name_and_the_transcript_names_still_work(tmp_path: Path) -> None:
    from rollgym.bundles.format import Bundle, strip_answers, strip_results_file, strip_transcript_answers
    from rollgym.leaderboard.verify import read_results_file, read_transcript

    line = b'{"kind": "episode", "task": {"id": "t", "prompt": "2+2?", "answer": "4"}}\n'
    assert strip_answers(line) == b'{"kind": "episode", "task": {"id": "t", "prompt": "2+2?"}}\n'
    with pytest.warns(DeprecationWarning, match=r"strip_answers\(transcript=...\) is now results"):
        assert strip_answers(transcript=line) == strip_answers(line)
    for strip in (strip_results_file, strip_transcript_answers):
        path = tmp_path / f"{strip.__name__}.jsonl"
        path.write_bytes(line)
        if strip is strip_transcript_answers:
            with pytest.warns(DeprecationWarning, match="is now strip_results_file"):
                strip(path)
        else:
            strip(path)
        assert b"answer" not in path.read_bytes()
    bundle = Bundle(tmp_path, {}, None)
    assert bundle.results_file("countdown") == tmp_path / "transcripts" / "countdown.jsonl"
    with pytest.warns(DeprecationWarning, match="is now results_file"):
        assert bundle.transcript("countdown") == bundle.results_file("countdown")
    missing = tmp_path / "transcripts" / "none.jsonl"
    with pytest.raises(Exception, match=r"none\.jsonl") as new_error:
        read_results_file(missing)
    with pytest.warns(DeprecationWarning, match="is now read_results_file"), \
            pytest.raises(type(new_error.value), match=r"none\.jsonl"):
        read_transcript(missing)
