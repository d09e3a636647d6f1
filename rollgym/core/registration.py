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

An id that a later version replaces names it (``superseded_by``): making it warns once per process with
:class:`SupersededEnvWarning`, naming the successor and the release it leaves in (:data:`RETIRED_IN`).
docs/ids.md has the policy.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import json
import sys
import threading
import warnings
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import gymnasium as gym

from rollgym.core.deprecation import REMOVED_IN
from rollgym.core.errors import ConfigError, UnknownEnvError
from rollgym.core.spec_hash import closure_hash, import_closure, module_source_hash

__all__ = ["RETIRED_IN", "EnvInfo", "SupersededEnvWarning", "env_info", "list_envs", "make", "module_source_hash",
           "private_state", "register_env", "superseded_ids", "warn_superseded"]

#: The release in which every id that is superseded now leaves rollgym: the next minor release, when the
#: deprecated names go too.
RETIRED_IN = REMOVED_IN

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
        private_state: ``"module:function"`` of ``f(env) -> dict``: every value the running episode
            keeps from the agent until it ends (the task's answer, the other seat's cards or values,
            a bot's seed), read from the unwrapped env after ``reset``. Families whose only secret is
            ``Task.answer`` name :func:`rollgym.core.private.task_answer`. The attack battery
            (``tests/test_attack_battery.py``) checks that none of it reaches an observation or ``info``.
        grader: ``"pure"`` when grading runs nothing the agent wrote (a verifier of its text, a game's
            rules, a diff of app state); ``"sandbox"`` when grading runs code or tests in a sandbox
            where the agent's code or files are (the battery then asks for a planted-file test).
        cost: ``"light"``, or ``"heavy"`` for ids whose episodes need a browser or real projects
            (the battery plays fewer episodes of them).
        reward_floor: The most a policy that ignores the episode (a constant or echoed answer) may
            average; 0 unless a fixed legal move is a real, if weak, strategy of the game (a fixed
            proposal in a negotiation). The battery checks constant answers stay at or under it,
            and under the oracle.
        superseded_by: The id that replaces this one (a later version that closes a hole or fixes its
            grading), or ``None`` for a current id. Making a superseded id warns with
            :class:`SupersededEnvWarning`; its tasks and scores stay as they were until it leaves.
    """

    id: str
    entry_point: str
    description: str
    family: str
    components: tuple[str, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    oracle: str | None = None
    random_policy: str | None = None
    private_state: str | None = None
    grader: str | None = None
    cost: str = "light"
    reward_floor: float = 0.0
    superseded_by: str | None = None

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
    private_state: str | None = None,
    grader: str | None = None,
    cost: str = "light",
    reward_floor: float = 0.0,
    superseded_by: str | None = None,
) -> EnvInfo:
    """Register ``id`` with Gymnasium and record its :class:`EnvInfo`.

    rollgym's own families (entry points under ``rollgym.envs``) must declare ``private_state``
    and ``grader`` (see :class:`EnvInfo`), so that the attack battery can check them; an id that
    does not is refused. An id that a later version replaces names it in ``superseded_by``: making
    it then warns (see :func:`warn_superseded`).

    Example:
        >>> info = register_env("Demo-v0", "rollgym.envs.countdown:CountdownEnv",
        ...     description="demo", family="demo", private_state="rollgym.core.private:task_answer",
        ...     grader="pure")
        >>> info.id in gym.registry
        True
    """
    check_declarations(id, entry_point, family, private_state, grader, cost)
    kwargs = dict(kwargs or {})
    if superseded_by == id:
        raise ConfigError(f"register_env({id!r}): an id cannot supersede itself.")
    info = EnvInfo(id, entry_point, description, family, tuple(components), kwargs, oracle, random_policy,
                   private_state, grader, cost, float(reward_floor), superseded_by)
    if id in gym.registry and id in _REGISTRY and _REGISTRY[id] == info:
        return _REGISTRY[id]
    creator = entry_point if superseded_by is None else SupersededEntryPoint(entry_point, id)
    gym.register(id=id, entry_point=creator, kwargs=kwargs, max_episode_steps=max_episode_steps)
    _REGISTRY[id] = info
    return info


class SupersededEnvWarning(DeprecationWarning):
    """Warned when a superseded env id is made: it names the successor and the release the id leaves in.

    Shown once per id and process (rollgym adds a ``default`` filter for this category, as Gymnasium does
    for its own deprecations). Silence it with
    ``warnings.filterwarnings("ignore", category=rollgym.SupersededEnvWarning)``.
    """


_WARNED: set[str] = set()
_WARNED_LOCK = threading.Lock()
warnings.filterwarnings("default", category=SupersededEnvWarning)


def _caller_stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside rollgym and Gymnasium (the user's call)."""
    frame = sys._getframe(2)  # warn_superseded's caller: stacklevel 2 of its warnings.warn
    level = 2
    while frame is not None and str(frame.f_globals.get("__name__", "")).partition(".")[0] in ("rollgym", "gymnasium"):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level if frame is not None else 2


def warn_superseded(env_id: str) -> None:
    """Warn with :class:`SupersededEnvWarning` the first time a superseded id is made in this process.

    ``gym.make`` and :func:`make` call it (through the id's registered entry point); a current id or an
    unknown one passes silently.

    Example:
        >>> import rollgym, warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     warn_superseded("Countdown-v0")
        >>> caught
        []
    """
    info = _REGISTRY.get(_bare_id(env_id))
    if info is None or info.superseded_by is None:
        return
    with _WARNED_LOCK:
        if info.id in _WARNED:
            return
        _WARNED.add(info.id)
    warnings.warn(
        f"{info.id} is superseded by {info.superseded_by} and leaves rollgym in release {RETIRED_IN}; use "
        f"{info.superseded_by} (results on {info.id} stay reproducible with rollgym < {RETIRED_IN}, see docs/ids.md).",
        SupersededEnvWarning, stacklevel=_caller_stacklevel())


class SupersededEntryPoint(str):
    """The Gymnasium entry point of a superseded id: the ``"module:Class"`` text, callable so that making warns.

    Gymnasium calls a callable entry point to build the env; this one warns (:func:`warn_superseded`) and
    builds the class its text names. Being that text, it compares, prints, copies and pickles as the plain
    string did, so a spec reads the same as before (only ``EnvSpec.to_json``, which refuses every callable
    entry point, refuses it).
    """

    env_id: str

    def __new__(cls, entry_point: str, env_id: str = "") -> SupersededEntryPoint:
        self = super().__new__(cls, entry_point)
        self.env_id = env_id
        return self

    def __call__(self, **kwargs: Any) -> gym.Env[Any, Any]:
        from gymnasium.envs.registration import load_env_creator

        warn_superseded(self.env_id)
        return load_env_creator(str(self))(**kwargs)  # type: ignore[return-value]


GRADERS = ("pure", "sandbox")
COSTS = ("light", "heavy")


def check_declarations(env_id: str, entry_point: str, family: str, private_state: str | None,
                       grader: str | None, cost: str) -> None:
    """Refuse a registration whose attack-battery declarations are missing or malformed.

    Ids of rollgym's own families (entry points under ``rollgym.envs``, outside the ``test`` family)
    must name ``private_state`` and ``grader``; any id that names them must name them well.

    Raises:
        ConfigError: one sentence naming the id and the declaration.
    """
    own = entry_point.startswith("rollgym.envs.") and family != "test"
    if own and private_state is None:
        raise ConfigError(
            f"register_env({env_id!r}) must declare private_state='module:function' returning what an episode "
            "hides from the agent ('rollgym.core.private:task_answer' when Task.answer is all it hides)."
        )
    if own and grader is None:
        raise ConfigError(
            f"register_env({env_id!r}) must declare grader='pure' (grading runs nothing the agent wrote) "
            "or 'sandbox' (grading runs code where the agent's code or files are)."
        )
    if private_state is not None and private_state.count(":") != 1:
        raise ConfigError(f"register_env({env_id!r}): private_state must be 'module:function', got {private_state!r}.")
    if grader is not None and grader not in GRADERS:
        raise ConfigError(f"register_env({env_id!r}): grader must be one of {', '.join(GRADERS)}, got {grader!r}.")
    if cost not in COSTS:
        raise ConfigError(f"register_env({env_id!r}): cost must be one of {', '.join(COSTS)}, got {cost!r}.")


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


def content_hash_of(env_id: str) -> str | None:
    """The content hash of a registered id, or ``None`` for an id rollgym has not registered (no error)."""
    info = _REGISTRY.get(_bare_id(env_id))
    return info.content_hash if info is not None else None


def private_state(env: gym.Env[Any, Any]) -> dict[str, Any]:
    """What the running episode of ``env`` hides from the agent, by its id's declared hook.

    An empty dict for an id that declares none (an unregistered env, or one outside rollgym's families).

    Example:
        >>> import rollgym
        >>> env = rollgym.make("Countdown-v0")
        >>> _ = env.reset(seed=0)
        >>> sorted(rollgym.core.registration.private_state(env))
        ['answer']
    """
    import importlib

    unwrapped = env.unwrapped
    spec = unwrapped.spec
    info = _REGISTRY.get(spec.id) if spec is not None else None
    if info is None or info.private_state is None:
        return {}
    module, _, name = info.private_state.partition(":")
    return dict(getattr(importlib.import_module(module), name)(unwrapped))


def list_envs() -> list[EnvInfo]:
    """Every registered rollgym env, sorted by family then id."""
    return sorted(_REGISTRY.values(), key=lambda e: (e.family, e.id))


def superseded_ids() -> dict[str, str]:
    """Every superseded id with the id that supersedes it.

    Example:
        >>> import rollgym
        >>> superseded_ids()["ConnectFour-v0"]
        'ConnectFour-v1'
    """
    return {info.id: info.superseded_by for info in list_envs() if info.superseded_by is not None}


# gym.make's own keyword arguments, taken before the env's constructor sees the rest
_MAKE_OPTIONS = ("max_episode_steps", "disable_env_checker", "render_mode")


def env_options(env_id: str) -> tuple[str, ...] | None:
    """The keyword arguments ``make(env_id, ...)`` accepts, from the env class's constructors.

    Follows ``**kwargs`` up the class hierarchy (a game env passes them to its base); a class
    whose ``**options`` are the fields of its config dataclass lists them as ``config_options``.
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
        named = klass.__dict__.get("config_options") if inspect.isclass(klass) else None
        if named is not None:  # its **options are these (the fields of its config dataclasses)
            return tuple(sorted(options | set(named)))
    return None


def make(env_id: str, **kwargs: Any) -> gym.Env[Any, Any]:
    """``gym.make`` with rollgym's clear errors for unknown ids and unknown arguments.

    An argument the env does not take raises :class:`~rollgym.core.errors.ConfigError`
    before anything is built, naming the closest option and listing them all. An older
    version of an id (``MATH500-v0`` beside ``MATH500-v1``) is made without Gymnasium's
    "out of date" warning: rollgym keeps old versions registered on purpose, so that
    results stay comparable. A superseded one warns once with :class:`SupersededEnvWarning`
    (as ``gym.make`` does), naming its successor and the release it leaves in.

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
