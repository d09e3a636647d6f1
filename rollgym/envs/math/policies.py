"""The MATH envs' oracle: it boxes the published gold answer of the task.

These are fixed evaluation sets, so there is no solver to run; the oracle looks
the task's answer up by ``info["task_id"]`` in the dataset the env loaded (the
answer never appears in an observation or in ``info``). It checks the env and
the verifier end to end: every task must score 1.0. With a tool env it answers
on the first turn, without calling the tool.
"""

from __future__ import annotations

from typing import Any

from rollgym.core.errors import ConfigError
from rollgym.envs.math.datasets import gold_answer


def oracle_policy(observation: str, info: dict[str, Any]) -> str:
    """``The answer is $\\boxed{<gold>}$.`` for the task named by ``info["task_id"]``.

    Example:
        >>> import gymnasium as gym, rollgym  # doctest: +SKIP
        >>> env = gym.make("AIME24-v1")  # doctest: +SKIP
        >>> obs, info = env.reset(seed=0)  # doctest: +SKIP
        >>> env.step(oracle_policy(obs, info))[1]  # doctest: +SKIP
        1.0
    """
    task_id = info.get("task_id")
    if not task_id:
        raise ConfigError("The MATH oracle needs info['task_id']; pass the info dict that reset() returns.")
    return f"The answer is $\\boxed{{{gold_answer(str(task_id))}}}$."
