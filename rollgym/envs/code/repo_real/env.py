"""``RepoRepairRealEnv``: fix bugs injected into a real Python project; its own hidden tests grade the fix."""

from __future__ import annotations

import difflib
import json
import re
import secrets
from pathlib import Path
from typing import Any, Unpack

from rollgym.core.difficulty import Difficulty, Level
from rollgym.core.task import Score, Task
from rollgym.envs.code.repo_real.grader_site import grader_packages
from rollgym.envs.code.repo_real.projects import load_projects, project_dir
from rollgym.envs.code.repo_real.source import DEFAULT_ENV_ID, LATEST_ENV_ID, MAX_BUGS, RepoRepairRealSource
from rollgym.envs.code.repo_repair.env import RepoToolEnv, changed_tests
from rollgym.envs.code.runner import SANDBOX_ERROR, code_runner
from rollgym.envs.code.tool_env import ToolLoopOptions
from rollgym.sandbox import Job, Limits, RunResult

SYSTEM_PROMPT = (
    "You are a software engineer fixing bugs in a real Python project. Use the tools to look around, edit the "
    "source and run the tests. When the bugs are fixed, reply without a tool call."
)
GRADE_LIMITS = Limits(wall_s=120, cpu_s=120, mem_mb=2048, nproc=16, max_output_bytes=262_144)
_SUMMARY = re.compile(r"^(PASSED|FAILED|ERROR) (.+?)(?: - .*)?$")
_SKIP_DIRS = ("docs/", "doc/", ".git/")
# The project's own configuration: always graded as shipped, whatever the agent wrote (pytest reads these;
# `pythonpath`, `python_files` or a `[tool:pytest]` section could point the run elsewhere).
PRISTINE = frozenset({"pyproject.toml", "setup.cfg", "tox.ini", "pytest.ini", ".pytest.ini", "conftest.py",
                      "setup.py"})
GUARD_SOURCE = Path(__file__).with_name("guard.py").read_text(encoding="utf-8")
GUARD_MARK = "@@rollgym-guard "
TAMPERED = "report_tampered"
# Names that fixing a project's bug has no use for and that reach into the test run (defence in depth only:
# the guard plugin is the wall; these catch the plain spellings early, with a readable label).
_SUSPICIOUS = re.compile(r"_pytest|\bpytest\b|\bpluggy\b|sys\.modules|\batexit\b|os\._exit|\bctypes\b|"
                         r"\bgc\b|settrace|setprofile|addaudithook|_getframe|\bf_back\b|\bf_locals\b|"
                         r"\btb_frame\b|meta_path|path_hooks|\bbuiltins\b|__builtins__")


def pytest_argv(files: list[str], deselect: list[str], *, report_all: bool) -> list[str]:
    """The pytest command run in the sandbox: the project's own settings, no cache, a summary line per test."""
    argv = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", "--tb=short",
            "-rA" if report_all else "-rfE", "-W", "ignore", *files]
    for test_id in deselect:
        argv += ["--deselect", test_id]
    return argv


def suspicious_lines(original: dict[str, str], now: dict[str, str], clean: dict[str, str] | None = None) -> list[str]:
    """Lines the agent added to the project's files that reach into pytest or the interpreter (see ``_SUSPICIOUS``).

    A line that the same file of the unmutated project holds is not counted: restoring it is the fix
    (semver's ``_deprecated.py`` reads ``f_back`` in a line a bug may sit in). ``clean`` maps a path to
    that file's text.

    Example:
        >>> suspicious_lines({"m.py": "x = 1\\n"}, {"m.py": "x = 1\\nimport _pytest.runner\\n"})
        ['m.py: import _pytest.runner']
        >>> suspicious_lines({"m.py": "f = g\\n"}, {"m.py": "f = g.f_back\\n"}, clean={"m.py": "f = g.f_back\\n"})
        []
    """
    found = []
    for path, text in sorted(now.items()):
        before = original.get(path, "").splitlines()
        known = {line.strip() for line in (clean or {}).get(path, "").splitlines()}
        for line in difflib.ndiff(before, text.splitlines()):
            if line.startswith("+ ") and _SUSPICIOUS.search(line) and line[2:].strip() not in known:
                found.append(f"{path}: {line[2:].strip()[:120]}")
    return found


