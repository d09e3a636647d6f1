"""The ``Agent`` protocol: what the rollout collector, the benchmarks and the CLI drive.

It lives in ``core`` so that every layer above (agents, rollout, train,
benchmarks) can name it; the reference agents are in :mod:`rollgym.agents`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeGuard, TypeVar, runtime_checkable

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


# -- capabilities ---------------------------------------------------------------------------------
# What an agent can do beyond ``act`` is declared by the protocols below, and the collection code asks
# ``isinstance(agent, AsyncAgent)`` (once, where it accepts the agent: :func:`capabilities`) instead of
# probing attributes one by one. An agent class gets a capability by having the members, nothing else.


@runtime_checkable
class AsyncAgent(Agent, Protocol):
    """Generates asynchronously: the async collector and the tree rollouts await ``aact``."""

    async def aact(self, observation: Any, info: dict[str, Any]) -> str: ...


@runtime_checkable
class SpawningAgent(Agent, Protocol):
    """Makes a fresh agent of its kind (same backend and caches, no episode state) for an episode
    that runs beside this one; the collectors use it instead of a deep copy."""

    def spawn(self) -> Agent: ...


@runtime_checkable
class ForkingAgent(Agent, Protocol):
    """Copies itself in the middle of an episode (tree rollouts branch from it); ``turns`` is the
    episode's turn records so far, which the branch shares with its parent."""

    turns: list[Any]

    def fork(self, seed: int | None = None) -> Agent: ...


@runtime_checkable
class TokenRecordingAgent(Agent, Protocol):
    """Keeps the exact tokens of its episode: ``token_record()`` is the prompt, completion, loss mask and
    logprobs a trainer reads; ``tokens_used()`` counts the tokens after the first prompt (the token budget);
    ``record_reward`` attaches the env's reward to the last turn."""

    def token_record(self) -> Any: ...

    def tokens_used(self) -> int: ...

    def record_reward(self, reward: float) -> None: ...


@runtime_checkable
class EnvCheckingAgent(Agent, Protocol):
    """Says before any work whether it can play an env id (an oracle without a solver for it cannot):
    ``check_env`` raises :class:`~rollgym.core.errors.ConfigError` when it cannot."""

    def check_env(self, env_id: str) -> None: ...


@runtime_checkable
class BackedAgent(Agent, Protocol):
    """Generates with a model backend (``backend``: an :mod:`rollgym.agents.backends` object), so that the
    collector can report the backend's counters and pick its batch size."""

    backend: Any


# Names a class body holds that are not protocol members (what ``typing`` leaves out too).
_NOT_MEMBERS = frozenset({
    "__abstractmethods__", "__annotations__", "__dict__", "__doc__", "__init__", "__module__", "__new__",
    "__slots__", "__subclasshook__", "__weakref__", "__class_getitem__", "__parameters__", "__orig_bases__",
    "__protocol_attrs__", "__non_callable_proto_members__", "__qualname__", "__static_attributes__",
    "__firstlineno__", "__type_params__", "_is_protocol", "_is_runtime_protocol", "__init_subclass__",
})


@functools.cache
def protocol_members(protocol: type) -> tuple[str, ...]:
    """The member names a runtime-checkable protocol asks for (its own and its protocol bases'), read once."""
    names: set[str] = set()
    for base in protocol.__mro__:
        if base in (Protocol, object) or base.__name__ == "Generic" or not getattr(base, "_is_protocol", False):
            continue
        names.update(n for n in (*base.__dict__, *inspect.get_annotations(base))
                     if n not in _NOT_MEMBERS and not n.startswith("_abc_"))
    return tuple(sorted(names))


_P = TypeVar("_P")


def conforms(obj: object, protocol: Callable[..., _P]) -> TypeGuard[_P]:
    """``isinstance(obj, protocol)`` for a runtime-checkable protocol, without re-walking the protocol each call.

    On Python 3.11 every ``isinstance`` check against a protocol walks the protocol's classes again (about 13 CPU
    microseconds); the collection code asks several per episode and the game envs one per opponent move, which made
    self-play episodes about a fifth slower (bench/bench_refactor_ab.py). This reads the members once
    (:func:`protocol_members`) and checks that ``obj`` has each, as ``isinstance`` does;
    ``tests/core/test_agent_capabilities.py`` checks that the two agree.
    """
    return all(hasattr(obj, name) for name in protocol_members(protocol))


@dataclass(frozen=True)
class Capabilities:
    """What one agent can do, read once where it is accepted (see :func:`capabilities`)."""

    asynchronous: bool
    spawns: bool
    forks: bool
    records_tokens: bool
    checks_env: bool
    backed: bool


def capabilities(agent: Agent) -> Capabilities:
    """The capabilities an agent declares by its members (the protocols above).

    Example:
        >>> class Echo:
        ...     name = "echo"
        ...     def reset(self, seed=None): ...
        ...     def act(self, observation, info): return observation
        >>> capabilities(Echo()).asynchronous
        False
    """
    asynchronous = conforms(agent, AsyncAgent) and inspect.iscoroutinefunction(agent.aact)  # type: ignore[attr-defined]
    return Capabilities(asynchronous=asynchronous, spawns=conforms(agent, SpawningAgent),
                        forks=conforms(agent, ForkingAgent), records_tokens=conforms(agent, TokenRecordingAgent),
                        checks_env=conforms(agent, EnvCheckingAgent), backed=conforms(agent, BackedAgent))


class SeededAgent:
    """Base of agents that draw from their own NumPy generator: seeded when built, seeded again by
    ``reset(seed)`` (``reset(None)`` keeps the generator running). Subclasses write ``act``."""

    name = "random"

    def __init__(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
