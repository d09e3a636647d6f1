"""Countdown: reach a target number with ``+ - * /`` over given numbers (``Countdown-v0``).

* :mod:`~rollgym.envs.countdown.config`: :class:`CountdownConfig`, the validated options.
* :mod:`~rollgym.envs.countdown.generator`: :class:`CountdownGenerator`, solvable tasks per split.
* :mod:`~rollgym.envs.countdown.env`: :class:`CountdownEnv`, the Gymnasium env.
* :mod:`~rollgym.envs.countdown.solver`: :func:`solve_countdown` and the oracle and random policies.

The verifier is :func:`rollgym.verifiers.countdown.verify_countdown`.
"""

from rollgym.core.registration import register_env
from rollgym.envs.countdown.config import CountdownConfig
from rollgym.envs.countdown.env import CountdownEnv
from rollgym.envs.countdown.generator import CountdownGenerator, content_key, countdown_task, format_prompt
from rollgym.envs.countdown.solver import countdown_oracle, countdown_random_policy, solve_countdown

__all__ = [
    "CountdownConfig",
    "CountdownEnv",
    "CountdownGenerator",
    "content_key",
    "countdown_oracle",
    "countdown_random_policy",
    "countdown_task",
    "format_prompt",
    "solve_countdown",
]

register_env(
    "Countdown-v0",
    "rollgym.envs.countdown.env:CountdownEnv",
    description="Reach a target with + - * / over 4 numbers, each used exactly once; binary reward.",
    family="puzzles",
    oracle="rollgym.envs.countdown:countdown_oracle",
    random_policy="rollgym.envs.countdown:countdown_random_policy",
    private_state="rollgym.core.private:task_answer",
    grader="pure",
)