def guard_verdict(output: str, token: str) -> dict[str, Any] | None:
    """The guard plugin's verdict line of this run (``None`` when there is not exactly one with the token)."""
    found = [line[len(GUARD_MARK) + len(token) + 1:] for line in output.splitlines()
             if line.startswith(f"{GUARD_MARK}{token} ")]
    if len(found) != 1:
        return None
    try:
        verdict = json.loads(found[0])
    except ValueError:
        return None
    return verdict if isinstance(verdict, dict) else None


def infrastructure_failure(result: RunResult) -> str | None:
    """Why a grading run failed through no fault of the agent's code (``None`` when it did not): the
    sandbox failed (a job that broke its sandbox is the agent's doing), the interpreter or a command was
    missing (exit 126 or 127), or pytest itself could not be imported."""
    if result.error is not None and not result.error.startswith("sandbox_broken"):
        return result.error[:300]
    if result.exit_code in (126, 127):
        return f"the sandbox could not run the test command (exit {result.exit_code}): {result.stderr[-200:]}"
    if "No module named pytest" in result.stderr and not outcomes(result.stdout):
        return "pytest could not be imported in the sandbox"
    return None


def outcomes(output: str) -> dict[str, str]:
    """Test id -> ``PASSED``, ``FAILED`` or ``ERROR`` from pytest's short summary."""
    found: dict[str, str] = {}
    for line in output.splitlines():
        match = _SUMMARY.match(line.strip())
        if match:
            found[match.group(2)] = match.group(1)
    return found


