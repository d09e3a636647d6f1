"""What the code and terminal envs hide from the agent: their ``private_state`` hook.

A code task's answer holds what the agent is shown (the starting files, the instruction, the
project and the test command) beside what it is not (the reference solution, the hidden tests'
calls and expected values, the fix, the final checks). The hook returns the second part. No env
imports this module, so it is not part of any id's content hash (see :mod:`rollgym.core.private`).
"""

from __future__ import annotations

from typing import Any

from rollgym.core.private import task_answer

__all__ = ["SHOWN_ANSWER_KEYS", "code_private"]

SHOWN_ANSWER_KEYS = frozenset({"files", "instruction", "modes", "imports", "project", "run", "deselect"})
"""Keys of a code task's answer whose values the agent is shown (in the prompt or through its tools)."""


def code_private(env: Any) -> dict[str, Any]:
    """The hidden part of the running code task's answer.

    Example:
        >>> import rollgym
        >>> env = rollgym.make("RepoRepair-v0")
        >>> _ = env.reset(seed=0)
        >>> sorted(code_private(env.unwrapped)["answer"])
        ['calls', 'expected', 'fix']
    """
    answer = task_answer(env)["answer"]
    if not isinstance(answer, dict):
        return {"answer": answer}
    files = answer.get("files")
    shown = set(files) if isinstance(files, dict) else set()  # the paths of the starting files
    return {"answer": _without(shown, {k: v for k, v in answer.items() if k not in SHOWN_ANSWER_KEYS})}


def _without(paths: set[str], value: Any) -> Any:
    """``value`` with every string equal to one of ``paths`` (a file the agent is shown) left out."""
    if isinstance(value, dict):
        return {k: _without(paths, v) for k, v in value.items() if not (isinstance(v, str) and v in paths)}
    if isinstance(value, (list, tuple)):
        return [_without(paths, v) for v in value if not (isinstance(v, str) and v in paths)]
    return value
