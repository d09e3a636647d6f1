"""``HarborEnv``: play Harbor task directories that need no container image in rollgym's sandbox.

The agent works with the same ``bash`` tool as ``Terminal-v0``, in a sandbox session holding the
task's starting files (its ``WORKDIR`` is ``/sandbox/work``). At the end, after every process of
the agent is gone, the grader makes a grading area the agent never wrote: it empties ``/tmp`` and
``/dev/shm`` and removes ``/sandbox/work/.harbor`` (whatever their modes or links), then makes
``/tmp/harbor/tests`` with the task's pristine ``tests/`` (the agent never saw them), a fresh HOME
``/tmp/harbor/home`` and a fresh ``.harbor/logs/verifier``. If any of that fails the score is 0
with ``error="grading_error"``; the agent's files never stand in. ``tests/test.sh`` then runs from
``/tmp/harbor/tests`` (cwd the working folder, as Harbor runs it after the agent) with that HOME and
``PYTHONNOUSERSITE=1``; the reward is the number it wrote to ``/logs/verifier/reward.txt`` (or
``reward.json``'s ``reward``), read back by the sandbox's supervisor. As in Harbor, the grade is as
strong as the task's own test.sh: what test.sh runs of the agent's work (for example its modules,
imported from the working folder) could write that file.

Example:
    >>> env = HarborEnv(path="exported/")  # doctest: +SKIP
    >>> observation, info = env.reset(options={"task_index": 0})  # doctest: +SKIP
"""

from __future__ import annotations

import base64
import io
import json
import tarfile
from pathlib import Path, PurePosixPath
from typing import Any, Unpack

from rollgym.core.errors import ConfigError
from rollgym.core.seeding import content_digest
from rollgym.core.task import Score, Task
from rollgym.envs.code.harbor.taskdir import (
    GRADING_ROOT,
    HIDDEN,
    SANDBOX_WORKDIR,
    HarborTask,
    find_tasks,
    read_task,
)
from rollgym.envs.code.terminal.env import SESSION_LIMITS, ShellToolEnv
from rollgym.envs.code.tool_env import ToolLoopOptions
from rollgym.sandbox import File, Job, Session

REWARD_FILES = (f"{HIDDEN}/logs/verifier/reward.txt", f"{HIDDEN}/logs/verifier/reward.json")
# The grading area, made by trusted commands after the agent's last process is gone. Folders are made
# writable first (a link is never followed: chmod gets no link on its command line and does not follow
# them below), so nothing the agent left, read-only or not, survives; any failure stops the grading. Bash
# builtins list what is there, so a clean sandbox costs one process (tar, which makes the folders too).
_PREPARE = f"""set -eu
shopt -s nullglob dotglob
entries=(/tmp/* /dev/shm/*)
if [ -e {HIDDEN} ] || [ -L {HIDDEN} ]; then entries+=({HIDDEN}); fi
if [ ${{#entries[@]}} -gt 0 ]; then
  folders=()
  for entry in "${{entries[@]}}"; do [ -L "$entry" ] || folders+=("$entry"); done
  if [ ${{#folders[@]}} -gt 0 ]; then chmod -R u+rwX -- "${{folders[@]}}"; fi
  rm -rf -- "${{entries[@]}}"
fi
tar -x -P --no-same-owner -f -
echo prepared
"""
GRADING_ENV = {"HOME": f"{GRADING_ROOT}/home", "PYTHONNOUSERSITE": "1"}


class HarborSource:
    """The tasks of a Harbor task directory (or a folder of them); every split holds all of them."""

    family = "harbor"

    def __init__(self, path: str | Path, env_id: str = "Harbor") -> None:
        self.tasks = [read_task(p) for p in find_tasks(path)]
        self.env_id = env_id

    def size(self, split: str) -> int:
        """The number of tasks."""
        return len(self.tasks)

    def task(self, index: int, split: str = "test") -> Task:
        """Task ``index`` (any split)."""
        if not 0 <= index < len(self.tasks):
            raise ConfigError(f"Task index must be from 0 to {len(self.tasks) - 1}, got {index}.")
        harbor = self.tasks[index]
        files = {p: base64.b64encode(d).decode() for p, d in harbor.files.items()}
        tests = {p: base64.b64encode(d).decode() for p, d in harbor.tests.items()}
        digest = content_digest(json.dumps([harbor.instruction, files, tests], sort_keys=True))
        prompt = (f"{harbor.instruction.rstrip()}\n\nWork in /sandbox/work with the bash tool; reply without a tool "
                  "call when you are done. The task's tests then check the final state.")
        return Task(id=f"{self.env_id}:{harbor.name}:{digest}", env_id=self.env_id, prompt=prompt,
                    answer={"files": files, "modes": harbor.modes, "tests": tests},
                    meta={"name": harbor.name, "path": harbor.path, "workdir": harbor.workdir})