class RepoRepairRealEnv(RepoToolEnv):
    """RepoRepairReal: fix the bugs an issue describes in a real Python project, graded by its own tests.

    ## Description
    Each task is a real pure-Python project (toolz, boltons, inflection, parse, semver, idna; six
    and iso8601 held out) unpacked from its sdist (``rollgym data build repo-real`` fetches and
    verifies them), with ``bugs`` AST-level bugs injected (off-by-one, wrong comparison or
    operator, dropped branch, negated condition, swapped arguments, wrong default). Every
    bug was validated: it makes at least one of the project's own tests fail and reverts
    cleanly. The issue text names the broken behaviour (feature words and the error), not the
    tests or the place of the bug. The test files holding a failing test are hidden.

    ## Action Space
    ``TextSpace(1_000_000)``: Hermes tool calls (``list_files``, ``read_file``, ``search``,
    ``replace_in_file``, ``write_file``, ``delete_file``, ``run_tests``), or a message without
    a tool call to finish.

    ## Observation Space
    ``TextSpace(100_000)``: the issue and the file list; then tool responses; ``""`` at the end.

    ## Starting State
    ``reset(seed=s)`` draws a validated mutant of the split; ``options={"task_index": i, "split": ...}``.
    Splits ``train``, ``validation``, ``test`` (by content) and ``test_unseen`` (held-out projects).

    ## Rewards
    0.0 on tool turns. At the end, 1.0 when no test file (or conftest) was added, removed or
    changed (else ``error="tests_modified"``) and, in the sandbox, the project's original test
    files for the mutated modules (hidden ones included) all pass with the agent's source, each
    originally failing test reported ``PASSED``. Files the agent added are not copied in.

    ## Episode End
    ``terminated=True`` at a message without a tool call; ``truncated=True`` (reward 0,
    ``error="turn_limit"``) at the ``max_turns``-th message with tool calls.

    ## Information
    ``task_meta``: ``project``, ``version``, ``licence``, ``difficulty`` (``bugs``, ``distance``:
    ``near`` when a failing test's file is named after the mutated module), ``mutations``, ``n_files``.

    ## Arguments
    ``bugs`` (1, 1-3: validated bugs combined in one project), ``max_turns`` (30),
    ``max_calls_per_turn`` (4), ``max_output_chars`` (6000), ``split``, ``render_mode``.

    ## Version History
    * v1 (:class:`RepoRepairRealGuardedEnv`): the grown mutant manifest ``mutants-v1.jsonl`` (v0's 901
      mutants and those the cheaper, coverage-guided validator added: 2,054), and pytest's reporting
      watched by a guard plugin (v0's project code could patch it in-process and forge passes). Task
      indices name other tasks than in v0; v0 keeps serving its own 901 mutants.
    * v0: initial release.
    """

    default_env_id = DEFAULT_ENV_ID
    system_prompt = SYSTEM_PROMPT
    guarded = False  # v1 grades with the guard plugin (RepoRepairRealGuardedEnv)
    loop_defaults = ToolLoopOptions(max_turns=30, max_output_chars=6000)

    def __init__(self, *, bugs: int = 1, **loop: Unpack[ToolLoopOptions]) -> None:
        self.bugs = bugs
        self._open(RepoRepairRealSource(bugs, self.default_env_id), 256, 8192, loop)
        # the tests import pytest from the grader's own folder; no installed package is visible to them
        self.runner = code_runner(self.runner.limits, packages=str(grader_packages()))

    def _pythonpath(self, project_root: str, *more: str) -> str:
        """The project's root, then ``more``, then the grader's packages."""
        return ":".join([project_root, *more, self.runner.sandbox.packages_path or ""]).rstrip(":")

    @property
    def difficulty(self) -> Difficulty:
        """One level per number of injected bugs, 1 to 3 (the default is the instance's ``bugs``)."""
        levels = tuple(Level(f"bugs-{n}", {"bugs": n}, f"{n} validated bug{'s' if n > 1 else ''} in one project")
                       for n in range(1, MAX_BUGS + 1))
        return Difficulty(levels, default=self.bugs - 1, grows="the number of bugs injected into one project")

    def _level_source(self, env_id: str, level: Level) -> RepoRepairRealSource:
        return RepoRepairRealSource(int(level.knobs["bugs"]), env_id)

    def _tree(self, task: Task, agent_files: dict[str, str], *, with_hidden: bool) -> dict[str, bytes]:
        """The project as the sandbox gets it: its original files, the agent's version of each file it may edit."""
        project = next(p for p in load_projects() if p.name == task.answer["project"])
        root = project_dir(project)
        original = task.answer["files"]
        tree: dict[str, bytes] = {}
        for path in sorted(root.rglob("*")):
            rel = str(path.relative_to(root))
            if not path.is_file() or rel.startswith(_SKIP_DIRS) or rel == ".verified":
                continue
            if rel in task.answer["hidden"] and not with_hidden:
                continue
            if rel in original and rel not in agent_files and rel not in PRISTINE:
                continue  # the agent deleted it
            text = agent_files.get(rel) if rel in original and rel not in PRISTINE else None
            tree[rel] = text.encode() if text is not None else path.read_bytes()
        return tree

    def _tool_run_tests(self) -> tuple[str, dict[str, Any]]:
        assert self.task is not None
        visible = [f for f in self.task.answer["run"] if f not in self.task.answer["hidden"] and f in self.files]
        if not visible:
            return "no visible test file covers the mutated modules; the hidden tests decide", {"ok": True}
        project = next(p for p in load_projects() if p.name == self.task.answer["project"])
        job = Job.command(pytest_argv(visible, [], report_all=False), files=self._tree(self.task, self.files,
                          with_hidden=False), env={"PYTHONPATH": self._pythonpath(project.root)}, limits=GRADE_LIMITS)
        result = self.runner.run_one(job)
        return result.as_text(self.max_output_chars), {"ok": result.ok, "label": result.label}

    def _grade(self, action: str) -> Score:
        assert self.task is not None
        answer = self.task.answer
        changed = changed_tests(answer["files"], self.files)
        changed += [p for p in self.files if p not in answer["files"] and Path(p).name.startswith(("conftest",
                                                                                                   "test"))]
        if changed:
            return Score.fail("tests_modified", changed_tests=sorted(set(changed)))
        project = next(p for p in load_projects() if p.name == answer["project"])
        if not self.guarded:
            job = Job.command(pytest_argv(answer["run"], answer["deselect"], report_all=True),
                              files=self._tree(self.task, self.files, with_hidden=True),
                              env={"PYTHONPATH": self._pythonpath(project.root)}, limits=GRADE_LIMITS)
            return self._judge(self.runner.run_one(job), None)
        root = project_dir(project)
        clean = {path: (root / path).read_text(encoding="utf-8", errors="replace") for path in self.files
                 if (root / path).is_file()}
        suspicious = suspicious_lines(answer["files"], self.files, clean)
        if suspicious:
            return Score.fail("suspicious_patch", lines=suspicious[:20])
        token = secrets.token_hex(16)
        tree = self._tree(self.task, self.files, with_hidden=True)
        tree[".rollgym/_rollgym_guard.py"] = GUARD_SOURCE.encode()
        tree[".rollgym/token"] = json.dumps({"token": token, "watch": answer["failing"]}).encode()
        argv = pytest_argv(answer["run"], answer["deselect"], report_all=True)
        job = Job.command([*argv[:3], "-p", "_rollgym_guard", *argv[3:]], files=tree,
                          env={"PYTHONPATH": self._pythonpath(project.root, ".rollgym"),
                               "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
                          limits=GRADE_LIMITS)
        result = self.runner.run_one(job)
        return self._judge(result, guard_verdict(result.stdout, token))

    def _judge(self, result: RunResult, verdict: dict[str, Any] | None) -> Score:
        """The score of a grading run: every test passed, each originally failing one among them (and, with the
        guard, the guard saw them pass and nothing tampered with pytest's reporting)."""
        assert self.task is not None
        answer = self.task.answer
        infrastructure = infrastructure_failure(result)
        if infrastructure is not None:  # the sandbox, not the agent's code, failed: retried, never a 0
            return Score.fail(SANDBOX_ERROR, sandbox=infrastructure, exit_code=result.exit_code, label=result.label)
        seen = outcomes(result.stdout)
        bad = sorted(t for t, outcome in seen.items() if outcome != "PASSED")
        # A failing id without "::" is a file that did not import; fixed, some test of it must pass.
        missing = sorted(t for t in answer["failing"] if seen.get(t) != "PASSED" and not (
            "::" not in t and any(k.startswith(t + "::") and v == "PASSED" for k, v in seen.items())))
        if self.guarded and result.exit_code == 0 and not bad and not missing:
            if verdict is None:
                return Score.fail(TAMPERED, reason="the run ended without the guard's verdict",
                                  exit_code=result.exit_code, label=result.label)
            if verdict.get("tamper"):
                return Score.fail(TAMPERED, tamper=[str(t) for t in verdict["tamper"]][:20])
            passed = {str(t) for t in verdict.get("passed", ())}
            unseen = sorted(t for t in answer["failing"] if t not in passed and not (
                "::" not in t and any(p.startswith(t + "::") for p in passed)))
            if unseen:
                return Score.fail(TAMPERED, reason="reported passed, but the guard did not see it pass",
                                  not_passed=unseen[:20])
        if result.exit_code != 0 or bad or missing:
            return Score.fail("tests_failed", failed=bad[:20], not_passed=missing[:20], exit_code=result.exit_code,
                              label=result.label)
        return Score(reward=1.0, correct=True, details={"passed": len(seen)})


class RepoRepairRealGuardedEnv(RepoRepairRealEnv):
    """RepoRepairReal-v1: the grown task set, graded by a run that pytest's reporting cannot be patched in.

    ## Description, Action Space, Observation Space, Starting State, Episode End, Information, Arguments
    As :class:`RepoRepairRealEnv`, over the mutants of ``mutants-v1.jsonl``: v0's 901 and those the
    coverage-guided validator added (2,054 in all); the same index names another task than in v0.

    ## Rewards
    As v0, and: 0 (``error="suspicious_patch"``) when a line the agent added names pytest, pluggy,
    ``sys.modules``, ``atexit``, ``os._exit``, ``ctypes``, ``gc``, a trace or profile function, an audit
    hook, frames or import hooks; 0 (``error="report_tampered"``) when the guard plugin
    (:mod:`rollgym.envs.code.repo_real.guard`, loaded before any project code) gives no verdict, saw
    pytest's reporting changed, or did not itself see each originally failing test pass. Plugins that
    pytest would load from installed packages are not loaded.

    ## Version History
    * v1: the grown mutant manifest (2,054 validated mutants over 8 projects); grading watched by the
      guard plugin; patches that reach into pytest are refused. Under v0,
      project code could patch pytest's reports (``TestReport``, ``_pytest.runner``, a plugin it
      registers, a forged summary and ``os._exit(0)``) and score 1 without fixing anything.
    * v0: see :class:`RepoRepairRealEnv`.
    """

    default_env_id = LATEST_ENV_ID
    guarded = True


__all__ = ["MAX_BUGS", "RepoRepairRealEnv", "RepoRepairRealGuardedEnv"]
