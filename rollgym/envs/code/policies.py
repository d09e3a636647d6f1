"""Reference policies of the code envs: an oracle (the reference solution) and a random policy.

The oracles rebuild the episode's task from what ``info`` says (the task id for
HumanEval; the episode's split, the index and the generator's public configuration
for the generated envs), never from anything the env hid. They do not define what a task
is or how it scores, so this module is not part of any spec hash.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from rollgym.core.errors import ConfigError

_RANDOM_BODIES = (
    "    return None\n",
    "    return 0\n",
    "    return ''\n",
    "    return []\n",
    "    return True\n",
    "    pass\n",
    "    raise NotImplementedError\n",
    "    return {arg}\n",
    "    return len(str({arg}))\n",
    "    return {arg}[::-1]\n",
)


def _fenced(code: str) -> str:
    return f"```python\n{code.rstrip()}\n```"


def _hermes(name: str, arguments: dict[str, Any]) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def humaneval_oracle(observation: str, info: dict[str, Any]) -> str:
    """The canonical solution of this HumanEval problem, looked up by task id in the loaded data."""
    from rollgym.envs.code.humaneval_data import load_humaneval

    task_id = info.get("task_id")
    for row in load_humaneval():
        if row["task_id"] == task_id:
            return _fenced(row["prompt"] + row["canonical_solution"])
    raise ConfigError(f"The HumanEval oracle does not know task {task_id!r}; it only plays the loaded data set.")


def code_random_policy(observation: str, info: dict[str, Any], rng: np.random.Generator) -> str:
    """A random well-formed answer: a one-line body that returns a constant or echoes an argument."""
    meta = info.get("task_meta") or {}
    signature = str(meta.get("signature") or "(x)")
    inside = signature[1 : signature.find(")")] if ")" in signature else "x"
    first = inside.split(",")[0].split(":")[0].split("=")[0].strip().lstrip("*") or "None"
    body = _RANDOM_BODIES[int(rng.integers(len(_RANDOM_BODIES)))].format(arg=first)
    name = meta.get("entry_point") or "solution"
    return _fenced(f"def {name}{signature.split(' ->')[0]}:\n{body}")


def codegen_oracle(observation: str, info: dict[str, Any]) -> str:
    """The reference solution, regenerated from the env's public configuration, split and task index."""
    from rollgym.envs.code.codegen.source import CodeGenSource
    from rollgym.envs.code.config import CodeGenConfig

    index = info.get("task_index")
    if index is None:
        raise ConfigError("The CodeGen oracle plays tasks drawn by the env (with a task index), not given tasks.")
    fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in info["task_meta"]["config"].items()}
    config = CodeGenConfig(**fields)
    task = CodeGenSource(config, str(info.get("env_id") or "CodeGen-v0")).task(int(index), str(info["split"]))
    return _fenced(task.answer["reference"])


def _regenerated(info: dict[str, Any], source_class: Any, config_class: Any, default_id: str) -> Any:
    index = info.get("task_index")
    if index is None:
        raise ConfigError("This oracle plays tasks drawn by the env (with a task index), not given tasks.")
    config = config_class(**{k: tuple(v) if isinstance(v, list) else v for k, v in info["task_meta"]["config"].items()})
    return source_class(config, str(info.get("env_id") or default_id)).task(int(index), str(info["split"]))


def repo_repair_oracle(observation: str, info: dict[str, Any]) -> str:
    """First turn: write the correct module back with ``write_file``; then finish."""
    from rollgym.envs.code.config import RepoRepairConfig
    from rollgym.envs.code.repo_repair.source import RepoRepairSource

    if info.get("turn", 0) >= 1:
        return "The bug is fixed."
    fix = _regenerated(info, RepoRepairSource, RepoRepairConfig, "RepoRepair-v0").answer["fix"]
    return _hermes("write_file", {"path": fix["path"], "content": fix["content"]})


def repo_real_oracle(observation: str, info: dict[str, Any]) -> str:
    """Write each mutated file back as it was (one ``write_file`` per turn), then finish."""
    from rollgym.envs.code.repo_real.source import RepoRepairRealSource

    index = info.get("task_index")
    if index is None:
        raise ConfigError("This oracle plays tasks drawn by the env (with a task index), not given tasks.")
    bugs = int(info["task_meta"]["config"]["bugs"])
    fixes = RepoRepairRealSource(bugs, str(info.get("env_id") or "RepoRepairReal-v0")).task(
        int(index), str(info["split"])).answer["fix"]
    turn = int(info.get("turn", 0))
    if turn >= len(fixes):
        return "The bugs are fixed."
    return _hermes("write_file", {"path": fixes[turn]["path"], "content": fixes[turn]["content"]})


def repo_repair_random_policy(observation: str, info: dict[str, Any], rng: np.random.Generator) -> str:
    """A random tool call (reading, searching, running tests, a random edit) or, sometimes, finishing."""
    roll = rng.random()
    if roll < 0.2:
        return "Done."
    if roll < 0.4:
        return _hermes("run_tests", {})
    if roll < 0.6:
        return _hermes("list_files", {})
    if roll < 0.8:
        return _hermes("search", {"text": str(rng.choice(["return", "def", "+", "<", "if"]))})
    return _hermes("replace_in_file", {"path": "app/__init__.py", "old": "app", "new": str(rng.choice(["x", "app"]))})


def terminal_oracle(observation: str, info: dict[str, Any]) -> str:
    """First turn: the reference shell commands; then finish."""
    from rollgym.envs.code.config import TerminalConfig
    from rollgym.envs.code.terminal.source import TerminalSource

    if info.get("turn", 0) >= 1:
        return "Done."
    task = _regenerated(info, TerminalSource, TerminalConfig, "Terminal-v0")
    return _hermes("bash", {"command": task.answer["solution"]})


def terminal_gen_oracle(observation: str, info: dict[str, Any]) -> str:
    """First turn: the oracle shell commands, regenerated from the split, index and public config; then finish."""
    from rollgym.envs.code.terminal_gen.source import TerminalGenConfig, TerminalGenSource

    if info.get("turn", 0) >= 1:
        return "Done."
    task = _regenerated(info, TerminalGenSource, TerminalGenConfig, "TerminalGen-v0")
    return _hermes("bash", {"command": task.answer["solution"]})


_RANDOM_COMMANDS = ("ls -la", "cat *", "echo 0 > answer.txt", "mkdir -p archive", "chmod 644 *", "touch count.sh",
                    "tar -cf backup.tar.gz .", "rm -f answer.txt", "pwd", "echo hello")


def terminal_random_policy(observation: str, info: dict[str, Any], rng: np.random.Generator) -> str:
    """A random common shell command, or, sometimes, finishing."""
    if rng.random() < 0.25:
        return "Done."
    return _hermes("bash", {"command": str(rng.choice(_RANDOM_COMMANDS))})
