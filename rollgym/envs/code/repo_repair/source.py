"""``RepoRepairSource``: small generated repositories with one injected bug, an issue text and hidden tests.

A repository is a package ``app/`` of ``modules`` modules drawn from
:data:`~rollgym.envs.code.repo_repair.modules.MODULES`, each with a visible pytest file
under ``tests/``. One function gets a bug of a kind from the configuration; at least
one visible test and one hidden test fail because of it. The content key (the
modules and the bug) puts each repository in one split. Expected values of the
hidden tests are computed here from the correct sources (rollgym's own code).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rollgym.core.seeding import content_digest, draw_in_split
from rollgym.core.sources import GeneratedSource
from rollgym.core.task import Task
from rollgym.envs.code.config import RepoRepairConfig, as_meta
from rollgym.envs.code.harness import encode
from rollgym.envs.code.repo_repair.modules import MODULES, Function, Module

FAMILY = "code-reporepair"
DEFAULT_ENV_ID = "RepoRepair-v0"
N_VISIBLE = 3


def _run(source: str, name: str, args: tuple[Any, ...]) -> Any:
    namespace: dict[str, Any] = {}
    exec(compile(source, "<repo module>", "exec"), namespace)
    try:
        return encode(namespace[name](*[list(a) if isinstance(a, list) else a for a in args]))
    except Exception as exc:  # a buggy variant may raise; that is a difference too
        return ["!", type(exc).__name__]


def _test_file(module: Module, cases: dict[str, list[tuple[tuple[Any, ...], Any]]]) -> str:
    from rollgym.envs.code.harness import decode

    lines = [f"from app.{module.name} import {', '.join(fn.name for fn in module.functions)}\n"]
    for fn in module.functions:
        lines.append(f"\ndef test_{fn.name}():\n")
        for args, out in cases[fn.name]:
            lines.append(f"    assert {fn.name}({', '.join(repr(a) for a in args)}) == {decode(out)!r}\n")
    return "".join(lines)


class RepoRepairSource(GeneratedSource[RepoRepairConfig]):
    """The task source of ``RepoRepair-v0``; the same seed gives the same repository. The supply is
    unbounded (a split may repeat a repository when the configuration allows few).

    Example:
        >>> task = RepoRepairSource().task(0)
        >>> sorted(task.answer["files"])[:2]
        ['README.md', 'app/__init__.py']
    """

    family = FAMILY
    config_type = RepoRepairConfig
    default_env_id = DEFAULT_ENV_ID

    def _draw(self, rng: np.random.Generator) -> tuple[tuple[int, ...], str, str, str]:
        cfg = self.config
        while True:
            chosen = tuple(sorted(int(i) for i in rng.choice(len(MODULES), size=cfg.modules, replace=False)))
            kind = cfg.bugs[int(rng.integers(len(cfg.bugs)))]
            options = [(MODULES[m].name, fn.name) for m in chosen for fn in MODULES[m].functions if kind in fn.bugs]
            if options:
                module, function = options[int(rng.integers(len(options)))]
                return chosen, module, function, kind

    @staticmethod
    def _key(draw: tuple[tuple[int, ...], str, str, str]) -> str:
        chosen, module, function, kind = draw
        return f"{[MODULES[m].name for m in chosen]}|{module}.{function}|{kind}"

    def task(self, index: int, split: str = "train") -> Task:
        """Repository ``index`` of ``split``."""
        draw, rng = draw_in_split(FAMILY, split, index, self._draw, key=self._key)
        chosen, bug_module, bug_function, kind = draw
        modules = [MODULES[m] for m in chosen]
        old, new = next(fn for m in modules for fn in m.functions if fn.name == bug_function).bugs[kind]
        fixed = next(m for m in modules if m.name == bug_module).source()
        files: dict[str, str] = {"app/__init__.py": '"""The app package."""\n'}
        hidden: list[Any] = []
        expected: list[Any] = []
        issue_case: tuple[Function, tuple[Any, ...], Any, Any] | None = None
        for module in modules:
            good = module.source()
            bad = module.source((bug_function, old, new)) if module.name == bug_module else good
            visible: dict[str, list[tuple[tuple[Any, ...], Any]]] = {}
            for fn in module.functions:
                buggy = fn.name == bug_function
                cases = self._cases(rng, fn, good, bad, N_VISIBLE, must_differ=buggy)
                visible[fn.name] = [(a, _run(good, fn.name, a)) for a in cases]
                if buggy:
                    issue_args = next(a for a in cases if _run(good, fn.name, a) != _run(bad, fn.name, a))
                    issue_case = (fn, issue_args, _run(good, fn.name, issue_args), _run(bad, fn.name, issue_args))
                for args in self._cases(rng, fn, good, bad, self.config.n_hidden, must_differ=buggy):
                    hidden.append([[encode(a) for a in args], {}, f"{module.name}__{fn.name}"])
                    expected.append(_run(good, fn.name, args))
            files[f"app/{module.name}.py"] = bad
            files[f"tests/test_{module.name}.py"] = _test_file(module, visible)
        names = ", ".join(m.name for m in modules)
        files["README.md"] = "# app\n\nModules: " + names + ".\nRun the tests with pytest.\n"
        assert issue_case is not None
        fn, args, good_out, bad_out = issue_case
        issue = self._issue(bug_module, fn, args, good_out, bad_out)
        key = self._key(draw)
        return Task(
            id=f"{self.env_id}:{split}:{index}:{content_digest(key)}",
            env_id=self.env_id,
            prompt=issue,
            answer={
                "files": files,
                "calls": hidden,
                "expected": expected,
                "imports": [[m.name, fn.name] for m in modules for fn in m.functions],
                "fix": {"path": f"app/{bug_module}.py", "content": fixed, "bug": [old, new]},
            },
            meta={
                "modules": [m.name for m in modules],
                "difficulty": {"modules": len(modules), "bug": kind},
                "config": as_meta(self.config),
                "n_files": len(files),
            },
        )

    @staticmethod
    def _cases(rng: np.random.Generator, fn: Function, good: str, bad: str, n: int, must_differ: bool) -> list[Any]:
        cases = [fn.draw_args(rng) for _ in range(n)]
        if must_differ:
            for _ in range(500):
                if any(_run(good, fn.name, a) != _run(bad, fn.name, a) for a in cases):
                    break
                cases[int(rng.integers(n))] = fn.draw_args(rng)
            else:
                raise AssertionError(f"no input shows the bug in {fn.name}")  # pragma: no cover
        return cases

    @staticmethod
    def _issue(module: str, fn: Function, args: tuple[Any, ...], good: Any, bad: Any) -> str:
        from rollgym.envs.code.harness import decode

        call = f"{fn.name}({', '.join(repr(a) for a in args)})"
        got = f"raises {bad[1]}" if bad[0] == "!" else f"returns {decode(bad)!r}"
        return (
            f"Issue: `{call}` in `app/{module}.py` {got}, but it should return {decode(good)!r} "
            f"({fn.summary}).\n\nThe repository is a small Python package with tests under tests/. Find and fix the "
            "bug in the package's source. Do not change the tests: a change to any test file scores 0. Hidden tests "
            "check every function of the package."
        )
