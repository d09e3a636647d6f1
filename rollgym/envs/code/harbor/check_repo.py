"""Grade an exported RepoRepairReal task inside a Harbor container (standard library, then pytest).

Run in the task's working folder: ``python3 check_repo.py grading.json``; exit status 0 when the
test files are unchanged and the project's own tests pass as RepoRepairReal-v1 requires, else 1
with the reason printed. rollgym's Harbor export copies this file into each task's ``tests/`` as
``check.py``, beside ``project.tar.gz`` (the project's original files the agent may not change,
hidden test files included), ``guard.py`` (:mod:`rollgym.envs.code.repo_real.guard`) and
``grading.json``: ``{"root", "editable": [path, ...], "tests": {path: sha256}, "run", "deselect",
"failing"}``: the files whose version the agent decides, and the test files it was given, which must
be there unchanged, with no other test file or conftest beside them.

As in rollgym, the graded tree is built fresh: the original project, and the agent's version of each
file it was given (files it added are not copied); pytest runs there with the guard plugin loaded
before the project's code, and the guard's verdict (a line with a token made for this run) must show
every originally failing test passing and nothing of pytest's reporting changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tarfile
import tempfile
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT_S = 600
_SUMMARY = re.compile(r"^(PASSED|FAILED|ERROR) (.+?)(?: - .*)?$")


def _sha256(path: str) -> str | None:
    if os.path.islink(path) or not os.path.isfile(path):
        return None
    with open(path, "rb") as file:
        return hashlib.sha256(file.read()).hexdigest()


def changed_tests(tests: dict[str, str]) -> list[str]:
    """Test files of the task edited or removed, and test files or conftests added."""
    changed = [p for p, digest in tests.items() if _sha256(p) != digest]
    for root, folders, names in os.walk("."):
        folders[:] = [f for f in folders if f not in (".git", "__pycache__", ".harbor")]
        for name in names:
            path = os.path.relpath(os.path.join(root, name), ".").replace(os.sep, "/")
            if name.endswith(".py") and name.startswith(("test", "conftest")) and path not in tests:
                changed.append(path)
    return sorted(changed)


def build_tree(grading: dict[str, Any], tree: str) -> None:
    """The project's original files, then the agent's version of each file it was given (if it kept it)."""
    with tarfile.open(os.path.join(HERE, "project.tar.gz")) as archive:
        for member in archive.getmembers():
            if not member.isfile() or member.name.startswith(("/", "..")) or "/../" in member.name:
                continue
            source = archive.extractfile(member)
            if source is not None:
                target = os.path.join(tree, member.name)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(target, "wb") as out:
                    out.write(source.read())
    for path in grading["editable"]:
        if os.path.isfile(path) and not os.path.islink(path):
            target = os.path.join(tree, path)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(path, target)


def judge(output: str, exit_code: int, token: str, failing: list[str]) -> str | None:
    """Why the run fails (``None`` when it passes): the summary lines, then the guard's verdict."""
    seen: dict[str, str] = {}
    for line in output.splitlines():
        match = _SUMMARY.match(line.strip())
        if match:
            seen[match.group(2)] = match.group(1)
    bad = sorted(t for t, outcome in seen.items() if outcome != "PASSED")
    if exit_code != 0 or bad:
        return f"tests failed (exit status {exit_code}): {', '.join(bad[:10])}"
    mark = f"@@rollgym-guard {token} "
    lines = [line[len(mark):] for line in output.splitlines() if line.startswith(mark)]
    if len(lines) != 1:
        return "no verdict from the guard plugin"
    verdict = json.loads(lines[0])
    if verdict.get("tamper"):
        return f"pytest's reporting was tampered with: {verdict['tamper'][:5]}"
    passed = set(verdict.get("passed", ()))
    missing = [t for t in failing if t not in passed and not ("::" not in t and any(
        p.startswith(t + "::") for p in passed))]
    return f"not seen passing: {', '.join(missing[:10])}" if missing else None


def main(grading_path: str) -> int:
    """Check the test files, build the graded tree, run the project's tests under the guard, judge."""
    with open(grading_path, encoding="utf-8") as file:
        grading: dict[str, Any] = json.load(file)
    changed = changed_tests(grading["tests"])
    if changed:
        print(f"test files changed or added: {', '.join(changed[:10])}")
        return 1
    tree = tempfile.mkdtemp(prefix="rollgym-grade-")
    try:
        build_tree(grading, tree)
        token = secrets.token_hex(16)
        os.makedirs(os.path.join(tree, ".rollgym"))
        shutil.copyfile(os.path.join(HERE, "guard.py"), os.path.join(tree, ".rollgym", "_rollgym_guard.py"))
        with open(os.path.join(tree, ".rollgym", "token"), "w", encoding="utf-8") as file:
            json.dump({"token": token, "watch": grading["failing"]}, file)
        argv = [sys.executable, "-m", "pytest", "-p", "_rollgym_guard", "-q", "-p", "no:cacheprovider", "-o",
                "addopts=", "--tb=short", "-rA", "-W", "ignore", *grading["run"]]
        for test_id in grading["deselect"]:
            argv += ["--deselect", test_id]
        env = {**os.environ, "PYTHONPATH": f"{grading['root']}:.rollgym", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
               "PYTHONDONTWRITEBYTECODE": "1"}
        try:
            run = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
                                 check=False)
        except subprocess.TimeoutExpired:
            print("the tests did not finish in time")
            return 1
    finally:
        shutil.rmtree(tree, ignore_errors=True)
    why = judge(run.stdout, run.returncode, token, grading["failing"])
    print(run.stdout[-2000:])
    if why is not None:
        print(why)
        return 1
    print("the project's tests pass")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
