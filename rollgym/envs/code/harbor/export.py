"""Write rollgym's terminal and repository-repair tasks as Harbor task directories.

One folder per task (terminal tasks)::

    <task>/instruction.md          what the agent is asked (paths relative to the working folder /app)
    <task>/task.toml               metadata (rollgym id, kind, level, difficulty), timeouts, resources
    <task>/environment/Dockerfile  python:3.12-slim, WORKDIR /app, the starting files copied in, their modes
    <task>/environment/files/...   the starting files
    <task>/solution/solve.sh       the oracle's commands
    <task>/tests/test.sh           runs tests/check.py on tests/checks.json and writes /logs/verifier/reward.txt
    <task>/tests/check.py          the standalone checker (:mod:`.check_state`)
    <task>/tests/checks.json       the task's checks (:mod:`rollgym.envs.code.terminal_gen.spec`)

``TerminalGen-v0`` tasks export as they are; ``Terminal-v0`` tasks are first restated as the
same checks (:func:`terminal_v0_spec`).

Repository-repair tasks (:func:`write_repo_task`) have the same layout: the instruction is the
issue, ``environment/files`` the repository with its bug (what the agent sees, hidden tests
left out), ``solution/solve.sh`` writes the fixed files back, and ``tests/test.sh`` runs
``tests/check.py``: for ``RepoRepair-v0`` the hidden calls through rollgym's call harness
(:mod:`.check_calls`), for ``RepoRepairReal-v0``/``-v1`` the project's own tests, hidden ones
included, under RepoRepairReal-v1's guard plugin (:mod:`.check_repo`).
"""

from __future__ import annotations

import hashlib
import io
import json
import shlex
import sys
import tarfile
from pathlib import Path
from typing import Any

from rollgym.core.errors import ConfigError
from rollgym.core.task import Task
from rollgym.envs.code.terminal_gen import spec as checks
from rollgym.envs.code.terminal_gen.spec import Spec

WORKDIR = "/app"
IMAGE = "python:3.12-slim"
EXPORTABLE = ("TerminalGen-v0", "Terminal-v0", "RepoRepair-v0", "RepoRepairReal-v0", "RepoRepairReal-v1")
_REPO_ENVS = ("RepoRepair-v0", "RepoRepairReal-v0", "RepoRepairReal-v1")
_DIFFICULTY = ("easy", "easy", "medium", "hard")
_TEST_SH = f"""#!/bin/bash
# Written by rollgym's Harbor export: check the final state of {WORKDIR}, write the reward.
mkdir -p /logs/verifier
cd {WORKDIR}
if python3 /tests/check.py /tests/checks.json; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""


def terminal_v0_spec(task: Task) -> Spec:
    """A ``Terminal-v0`` task restated as a generated task's spec (same starting files, same conditions)."""
    kind, expect, start = task.meta["kind"], task.answer["expect"], task.answer["files"]
    found: list[dict[str, Any]] = []
    if kind == "files":
        folder = expect["folder"]
        found += [checks.file_is(f"{folder}/{p.split('/')[-1]}", start[p]) for p in expect["moved"]]
        found += [checks.absent(p) for p in expect["moved"]]
        found += [checks.file_is(p, c) for p, c in start.items() if p not in expect["moved"]]
        found.append(checks.tree_is(folder, [p.split("/")[-1] for p in expect["moved"]]))
    elif kind == "text":
        found.append(checks.text_is("answer.txt", expect["answer"]))
    elif kind == "permissions":
        found += [checks.mode_has(p, 0o100) for p in expect["executable"]]
        found += [checks.mode_has(p, 0, 0o111) for p in expect["not_executable"]]
        found += [checks.mode_is(p, 0o600) for p in expect["mode_600"]]
        found += [checks.file_is(p, c) for p, c in start.items()]
    elif kind == "archive":
        found.append(checks.archive_is("backup.tar.gz", expect["members"]))
    else:
        found.append(checks.mode_has("count.sh", 0o100))
        found += [checks.runs(f"./count.sh hidden_{i}.txt", out, {f"hidden_{i}.txt": text})
                  for i, (text, out) in enumerate(zip(expect["inputs"], expect["outputs"]))]
    instruction = task.prompt.split("\n\n")[0].removeprefix("Task: ")
    return checks.spec(kind, kind, 0, instruction, dict(start), task.answer["solution"], "", found)


def task_spec(env_id: str, task: Task) -> Spec:
    """The spec of one task of an exportable env."""
    if env_id == "Terminal-v0":
        return terminal_v0_spec(task)
    from rollgym.envs.code.terminal_gen.source import spec_of

    return spec_of(task)