def start_files(task: Task) -> dict[str, Any]:
    """The task's starting files as sandbox inputs, with their modes."""
    modes = task.answer["modes"]
    return {p: File(base64.b64decode(d), int(modes.get(p, 0o644))) for p, d in task.answer["files"].items()}


def tests_archive(task: Task) -> bytes:
    """The grading area as an uncompressed tar of absolute paths: the task's pristine ``tests/`` (scripts
    executable) in ``/tmp/harbor/tests``, an empty HOME, and an empty reward folder in the working folder."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for folder in (GRADING_ROOT, f"{GRADING_ROOT}/home", f"{GRADING_ROOT}/tests", f"{SANDBOX_WORKDIR}/{HIDDEN}",
                       f"{SANDBOX_WORKDIR}/{HIDDEN}/logs", f"{SANDBOX_WORKDIR}/{HIDDEN}/logs/verifier"):
            info = tarfile.TarInfo(folder)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for path, data in sorted(task.answer["tests"].items()):
            content = base64.b64decode(data)
            for parent in list(PurePosixPath(path).parents)[-2::-1]:  # tests/ sub-folders, outermost first
                info = tarfile.TarInfo(f"{GRADING_ROOT}/tests/{parent}")
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            info = tarfile.TarInfo(f"{GRADING_ROOT}/tests/{path}")
            info.size, info.mode = len(content), 0o755 if path.endswith(".sh") else 0o644
            tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def run_tests(session: Session, task: Task) -> Score:
    """Make the grading area (see the module's docstring), run ``tests/test.sh``, read the reward it wrote."""
    if session.workdir != SANDBOX_WORKDIR:  # /tmp is the host's own outside bubblewrap: never emptied here
        return Score.fail("grading_error", reason="Harbor tasks are graded only in the bubblewrap sandbox")
    prepared = session.run(Job.command(["bash", "-c", _PREPARE], stdin=tests_archive(task), limits=SESSION_LIMITS))
    if not prepared.ok or prepared.stdout != "prepared\n":
        return Score.fail("grading_error", reason="the grading area could not be made",
                          output=(prepared.stderr or prepared.error or "")[-300:], label=prepared.label)
    result = session.run(Job.command(["bash", f"{GRADING_ROOT}/tests/test.sh"], env=GRADING_ENV,
                                     limits=SESSION_LIMITS))
    written = session.read_files(list(REWARD_FILES))
    try:
        if REWARD_FILES[0] in written:
            reward = float(written[REWARD_FILES[0]].decode().strip())
        elif REWARD_FILES[1] in written:
            reward = float(json.loads(written[REWARD_FILES[1]])["reward"])
        else:
            return Score.fail("no_reward", reason="tests/test.sh wrote no reward file", label=result.label)
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return Score.fail("no_reward", reason="the reward file does not hold a number", label=result.label)
    if not 0.0 <= reward <= 1.0:
        return Score.fail("no_reward", reason=f"the reward {reward} is not between 0 and 1")
    if reward >= 1.0:
        return Score.success(output=result.stdout[-300:])
    return Score(reward=reward, correct=False, error="tests_failed", details={"output": result.stdout[-300:]})


class HarborEnv(ShellToolEnv):
    """Harbor tasks played in rollgym's sandbox (see the module's docstring).

    Arguments: ``path`` (a task directory or a folder of them), ``max_turns`` (16),
    ``max_calls_per_turn`` (4), ``max_output_chars`` (4000), ``render_mode``.
    """

    default_env_id = "Harbor"
    loop_defaults = ToolLoopOptions(max_turns=16, split="test")

    def __init__(self, *, path: str | Path, **loop: Unpack[ToolLoopOptions]) -> None:
        source = HarborSource(path, self.default_env_id)  # a malformed task is refused before a sandbox starts
        self._open(source, loop)

    def _begin(self, task: Task) -> str:
        self.session = self.sandbox.session(SESSION_LIMITS)
        self.session.write_files(start_files(task))
        return task.prompt

    def _grade(self, action: str) -> Score:
        assert self.task is not None and self.session is not None
        return run_tests(self.session, self.task)


def solution_of(harbor: HarborTask) -> str:
    """The task's ``solution/solve.sh``, paths mapped (for the oracle)."""
    if harbor.solution is None:
        raise ConfigError(f"{harbor.path} has no solution/solve.sh; the oracle cannot play it.")
    return harbor.solution


def harbor_oracle(observation: str, info: dict[str, Any]) -> str:
    """First turn: the task's solve.sh as one bash call (Harbor's oracle agent); then finish."""
    if info.get("turn", 0) >= 1:
        return "Done."
    solution = solution_of(read_task(info["task_meta"]["path"]))
    return f"<tool_call>{json.dumps({'name': 'bash', 'arguments': {'command': solution}})}</tool_call>"
