"""Write rollgym's terminal tasks as Harbor task directories.

One folder per task::

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
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from rollgym.core.errors import ConfigError
from rollgym.core.task import Task
from rollgym.envs.code.terminal_gen import spec as checks
from rollgym.envs.code.terminal_gen.spec import Spec

WORKDIR = "/app"
IMAGE = "python:3.12-slim"
EXPORTABLE = ("TerminalGen-v0", "Terminal-v0")
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
        written.append(write_task(root / name, task_spec(env_id, task), task_id=task.id, env_id=env_id))
    env.close()
    return written