def write_task(folder: Path, spec: Spec, *, task_id: str, env_id: str) -> Path:
    """Write one task as a Harbor task directory in ``folder`` (created; must not exist yet)."""
    folder.mkdir(parents=True)
    listing = "\n".join(f"- `{p}`" for p in sorted(spec["files"])) or "- (nothing yet)"
    (folder / "instruction.md").write_text(f"{spec['instruction']}\n\nThe working folder {WORKDIR} holds:\n\n"
                                           f"{listing}\n")
    level = int(spec.get("level", 0))
    toml = [
        'version = "1.0"', "", "[metadata]", 'author_name = "rollgym"', f'difficulty = "{_DIFFICULTY[level]}"',
        f"category = {json.dumps(spec['category'])}", f"tags = {json.dumps([spec['kind'], env_id])}",
        f"rollgym_task_id = {json.dumps(task_id)}", f"rollgym_env_id = {json.dumps(env_id)}",
        f"rollgym_level = {level}", "", "[verifier]", "timeout_sec = 120.0", "", "[agent]", "timeout_sec = 600.0",
        "", "[environment]", "build_timeout_sec = 600.0", "cpus = 1", "memory_mb = 2048", "storage_mb = 10240", "",
    ]
    (folder / "task.toml").write_text("\n".join(toml))
    environment = folder / "environment"
    environment.mkdir()
    docker = [f"FROM {IMAGE}", f"WORKDIR {WORKDIR}"]
    if spec["files"]:
        docker.append(f"COPY files/ {WORKDIR}/")
        for path, content in spec["files"].items():
            target = environment / "files" / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
    docker += [f"RUN chmod {mode:o} {shlex.quote(path)}" for path, mode in sorted(spec.get("modes", {}).items())]
    (environment / "Dockerfile").write_text("\n".join(docker) + "\n")
    (folder / "solution").mkdir()
    (folder / "solution" / "solve.sh").write_text(f"#!/bin/bash\ncd {WORKDIR}\n{spec['solution']}\n")
    tests = folder / "tests"
    tests.mkdir()
    (tests / "test.sh").write_text(_TEST_SH)
    (tests / "check.py").write_text(Path(__file__).with_name("check_state.py").read_text())
    (tests / "checks.json").write_text(json.dumps(spec["checks"], indent=1) + "\n")
    for script in (folder / "solution" / "solve.sh", tests / "test.sh"):
        script.chmod(0o755)
    return folder


_WRITE_HEX = ("import os, sys; os.makedirs(os.path.dirname(sys.argv[1]) or '.', exist_ok=True); "
              "open(sys.argv[1], 'wb').write(bytes.fromhex(sys.stdin.read()))")


def _is_test(path: str) -> bool:
    return path.startswith("tests/") or path.rsplit("/", 1)[-1].startswith(("test_", "conftest"))


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _repo_test_sh(data: str, installs: list[str]) -> str:
    """test.sh for a repository task: install what the checker needs if the image lacks it, run it."""
    lines = ["#!/bin/bash", "# Written by rollgym's Harbor export: grade the repository in " + WORKDIR + ".",
             "mkdir -p /logs/verifier", f"cd {WORKDIR}"]
    for module in installs:  # python:3.12-slim has no pytest; rollgym's sandbox has what its envs need
        lines.append(f"python3 -c 'import {module}' 2>/dev/null || python3 -m pip install -q {shlex.quote(module)}")
    lines += [f"if python3 /tests/check.py /tests/{data}; then",
              "  echo 1 > /logs/verifier/reward.txt", "else", "  echo 0 > /logs/verifier/reward.txt", "fi", ""]
    return "\n".join(lines)


def _third_party_imports(sources: list[bytes], own: set[str]) -> list[str]:
    """The top-level modules that test files import from neither the standard library nor the project."""
    import ast

    found: set[str] = set()
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
            found.update(n.split(".")[0] for n in names)
    return sorted(n for n in found if n not in sys.stdlib_module_names and n not in own and n != "pytest")


def repo_task_parts(env_id: str, task: Task) -> tuple[dict[str, bytes], dict[str, bytes], dict[str, bytes], str]:
    """A repository task's starting files, its tests/ files, its fixed files, and its test.sh."""
    answer = task.answer
    if env_id == "RepoRepair-v0":
        files = {p: c.encode() for p, c in answer["files"].items()}
        cases = {"tests": {p: _sha256(c) for p, c in files.items() if _is_test(p)}, "imports": answer["imports"],
                 "calls": answer["calls"], "expected": answer["expected"]}
        tests = {"check.py": Path(__file__).with_name("check_calls.py").read_bytes(),
                 "harness.py": Path(__file__).parents[1].joinpath("harness.py").read_bytes(),
                 "cases.json": json.dumps(cases).encode()}
        return files, tests, {answer["fix"]["path"]: answer["fix"]["content"].encode()}, _repo_test_sh("cases.json", [])
    import gymnasium as gym

    from rollgym.envs.code.repo_real.projects import load_projects

    env: Any = gym.make(env_id).unwrapped
    files = env._tree(task, answer["files"], with_hidden=False)
    full = env._tree(task, answer["files"], with_hidden=True)
    env.close()
    project = next(p for p in load_projects() if p.name == answer["project"])
    visible_tests = {p: _sha256(c) for p, c in files.items() if p.endswith(".py") and (
        _is_test(p) or p.rsplit("/", 1)[-1].startswith("test"))}
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for path, data in sorted(full.items()):
            if path not in answer["files"]:
                info = tarfile.TarInfo(path)
                info.size, info.mtime, info.mode = len(data), 0, 0o644
                tar.addfile(info, io.BytesIO(data))
    grading = {"root": project.root, "editable": sorted(answer["files"]), "tests": visible_tests,
               "run": answer["run"], "deselect": answer["deselect"], "failing": answer["failing"]}
    own = {p.split("/")[0].removesuffix(".py") for p in full}
    if project.root not in (".", ""):
        own |= {p.removeprefix(project.root.rstrip("/") + "/").split("/")[0].removesuffix(".py") for p in full}
    installs = ["pytest", *_third_party_imports([full[p] for p in answer["run"] if p in full], own)]
    tests = {"check.py": Path(__file__).with_name("check_repo.py").read_bytes(),
             "guard.py": Path(__file__).parents[1].joinpath("repo_real", "guard.py").read_bytes(),
             "project.tar.gz": archive.getvalue(), "grading.json": json.dumps(grading, indent=1).encode()}
    fixed = {fix["path"]: fix["content"].encode() for fix in answer["fix"]}
    return files, tests, fixed, _repo_test_sh("grading.json", installs)


