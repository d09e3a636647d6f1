"""Helpers for ``gymnasium.make_vec`` over rollgym envs: per-env infos and a batch agent.

A vector env returns its infos as one dict of arrays: ``infos["correct"][i]`` is
sub-env ``i``'s value, ``infos["_correct"][i]`` says whether sub-env ``i`` set it
at all, and nested dicts (``task_meta``, ``details``, ``final_info``) are split the
same way, level by level. Agents read one plain ``info`` dict per episode, so
:func:`split_infos` turns the batch back into one dict per sub-env, and
:class:`VectorAgent` gives every sub-env its own copy of an agent and acts on a
whole batch of observations::

    import gymnasium as gym
    import rollgym
    from rollgym.agents import OracleAgent
    from rollgym.vector import VectorAgent, split_infos

    envs = gym.make_vec("Countdown-v0", num_envs=4, vectorization_mode="sync")
    agent = VectorAgent(OracleAgent(), envs)
    observations, infos = envs.reset(seed=0)
    observations, rewards, terminated, truncated, infos = envs.step(agent.act(observations, infos))
    [info["correct"] for info in split_infos(infos)]   # [True, True, True, True]

Autoreset: with gymnasium's default ``NEXT_STEP`` mode, a sub-env that finished
ignores the action of the following step and resets instead. Pass the previous
step's ``terminated | truncated`` as ``done=`` and :meth:`VectorAgent.act` resets
that sub-env's agent and sends it an empty action; with ``SAME_STEP`` the new
episode's observation arrives at once, so the agent is reset and acts on it.

``AsyncVectorEnv`` passes observations through shared memory by default, and
gymnasium's own handling of text spaces there does not work for rollgym's
observations (it reads the shared buffer once, when the vector env is built, and
writes only characters of a fixed charset), so every observation would arrive as
``"aaaa..."``. This module (imported by ``import rollgym``) registers shared-memory
functions for :class:`~rollgym.core.spaces.TextSpace`: any Unicode text, read from the
buffer at every step.
"""

from __future__ import annotations

import asyncio
import copy
import multiprocessing
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import ModuleType
from typing import Any, Protocol, overload, runtime_checkable

import numpy as np
from gymnasium.vector.utils import shared_memory as _shared

from rollgym.core.agent import Agent, SpawningAgent, capabilities
from rollgym.core.closing import Closeable
from rollgym.core.errors import ConfigError
from rollgym.core.spaces import TextSpace

__all__ = ["VectorAgent", "split_infos"]


def split_infos(infos: Mapping[str, Any], num_envs: int | None = None) -> list[dict[str, Any]]:
    """Split a vector env's ``infos`` into one ``info`` dict per sub-env.

    Keys a sub-env did not set (its ``_key`` mask entry is ``False``) are left out of
    its dict, nested dicts are split recursively, and NumPy scalars become Python
    values, so ``info["correct"]`` is a ``bool`` and ``info["task_index"]`` an ``int``,
    as a single env returns them. Per-env arrays (an image, a board) stay arrays.

    Args:
        infos: The ``infos`` of ``VectorEnv.reset`` or ``VectorEnv.step``.
        num_envs: The number of sub-envs; read from the masks when omitted (pass it
            when ``infos`` may be empty, e.g. ``envs.num_envs``).

    Returns:
        A list of ``num_envs`` dicts, in sub-env order.

    Raises:
        ConfigError: when ``infos`` is not a mapping or its arrays disagree on the number of sub-envs.

    Example:
        >>> import numpy as np
        >>> infos = {"correct": np.array([True, False]), "_correct": np.array([True, True]),
        ...          "details": {"reason": np.array(["", "wrong"], dtype=object), "_reason": np.array([False, True])},
        ...          "_details": np.array([True, True])}
        >>> split_infos(infos)
        [{'correct': True, 'details': {}}, {'correct': False, 'details': {'reason': 'wrong'}}]
    """
    if not isinstance(infos, Mapping):
        raise ConfigError(f"split_infos expects the infos dict of a vector env, got {type(infos).__name__}.")
    n = _count(infos) if num_envs is None else num_envs
    if n is None:
        return []
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ConfigError(f"num_envs must be a non-negative integer, got {num_envs!r}.")
    return [_one(infos, i, n) for i in range(n)]


def _count(infos: Mapping[str, Any]) -> int | None:
    """The number of sub-envs, from the first mask (``_key`` array) found at any depth."""
    for key, value in infos.items():
        if _is_mask(infos, key):
            return len(value)
    for value in infos.values():
        if isinstance(value, Mapping):
            found = _count(value)
            if found is not None:
                return found
    return None


