"""What an episode hides from the agent: the ``private_state`` hooks that registrations declare.

Every id of rollgym's families names, at registration, a function ``f(env) -> dict`` that returns
the values its running episode keeps from the agent until the episode ends
(:attr:`~rollgym.core.registration.EnvInfo.private_state`). The attack battery
(``tests/test_attack_battery.py``) resets each id, takes a few steps, and checks that none of these
values reaches an observation or ``info``. Families whose only secret is the task's answer name
:func:`task_answer`; families with more (the other seat's card, a bot's seed) write their own hook
next to their code, outside the modules an env imports, so the hook never changes an id's hash.
"""

from __future__ import annotations

from typing import Any

__all__ = ["no_private_state", "task_answer"]


def task_answer(env: Any) -> dict[str, Any]:
    """``{"answer": ...}``: the running task's hidden answer, the one secret of most families.

    Example:
        >>> import rollgym
        >>> env = rollgym.make("Countdown-v0")
        >>> _ = env.reset(seed=0)
        >>> task_answer(env.unwrapped) == {"answer": env.unwrapped.task.answer}
        True
    """
    task = getattr(env, "task", None)
    return {"answer": getattr(task, "answer", None)}


def no_private_state(env: Any) -> dict[str, Any]:
    """``{}``: for envs that hide nothing in text (the world model: its observations are arrays,
    and what it must predict is the next frames, which it is shown after predicting)."""
    return {}