def write_repo_task(folder: Path, env_id: str, task: Task) -> Path:
    """Write one repository-repair task as a Harbor task directory in ``folder`` (created; must not exist yet)."""
    files, tests, fixed, test_sh = repo_task_parts(env_id, task)
    folder.mkdir(parents=True)
    listing = "\n".join(f"- `{p}`" for p in sorted(files))
    instruction = f"{task.prompt}\n\nThe repository is in {WORKDIR}. Its files:\n\n{listing}\n"
    (folder / "instruction.md").write_text(instruction)
    difficulty = task.meta.get("difficulty", {})
    toml = [
        'version = "1.0"', "", "[metadata]", 'author_name = "rollgym"',
        f"difficulty = {json.dumps('hard' if difficulty.get('bugs', 1) > 1 else 'medium')}",
        'category = "software-engineering"', f"tags = {json.dumps(['repo-repair', env_id])}",
        f"rollgym_task_id = {json.dumps(task.id)}", f"rollgym_env_id = {json.dumps(env_id)}", "",
        "[verifier]", "timeout_sec = 600.0", "", "[agent]", "timeout_sec = 1800.0", "",
        "[environment]", "build_timeout_sec = 600.0", "cpus = 1", "memory_mb = 2048", "storage_mb = 10240", "",
    ]
    (folder / "task.toml").write_text("\n".join(toml))
    environment = folder / "environment"
    for path, data in files.items():
        target = environment / "files" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    (environment / "Dockerfile").write_text(f"FROM {IMAGE}\nWORKDIR {WORKDIR}\nCOPY files/ {WORKDIR}/\n")
    (folder / "solution").mkdir()
    # hex, not base64: the importer rewrites /tests, /app... in solve.sh, and base64 may hold "+/app"
    writes = "".join(f"python3 -c {shlex.quote(_WRITE_HEX)} {shlex.quote(p)} <<'ROLLGYM_HEX'\n"
                     + "\n".join(c.hex()[i:i + 120] for i in range(0, len(c.hex()), 120)) + "\nROLLGYM_HEX\n"
                     for p, c in sorted(fixed.items()))
    (folder / "solution" / "solve.sh").write_text(f"#!/bin/bash\ncd {WORKDIR}\n{writes}")
    (folder / "tests").mkdir()
    for name, data in tests.items():
        (folder / "tests" / name).write_bytes(data)
    (folder / "tests" / "test.sh").write_text(test_sh)
    for script in (folder / "solution" / "solve.sh", folder / "tests" / "test.sh"):
        script.chmod(0o755)
    return folder


def export_harbor(env_id: str, split: str, out: str | Path, limit: int | None = None) -> list[Path]:
    """Write the tasks of ``env_id``'s ``split`` (the first ``limit``) as Harbor task directories under ``out``.

    Raises:
        ConfigError: for an env this export does not know, or an ``out`` folder that already holds tasks.
    """
    if env_id not in EXPORTABLE:
        raise ConfigError(f"Harbor export knows {', '.join(EXPORTABLE)}, not {env_id!r}.")
    import gymnasium as gym

    env: Any = gym.make(env_id, split=split).unwrapped
    size = env.source.size(split)
    count = limit if size is None else min(size, limit if limit is not None else size)
    if count is None:
        raise ConfigError(f"{env_id} has unbounded splits; give --limit.")
    root = Path(out)
    if root.exists() and any(root.iterdir()):
        raise ConfigError(f"{root} is not empty; export into a new folder.")
    written = []
    for index in range(count):
        task = env.source.task(index, split)
        name = f"{env_id.lower().replace('-', '_')}-{split}-{index:05d}"
        if env_id in _REPO_ENVS:
            written.append(write_repo_task(root / name, env_id, task))
        else:
            written.append(write_task(root / name, task_spec(env_id, task), task_id=task.id, env_id=env_id))
    env.close()
    return written
