"""``TextEnv``: the base of every text env, and ``SingleTurnEnv`` for one-answer tasks.

A text env draws a :class:`~rollgym.core.task.Task` from a :class:`TaskSource`
at ``reset`` and talks to the agent in strings. Subclasses implement two hooks:
``_start(task) -> observation`` and ``_advance(action) -> (observation, reward,
terminated, truncated, info)``; the base class handles task selection, seeding,
the ``info`` keys every env shares, and bad input.

Tasks carry the id of the env that made them. ``gym.make`` sets an env's spec
(and so its id) only after ``__init__``, so an env does not build its source
itself: it implements ``_make_source(env_id)``. The base class calls it in
``__init__`` (so that a bad configuration fails at construction, with the
class's default id) and again, once, when the env's id has changed since (after
``gym.make`` set the spec). Nothing sets attributes on a source after it is built.

Envs with graded difficulty declare it in the ``difficulty`` property (a
:class:`~rollgym.core.difficulty.Difficulty`) and build a level's source in
``_level_source(env_id, level)``; ``reset(options={"difficulty": k})`` then draws
from level ``k`` (see :mod:`rollgym.core.difficulty`). The default draw never
touches them.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Protocol, runtime_checkable

import gymnasium as gym

from rollgym.core.difficulty import DIFFICULTY_OPTION, Difficulty, Level
from rollgym.core.errors import ConfigError
from rollgym.core.seeding import SPLITS, check_split
from rollgym.core.spaces import TextSpace
from rollgym.core.task import Score, Task

StepResult = tuple[str, float, bool, bool, dict[str, Any]]

_RESET_OPTIONS = frozenset({"task", "task_index", "split", DIFFICULTY_OPTION})
_ATOMS = frozenset({str, int, float, bool, type(None)})


def copy_plain(value: Any) -> Any:
    """A deep copy of JSON-like data (dicts, lists, tuples, strings, numbers); other objects go to ``copy.deepcopy``.

    About five times faster than ``copy.deepcopy`` on a task's ``meta``, which every
    ``info`` carries a copy of. Unlike ``deepcopy`` it does not keep two references to one
    list as one list in the copy.

    Example:
        >>> meta = {"numbers": [3, 8], "range": (1, 9)}
        >>> twin = copy_plain(meta)
        >>> twin == meta and twin["numbers"] is not meta["numbers"]
        True
    """
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is dict:
        return {key: copy_plain(item) for key, item in value.items()}
    if kind is list:
        return [copy_plain(item) for item in value]
    if kind is tuple:
        return tuple(copy_plain(item) for item in value)
    return copy.deepcopy(value)


@runtime_checkable
class TaskSource(Protocol):
    """Where tasks come from: a generator or a dataset, indexed and deterministic.

    ``task(index, split)`` returns the same task every time it is called with the
    same arguments; ``size(split)`` is the number of tasks in a split, or ``None``
    when a generator's supply is unbounded. A source that names its tasks after an
    env id takes the id when it is built (see :meth:`TextEnv._make_source`). A source
    may also set ``extra_splits``, split names beyond :data:`~rollgym.core.seeding.SPLITS`
    that it serves without a finite size (e.g. ``("test_unseen",)`` for held-out worlds).
    """

    family: str

    def task(self, index: int, split: str = "train") -> Task: ...

    def size(self, split: str) -> int | None: ...


class TextEnv(gym.Env[str, str], ABC):
    """A Gymnasium env whose observations and actions are strings.

    Reset options: ``{"task_index": i, "split": "test"}`` picks task ``i`` of a split;
    ``{"task": Task(...)}`` plays a given task; ``{"difficulty": k}`` (a level index or
    name of :attr:`difficulty`) draws from that level instead of the env's default
    distribution. Without a task index the index is drawn from the env's own RNG over
    its split, so ``reset(seed=s)`` gives the same task every time and later seedless
    resets continue that stream.

    Every ``info`` carries ``task_id``, ``env_id``, ``spec_hash``, ``split``,
    ``task_index`` (``None`` for a given task), ``system_prompt`` and ``task_meta``
    (the task's public parameters; never the answer); envs with
    tools add ``tools`` (OpenAI function schemas); an episode drawn at a level adds
    ``difficulty`` (the level's index).
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "human"], "render_fps": 4}  # noqa: RUF012
    default_env_id: ClassVar[str] = ""
    system_prompt: str = ""

    def __init__(
        self,
        source: TaskSource | None = None,
        *,
        split: str = "train",
        render_mode: str | None = None,
        max_observation_length: int = 100_000,
        max_action_length: int = 1_000_000,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ConfigError(
                f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}."
            )
        self._given_source = source
        self._source: TaskSource | None = source
        self._source_env_id: str | None = None
        self.source  # noqa: B018  (built now, so a bad configuration fails at construction)
        self.split = check_split(split) if split in SPLITS else self._dataset_split(split)
        self.render_mode = render_mode
        self.observation_space = TextSpace(max_observation_length)
        self.action_space = TextSpace(max_action_length)
        self.task: Task | None = None
        self.task_index: int | None = None
        self._level_sources: dict[tuple[str, int], TaskSource] = {}
        self._episode_difficulty: int | None = None
        self._done = True
        self._transcript: list[tuple[str, str]] = []

    def _dataset_split(self, split: str) -> str:
        if split in getattr(self.source, "extra_splits", ()):
            return split
        size = self.source.size(split)
        if size is None or size == 0:
            raise ConfigError(f"Unknown or empty split {split!r}; use one of {', '.join(SPLITS)}.")
        return split

    # -- tasks --------------------------------------------------------------
    @property
    def source(self) -> TaskSource:
        """Where this env's tasks come from, built by :meth:`_make_source` for the env's current id."""
        if self._given_source is not None:
            return self._given_source
        env_id = self.env_id
        if self._source is None or self._source_env_id != env_id:
            self._source = self._make_source(env_id)
            self._source_env_id = env_id
        return self._source

    def _make_source(self, env_id: str) -> TaskSource:
        """Build the task source whose tasks carry ``env_id``.

        Called from ``TextEnv.__init__`` (set what it reads before calling
        ``super().__init__``), and again when the env's id has changed, i.e. once
        after ``gym.make`` set a spec whose id differs from the class default.
        Envs that pass a ready source to ``__init__`` need not implement it.
        """
        raise NotImplementedError(
            f"{type(self).__name__} passes no source to TextEnv.__init__ and does not implement _make_source(env_id)."
        )

    # -- difficulty ---------------------------------------------------------
    @property
    def difficulty(self) -> Difficulty | None:
        """This env's difficulty levels, easiest first; ``None`` when its difficulty is fixed."""
        return None

    def _level_source(self, env_id: str, level: Level) -> TaskSource:
        """Build the task source of one difficulty level, whose tasks carry ``env_id``.

        Envs that declare :attr:`difficulty` implement it, usually as their default source
        built with the level's knobs in place of their own. A level's tasks must carry
        everything their episode needs in ``meta`` (so that ``options={"task": task}``
        replays them), and their ids must differ wherever their content does.
        """
        raise NotImplementedError(f"{type(self).__name__} declares difficulty levels but no _level_source().")

    def level_source(self, level: int | str) -> TaskSource:
        """The task source of difficulty level ``level`` (an index or a name), built once per env id.

        Raises:
            ConfigError: when the env has a fixed difficulty or ``level`` is not one of its levels.
        """
        ladder = self.difficulty
        if ladder is None:
            raise ConfigError(f"{self.env_id} has one fixed difficulty; it takes no 'difficulty' option.")
        index = ladder.index(level)
        key = (self.env_id, index)
        if key not in self._level_sources:
            self._level_sources[key] = self._level_source(self.env_id, ladder.levels[index])
        return self._level_sources[key]

    # -- identity -----------------------------------------------------------
    @property
    def env_id(self) -> str:
        """The id this env was made with (or the class default outside ``gym.make``)."""
        return self.spec.id if self.spec is not None else self.default_env_id

    @property
    def spec_hash(self) -> str | None:
        """The content hash of this env's id, or ``None`` for an unregistered env."""
        from rollgym.core.registration import content_hash_of

        return content_hash_of(self.env_id)

    @property
    def tools(self) -> list[dict[str, Any]]:
        """OpenAI function schemas of the env's tools; empty for tool-free envs."""
        return []

    # -- gymnasium API ------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self.task, self.task_index = self._choose_task(options)
        self._done = False
        observation = self._start(self.task)
        self._transcript = [("env", observation)]
        return observation, self._common_info()

    def step(self, action: str) -> StepResult:
        if self.task is None or self._done:
            raise RuntimeError("Call reset() before step(), and again after an episode ends.")
        if isinstance(action, bytes):
            action = action.decode("utf-8", errors="replace")
        if not isinstance(action, str):
            raise TypeError(f"Actions are strings; got {type(action).__name__}. Pass the model's text.")
        observation, reward, terminated, truncated, info = self._advance(action)
        self._done = terminated or truncated
        self._transcript += [("agent", action), ("env", observation)]
        return observation, float(reward), terminated, truncated, {**self._common_info(), **info}

    def render(self) -> str | None:  # type: ignore[override]
        text = "\n".join(f"[{who}] {what}" for who, what in self._transcript)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    # -- hooks --------------------------------------------------------------
    @abstractmethod
    def _start(self, task: Task) -> str:
        """Prepare the episode for ``task`` and return the first observation."""

    @abstractmethod
    def _advance(self, action: str) -> StepResult:
        """Apply one action and return ``(observation, reward, terminated, truncated, info)``."""

    # -- helpers ------------------------------------------------------------
    def _choose_task(self, options: dict[str, Any] | None) -> tuple[Task, int | None]:
        options = dict(options or {})
        unknown = set(options) - _RESET_OPTIONS
        if unknown:
            raise ConfigError(
                f"Unknown reset option(s) {sorted(unknown)}; use 'task_index', 'split', 'difficulty' or 'task'."
            )
        self._episode_difficulty = None
        source = self.source
        if DIFFICULTY_OPTION in options:
            if "task" in options:
                raise ConfigError("options['task'] plays a given task; do not combine it with 'difficulty'.")
            source = self.level_source(options[DIFFICULTY_OPTION])
            assert self.difficulty is not None
            self._episode_difficulty = self.difficulty.index(options[DIFFICULTY_OPTION])
        if "task" in options:
            task = options["task"]
            if isinstance(task, dict):
                task = Task.from_dict(task)
            if not isinstance(task, Task):
                raise ConfigError("options['task'] must be a rollgym Task or its to_dict() form.")
            self._episode_split: str | None = None  # a given task: its split is not known here
            return task, None
        split = options.get("split", self.split)
        size = source.size(split)
        if split not in SPLITS and split not in getattr(source, "extra_splits", ()) and not size:
            raise ConfigError(f"Unknown or empty split {split!r}; use one of {', '.join(SPLITS)}.")
        if "task_index" in options:
            index = options["task_index"]
            if not isinstance(index, int) or index < 0 or (size is not None and index >= size):
                bound = f"below {size}" if size is not None else "a non-negative integer"
                raise ConfigError(f"task_index must be {bound}, got {index!r}.")
        else:
            index = int(self.np_random.integers(0, size if size else 2**31))
        self._episode_split = split
        return source.task(index, split), index

    def _common_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "task_id": self.task.id if self.task else None,
            "env_id": self.env_id,
            "spec_hash": self.spec_hash,
            "split": getattr(self, "_episode_split", self.split),  # the episode's task's split
            "task_index": self.task_index,
            "system_prompt": self.system_prompt,
            # a deep copy: infos of different steps must not share mutable lists (check_env compares them)
            "task_meta": copy_plain(self.task.meta) if self.task else {},
        }
        if self.tools:
            info["tools"] = self.tools
        if self._episode_difficulty is not None:
            info[DIFFICULTY_OPTION] = self._episode_difficulty
        return info


class SingleTurnEnv(TextEnv):
    """A text env where the agent answers once and a verifier scores the answer.

    The episode ends after one step with ``terminated=True, truncated=False``, an
    empty observation, the score's reward, and the :class:`Score` fields in
    ``info`` (``correct``, ``parsed``, ``error``, ``details``).
    """

    @abstractmethod
    def verify(self, task: Task, response: str) -> Score:
        """Score ``response`` for ``task``; never raises on model output."""

    def _start(self, task: Task) -> str:
        return task.prompt

    def _advance(self, action: str) -> StepResult:
        assert self.task is not None
        try:
            score = self.verify(self.task, action)
        except Exception as exc:  # a verifier bug must not crash a training run
            score = Score.fail("verifier_error", exception=f"{type(exc).__name__}: {exc}")
        return "", score.reward, True, False, score.to_info()
