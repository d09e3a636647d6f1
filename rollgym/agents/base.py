"""The reference agents every env supports: oracle, random and human.

The :class:`~rollgym.core.agent.Agent` protocol they follow lives in ``core``
(re-exported here and from :mod:`rollgym.agents`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from rollgym.core.agent import Agent, SeededAgent
from rollgym.core.errors import ConfigError
from rollgym.core.registration import env_info

__all__ = ["AGENTS", "Agent", "HumanAgent", "OracleAgent", "RandomAgent", "make_agent"]


def _resolve(entry_point: str) -> Callable[..., Any]:
    module, _, attr = entry_point.partition(":")
    return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]


def _env_id(info: dict[str, Any]) -> str:
    env_id = info.get("env_id")
    if not env_id:
        raise ConfigError("The agent needs info['env_id']; pass the info dict that reset() and step() return.")
    return str(env_id)


class OracleAgent:
    """Plays the env's registered reference solution (a solver, not the hidden answer).

    Example:
        >>> import gymnasium as gym, rollgym
        >>> env = gym.make("Countdown-v0")
        >>> obs, info = env.reset(seed=0)
        >>> agent = OracleAgent()
        >>> env.step(agent.act(obs, info))[1]
        1.0
    """

    name = "oracle"

    def reset(self, seed: int | None = None) -> None:
        """Oracles are deterministic; nothing to reset."""

    def check_env(self, env_id: str) -> None:
        """Raise :class:`ConfigError` before any work when ``env_id`` has no registered oracle."""
        if env_info(env_id).oracle is None:
            raise ConfigError(f"{env_info(env_id).id} has no oracle agent; use another agent, e.g. --agent random.")

    def act(self, observation: str, info: dict[str, Any]) -> str:
        entry = env_info(_env_id(info)).oracle
        if entry is None:
            raise ConfigError(f"{info['env_id']} has no oracle agent; use another agent.")
        return str(_resolve(entry)(observation, info))


class RandomAgent(SeededAgent):
    """Samples a random well-formed action from the env's registered random policy.

    Envs without one get random printable text. Seeded through :meth:`reset`.
    """

    def act(self, observation: str, info: dict[str, Any]) -> str:
        entry = env_info(_env_id(info)).random_policy
        if entry is None:
            alphabet = list("abcdefghijklmnopqrstuvwxyz0123456789 +-*/()")
            return "".join(self.rng.choice(alphabet, size=int(self.rng.integers(1, 40))))
        return str(_resolve(entry)(observation, info, self.rng))


class HumanAgent:
    """A person at the terminal: prints each observation and reads one action.

    A line ending in a backslash continues on the next line, for multi-line answers.
    """

    name = "human"

    def __init__(self, read: Callable[[str], str] = input, write: Callable[[str], None] = print) -> None:
        self._read = read
        self._write = write

    def reset(self, seed: int | None = None) -> None:
        """People need no seed."""

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if observation:
            self._write(observation)
        lines: list[str] = []
        prompt = "> "
        while True:
            line = self._read(prompt)
            if line.endswith("\\"):
                lines.append(line[:-1])
                prompt = ". "
                continue
            lines.append(line)
            return "\n".join(lines)


AGENTS: dict[str, Callable[..., Agent]] = {
    "oracle": OracleAgent,
    "random": RandomAgent,
    "human": HumanAgent,
}


def make_agent(name: str, **kwargs: Any) -> Agent:
    """Build a reference agent by name: ``oracle``, ``random`` or ``human``."""
    if name not in AGENTS:
        raise ConfigError(f"Unknown agent {name!r}; use one of {', '.join(sorted(AGENTS))}.")
    return AGENTS[name](**kwargs)
