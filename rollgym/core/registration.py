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
import functools
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


_LINEAGE: dict[str, list[str]] | None = None


def earlier_hashes(env_id: str) -> frozenset[str]:
    """The content hashes ``env_id`` had before each re-pin (a refactor that, by the project's rule,
    cannot change tasks or scores), as ``rollgym/core/spec_lineage.json`` lists them; empty for an id
    never re-pinned or not rollgym's own.

    The re-pin command appends to that file, so a bundle recorded before a refactor still verifies
    and a results file recorded before one still resumes (its episodes are replayed, or continued, on
    the current code all the same).
    """
    global _LINEAGE
    if _LINEAGE is None:
        from importlib import resources

        text = (resources.files("rollgym.core") / "spec_lineage.json").read_text(encoding="utf-8")
        _LINEAGE = {str(k): [str(h) for h in v] for k, v in json.loads(text).items()}
    return frozenset(_LINEAGE.get(env_id, []))


def equivalent_hashes(info: EnvInfo) -> frozenset[str]:
    """The content hashes that stand for ``info``'s id as it is now: its own and its :func:`earlier_hashes`."""
    return frozenset([info.content_hash, *earlier_hashes(info.id)])


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


# gym.make's own keyword arguments, taken before the env's constructor sees the rest
_MAKE_OPTIONS = ("max_episode_steps", "disable_env_checker", "render_mode")


def env_options(env_id: str) -> tuple[str, ...] | None:
    """The keyword arguments ``make(env_id, ...)`` accepts, from the env class's constructors.

    Follows ``**kwargs`` up the class hierarchy (a game env passes them to its base);
    ``None`` when a constructor accepts arbitrary keywords, so no list is complete.

    Example:
        >>> "num_numbers" in env_options("Countdown-v0")
        True
    """
    return _options_of(env_info(env_id).entry_point)


@functools.lru_cache(maxsize=256)
def _options_of(entry_point: str) -> tuple[str, ...] | None:
    """:func:`env_options` of an entry point (a class's signature does not change: computed once)."""
    import importlib
    import inspect

    module, _, name = entry_point.partition(":")
    cls = getattr(importlib.import_module(module), name)
    options: set[str] = set(_MAKE_OPTIONS)
    for klass in inspect.getmro(cls) if inspect.isclass(cls) else [cls]:
        init = klass.__dict__.get("__init__") if inspect.isclass(klass) else klass
        if init is None:
            continue
        parameters = list(inspect.signature(init).parameters.values())
        options |= {p.name for p in parameters[1 if inspect.isclass(klass) else 0:]
                    if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        if not any(p.kind is p.VAR_KEYWORD for p in parameters):
            return tuple(sorted(options))
    return None


def make(env_id: str, **kwargs: Any) -> gym.Env[Any, Any]:
    """``gym.make`` with rollgym's clear errors for unknown ids and unknown arguments.

    An argument the env does not take raises :class:`~rollgym.core.errors.ConfigError`
    before anything is built, naming the closest option and listing them all. An older
    version of an id (``MATH500-v0`` beside ``MATH500-v1``) is made without Gymnasium's
    "out of date" warning: rollgym keeps old versions registered on purpose, so that
    results stay comparable.

    Example:
        >>> import rollgym
        >>> env = rollgym.make("Countdown-v0")
    """
    from rollgym.core.config import check_known

    info = env_info(env_id)
    options = env_options(info.id)
    if options is not None:
        check_known(info.id, kwargs, options)
    return gym.make(gym.registry[info.id], **kwargs)  # the spec itself: no version look-up, no warning
