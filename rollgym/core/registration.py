"""Registration of rollgym envs with Gymnasium, plus rollgym's own spec record.

Each env module calls :func:`register_env` next to its code; ``import rollgym``
imports those modules, and ``gym.make("rollgym:Countdown-v0")`` works without
the import because Gymnasium imports the module named before the colon.

Besides Gymnasium's ``EnvSpec``, every id has an :class:`EnvInfo` with a
one-line description and a *content hash* of every module its entry point
imports, computed from the import closure (see :mod:`rollgym.core.spec_hash`):
generator, prompt, verifier, opponents, and the core code they use. The hash
ignores docstrings, comments and formatting, so it changes exactly when code
does; a change of hash without a ``-vN`` bump is a bug that
``tests/test_spec_hashes.py`` catches. Results and submissions carry the hash.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import gymnasium as gym

from rollgym.core.errors import UnknownEnvError
from rollgym.core.spec_hash import closure_hash, import_closure, module_source_hash

__all__ = ["EnvInfo", "env_info", "list_envs", "make", "module_source_hash", "register_env"]

_REGISTRY: dict[str, EnvInfo] = {}


@dataclass(frozen=True)
class EnvInfo:
    """rollgym's record of one registered env id.

    Attributes:
        id: The env id, e.g. ``"Sudoku4x4-v0"``.
        entry_point: ``"module:Class"`` as given to Gymnasium.
        description: One line for ``rollgym list``.
        family: The task family, e.g. ``"puzzles"`` or ``"math"``.
        components: Extra modules to hash with the entry point's import closure, for code the env
            loads by name (which no import statement shows); usually empty.
        kwargs: Constructor arguments that this id fixes.
        oracle: ``"module:function"`` of a reference policy ``f(observation, info) -> action``
            that solves the env, used by :class:`~rollgym.agents.OracleAgent`.
        random_policy: ``"module:function"`` of ``f(observation, info, rng) -> action``,
            a uniformly random well-formed action, used by :class:`~rollgym.agents.RandomAgent`.
    """

    id: str
    entry_point: str
    description: str
    family: str
    components: tuple[str, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    oracle: str | None = None
    random_policy: str | None = None

    @cached_property
    def hashed_modules(self) -> tuple[str, ...]:
        """Every module the content hash covers: the entry point's import closure, plus ``components``."""
        return import_closure([self.entry_point.partition(":")[0], *self.components])

    @cached_property
    def content_hash(self) -> str:
        """A 16-hex-digit hash of the id, its fixed arguments and the code of :attr:`hashed_modules`."""
        h = hashlib.sha256()
        h.update(self.id.encode())
        h.update(json.dumps(self.kwargs, sort_keys=True, default=repr).encode())
        h.update(closure_hash(self.hashed_modules).encode())
        return h.hexdigest()[:16]


def register_env(
    id: str,
    entry_point: str,
    *,
    description: str,
    family: str,
    components: tuple[str, ...] | list[str] = (),
    kwargs: dict[str, Any] | None = None,
    max_episode_steps: int | None = None,
    oracle: str | None = None,
    random_policy: str | None = None,
) -> EnvInfo:
    """Register ``id`` with Gymnasium and record its :class:`EnvInfo`.

    Example:
        >>> info = register_env("Demo-v0", "rollgym.envs.countdown:CountdownEnv",
        ...     description="demo", family="demo")
        >>> info.id in gym.registry
        True
    """
    kwargs = dict(kwargs or {})
    info = EnvInfo(id, entry_point, description, family, tuple(components), kwargs, oracle, random_policy)
    if id in gym.registry and id in _REGISTRY and _REGISTRY[id] == info:
        return _REGISTRY[id]
    gym.register(id=id, entry_point=entry_point, kwargs=kwargs, max_episode_steps=max_episode_steps)
    _REGISTRY[id] = info
    return info


def _bare_id(env_id: str) -> str:
    return env_id.split(":", 1)[1] if ":" in env_id else env_id


def env_info(env_id: str) -> EnvInfo:
    """The :class:`EnvInfo` of a registered id (``"rollgym:"`` prefix allowed).

    Raises:
        UnknownEnvError: with the closest registered ids when ``env_id`` is unknown.
    """
    bare = _bare_id(env_id)
    if bare in _REGISTRY:
        return _REGISTRY[bare]
    close = difflib.get_close_matches(bare, list(_REGISTRY), n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    raise UnknownEnvError(f"Unknown env id {env_id!r}.{hint} Run `rollgym list` to see every id.")


def list_envs() -> list[EnvInfo]:
    """Every registered rollgym env, sorted by family then id."""
    return sorted(_REGISTRY.values(), key=lambda e: (e.family, e.id))


def make(env_id: str, **kwargs: Any) -> gym.Env[Any, Any]:
    """``gym.make`` with rollgym's clear error for unknown ids and bad arguments.

    Example:
        >>> import rollgym
        >>> env = rollgym.make("Countdown-v0")
    """
    info = env_info(env_id)
    try:
        return gym.make(info.id, **kwargs)
    except TypeError as exc:
        if "unexpected keyword argument" in str(exc):
            from rollgym.core.errors import ConfigError

            raise ConfigError(
                f"{info.id} does not take that argument ({exc}); see its docstring for the options."
            ) from exc
        raise
