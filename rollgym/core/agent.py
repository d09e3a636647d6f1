"""The ``Agent`` protocol: what the rollout collector, the benchmarks and the CLI drive.

It lives in ``core`` so that every layer above (agents, rollout, train,
benchmarks) can name it; the reference agents are in :mod:`rollgym.agents`.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Agent(Protocol):
    """A step-by-step policy: it reads an observation and its ``info`` and returns an action.

    ``reset(seed)`` is called at the start of every episode; agents with no
    per-episode state may ignore it. Agents that generate asynchronously may add
    ``async aact(observation, info) -> str``; the async collector prefers it.

    Example:
        >>> class Echo:
        ...     name = "echo"
        ...     def reset(self, seed: int | None = None) -> None: ...
        ...     def act(self, observation: str, info: dict[str, Any]) -> str:
        ...         return observation
        >>> isinstance(Echo(), Agent)
        True
    """

    name: str

    def reset(self, seed: int | None = None) -> None: ...

    def act(self, observation: str, info: dict[str, Any]) -> str: ...


class SeededAgent:
    """Base of agents that draw from their own NumPy generator: seeded when built, seeded again by
    ``reset(seed)`` (``reset(None)`` keeps the generator running). Subclasses write ``act``."""

    name = "random"

    def __init__(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
