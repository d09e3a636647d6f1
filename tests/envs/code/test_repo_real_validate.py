"""The validator of RepoRepairReal: coverage-guided test selection and the warm pytest process.

These run on a tiny project written here (no build needed): the traced run maps each test
to the lines it runs, a mutant runs only the tests that reach its statement, and a mutant
never leaks into the next run of the same warm process.
"""

from __future__ import annotations

import ast
from pathlib import Path

from rollgym.envs.code.repo_real.mutate import Mutation, enumerate_mutations
from rollgym.envs.code.repo_real.validate import (
    WarmPytest,
    covering_tests,
    parse_failures,
    statement_span,
    trace_map,
)

SOURCE = '''LIMIT = 3


def small(x):
    if x < LIMIT:
        return True
    return False


def double(x):
    return x * 2


def unused(x):
    return x + 1
'''
TESTS = '''from pkg.m import double, small


def test_small():
    assert small(1) and not small(5)


def test_double():
    assert double(4) == 8
'''


def _project(root: Path) -> Path:
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "m.py").write_text(SOURCE)
    (root / "test_m.py").write_text(TESTS)
    return root


def _mutation(kind: str, old: str) -> Mutation:
    return next(m for m in enumerate_mutations("pkg/m.py", SOURCE) if m.kind == kind and m.old == old)


def test_a_mutant_runs_only_the_tests_that_reach_its_statement(tmp_path):
    root = _project(tmp_path)
    tmap = trace_map(root, ".", ["test_m.py"], ["pkg/m.py"], timeout=120)
    assert set(tmap["tests"]) == {"test_m.py::test_small", "test_m.py::test_double"}
    tree = ast.parse(SOURCE)
    comparison = _mutation("wrong_comparison", "x < LIMIT")
    assert statement_span(tree, comparison) == (5, 6)  # the whole if statement
    assert covering_tests(tmap, "pkg/m.py", statement_span(tree, comparison)) == ["test_m.py::test_small"]
    times = _mutation("wrong_operator", "x * 2")
    assert covering_tests(tmap, "pkg/m.py", statement_span(tree, times)) == ["test_m.py::test_double"]
    # no test calls unused(): no test can fail, so the mutant is not run at all
    plus = _mutation("wrong_operator", "x + 1")
    assert covering_tests(tmap, "pkg/m.py", statement_span(tree, plus)) == []
    # a line that runs at import reaches every test
    assert covering_tests(tmap, "pkg/m.py", (1, 1)) is None


def test_the_warm_process_never_carries_a_mutant_into_the_next_run(tmp_path):
    root = _project(tmp_path)
    target = root / "pkg" / "m.py"
    server = WarmPytest(root, ".")
    try:
        m = _mutation("wrong_operator", "x * 2")
        target.write_text(m.apply(SOURCE))
        code, out = server.run(["test_m.py"], [], timeout=120)
        assert code == 1 and [t for t, _ in parse_failures(out)] == ["test_m.py::test_double"]
        target.write_text(SOURCE)
        code, out = server.run(["test_m.py"], [], timeout=120)
        assert code == 0 and parse_failures(out) == [], out
        # a test id selects that test only, and a hung run is stopped and reported as None
        target.write_text(SOURCE.replace("return x * 2", "while True:\n        pass"))
        assert server.run(["test_m.py::test_double"], [], timeout=3) is None
        target.write_text(SOURCE)
        code, out = server.run(["test_m.py::test_small"], [], timeout=120)
        assert code == 0 and "1 passed" in out
    finally:
        server.close()