def _is_mask(infos: Mapping[str, Any], key: str) -> bool:
    return (key.startswith("_") and key[1:] in infos and isinstance(infos[key], np.ndarray)
            and infos[key].dtype == np.bool_)


def _one(infos: Mapping[str, Any], i: int, n: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in infos.items():
        if _is_mask(infos, key):
            continue
        mask = infos.get(f"_{key}")
        if isinstance(mask, np.ndarray) and mask.dtype == np.bool_:
            if len(mask) != n:
                raise ConfigError(f"infos[{'_' + key!r}] has {len(mask)} entries for {n} sub-envs.")
            if not mask[i]:
                continue
        if isinstance(value, Mapping):
            out[key] = _one(value, i, n)
        elif isinstance(value, np.ndarray | list | tuple) and len(value) == n:
            out[key] = _plain(value[i])
        else:  # a value shared by every sub-env (not something gymnasium writes itself)
            out[key] = value
    return out


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


class VectorAgent(Closeable):
    """Act on a batch of observations with one copy of an agent per sub-env.

    Args:
        agent: An :class:`~rollgym.core.Agent` (each sub-env gets ``agent.spawn()`` when
            the agent has it, else a deep copy), or a zero-argument factory that builds one.
        envs: The vector env (for ``num_envs`` and its autoreset mode), or the number of sub-envs.
        autoreset: ``"next_step"`` (gymnasium's default), ``"same_step"`` or ``"disabled"``;
            read from ``envs.metadata["autoreset_mode"]`` when ``envs`` is a vector env.

    Agents that generate asynchronously (``aact``, e.g. :class:`~rollgym.agents.chat.ChatAgent`)
    act concurrently on one event loop, so a batching backend answers the whole batch at once.
    Call :meth:`close` (or use ``with``) to close that loop.
    """

    def __init__(self, agent: Agent | Callable[[], Agent], envs: Any, *, autoreset: str | None = None) -> None:
        if isinstance(envs, int) and not isinstance(envs, bool):
            num_envs, mode = envs, "next_step"
        elif hasattr(envs, "num_envs"):
            num_envs = int(envs.num_envs)
            raw = getattr(envs, "metadata", {}).get("autoreset_mode", "next_step")
            mode = str(getattr(raw, "name", raw)).lower()
        else:
            raise ConfigError(f"VectorAgent needs a vector env or a number of sub-envs, got {type(envs).__name__}.")
        if num_envs < 1:
            raise ConfigError(f"VectorAgent needs at least one sub-env, got {num_envs}.")
        mode = (autoreset or mode).lower().replace("-", "_")
        if mode not in {"next_step", "same_step", "disabled"}:
            raise ConfigError(f"autoreset must be 'next_step', 'same_step' or 'disabled', got {autoreset!r}.")
        self.num_envs, self.autoreset = num_envs, mode
        self.agents: list[Agent] = [_make(agent, first=i == 0) for i in range(num_envs)]
        self._asynchronous = [capabilities(a).asynchronous for a in self.agents]  # read once, where accepted
        self.name = f"vector:{_name(self.agents[0])}"
        self._loop: asyncio.AbstractEventLoop | None = None

    def reset(self, seed: int | None = None) -> None:
        """Reset every sub-env's agent (call after ``envs.reset``); sub-env ``i`` gets ``seed + i``."""
        for i, agent in enumerate(self.agents):
            agent.reset(None if seed is None else seed + i)

    def act(self, observations: Sequence[str], infos: Mapping[str, Any],
            done: Sequence[bool] | np.ndarray | None = None) -> tuple[str, ...]:
        """One action per sub-env, as the tuple ``envs.step`` takes.

        Args:
            observations: The batch of observations from ``envs.reset`` or ``envs.step``.
            infos: The vector env's ``infos`` (split with :func:`split_infos`).
            done: The previous step's ``terminated | truncated``: those sub-envs start a
                new episode, so their agents are reset (under ``next_step`` autoreset they
                get an empty action, which the env ignores while it resets).
        """
        if len(observations) != self.num_envs:
            raise ConfigError(f"Expected {self.num_envs} observations, got {len(observations)}.")
        per_env = split_infos(infos, self.num_envs)
        finished = [False] * self.num_envs if done is None else [bool(d) for d in done]
        if len(finished) != self.num_envs:
            raise ConfigError(f"Expected {self.num_envs} done flags, got {len(finished)}.")
        actions: list[str | None] = [None] * self.num_envs
        for i, agent in enumerate(self.agents):
            if finished[i] and self.autoreset != "disabled":
                agent.reset(None)
                if self.autoreset == "next_step":
                    actions[i] = ""  # the sub-env resets on this step and ignores its action
        todo = [i for i in range(self.num_envs) if actions[i] is None]
        asynchronous = [i for i in todo if self._asynchronous[i]]
        for i in todo:
            if i not in asynchronous:
                actions[i] = self.agents[i].act(observations[i], per_env[i])
        if asynchronous:
            async def gather() -> list[str]:
                return list(await asyncio.gather(*(
                    self.agents[i].aact(observations[i], per_env[i]) for i in asynchronous)))  # type: ignore[attr-defined]

            if self._loop is None or self._loop.is_closed():
                self._loop = asyncio.new_event_loop()
            for i, action in zip(asynchronous, self._loop.run_until_complete(gather())):
                actions[i] = action
        return tuple(a if a is not None else "" for a in actions)

    def close(self) -> None:
        """Close the event loop used for asynchronous agents (safe to call twice)."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.close()
        self._loop = None


def _name(agent: Agent) -> str:
    try:
        return str(agent.name)
    except AttributeError:  # an agent without a name goes by its class
        return type(agent).__name__


@runtime_checkable
class Acting(Protocol):
    """Anything with ``act(observation, info)``: an agent, as opposed to a factory of agents."""

    def act(self, observation: Any, info: dict[str, Any]) -> str: ...


def _make(agent: Agent | Callable[[], Agent], *, first: bool) -> Agent:
    if isinstance(agent, Acting):
        if first:
            return agent  # type: ignore[return-value]
        if isinstance(agent, SpawningAgent):
            return agent.spawn()
        return copy.deepcopy(agent)  # type: ignore[return-value]
    if callable(agent):
        built = agent()
        if not isinstance(built, Acting):
            raise ConfigError(f"The agent factory returned {type(built).__name__}, which has no act() method.")
        return built  # type: ignore[no-any-return]
    raise ConfigError(f"VectorAgent needs an agent with act() or a factory, got {type(agent).__name__}.")


# -- TextSpace in AsyncVectorEnv's shared memory ------------------------------------------------------------
# Each sub-env's slot holds the text's length in code points, then the code points (UTF-32).


class SharedTexts(Sequence[str]):
    """The texts in a shared buffer, decoded when read: what ``AsyncVectorEnv`` keeps as its observations.

    ``envs.step`` returns a tuple copy of it (``copy=True``, gymnasium's default); with
    ``copy=False`` this live view itself, as for arrays.
    """

    def __init__(self, buffer: Any, n: int, slot: int) -> None:
        self._buffer, self._n, self._slot = buffer, n, slot

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...

    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(self._n)))
        if not -self._n <= index < self._n:
            raise IndexError(index)
        data = np.frombuffer(self._buffer.get_obj(), dtype=np.int32)
        start = (index % self._n) * self._slot
        length = int(data[start])
        return data[start + 1:start + 1 + length].tobytes().decode("utf-32-le", errors="surrogatepass")

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(self._n))

    def __eq__(self, other: object) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, SharedTexts) else other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)

    def __repr__(self) -> str:
        return repr(tuple(self))


@_shared.create_shared_memory.register(TextSpace)
def _create_text_memory(space: TextSpace, n: int = 1, ctx: ModuleType = multiprocessing) -> Any:
    return ctx.Array(np.dtype(np.int32).char, n * (space.max_length + 1))  # type: ignore[attr-defined]


@_shared.read_from_shared_memory.register(TextSpace)
def _read_text_memory(space: TextSpace, shared_memory: Any, n: int = 1) -> SharedTexts:
    return SharedTexts(shared_memory, n, space.max_length + 1)


@_shared.write_to_shared_memory.register(TextSpace)
def _write_text_memory(space: TextSpace, index: int, value: str, shared_memory: Any) -> None:
    slot = space.max_length + 1
    codes = np.frombuffer(str(value).encode("utf-32-le", errors="surrogatepass"), dtype=np.int32)
    if len(codes) > space.max_length:
        raise ConfigError(f"An observation of {len(codes)} characters does not fit the space's {space.max_length}.")
    data = np.frombuffer(shared_memory.get_obj(), dtype=np.int32)
    data[index * slot] = len(codes)
    data[index * slot + 1:index * slot + 1 + len(codes)] = codes
