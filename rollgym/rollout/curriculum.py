"""A curriculum over difficulty levels: keep each env's success rate inside a target band (RLVE-style).

RLVE (Zeng et al., 2025) trains on environments whose difficulty follows the
policy: a level is raised once the policy solves it reliably, so problems stay
neither trivial nor hopeless. :class:`Curriculum` does that over rollgym's
difficulty levels (:mod:`rollgym.core.difficulty`), per env id:

- every group is played at the env's *frontier* level (or, with ``window=w``, at a
  level drawn from the ``w`` levels ending at the frontier, RLVE's sliding window);
- at the end of each training step, once at least ``min_episodes`` usable episodes
  were played at the frontier since its last decision, their success rate (the
  envs' own ``correct``) decides: above the band, one level up; below it, one level
  down; inside it, stay. The count then starts again.

The collectors take it as ``task_chooser``::

    curriculum = Curriculum(band=(0.4, 0.8), seed=0)
    for step in range(steps):
        groups = collect(agent, "Countdown-v0", n_tasks=8, group_size=8, seed=step, task_chooser=curriculum)
        trainer.step(groups)
    curriculum.schedule  # one record per step: each env's level, what was played, the success rates, the decision

The schedule is a pure function of the seed and the results it observes: within a
step the levels are fixed, the results of a step are applied in group-id order at
its end, and the only randomness (the level drawn inside a window) comes from a
``SeedSequence`` of ``(seed, env id, step, group index)``. With :func:`collect` (and
:func:`~rollgym.rollout.collect_async`) a step is one call; with
:class:`~rollgym.rollout.PartialRollouts` it is one :meth:`step`, whose groups
depend on which rollouts finish first, so that schedule is as deterministic as the
groups it is fed. Benchmarks never adapt: a suite entry with a ``level`` plays every
group at that one level through :class:`FixedLevel`, the one chooser whose run can
resume from a results file (its choice depends on nothing but its level).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from rollgym.core.config import check_int, check_number
from rollgym.core.difficulty import DIFFICULTY_OPTION, Difficulty, Level
from rollgym.core.errors import ConfigError
from rollgym.core.io import append_line
from rollgym.core.seeding import stable_int
from rollgym.rollout.types import RolloutGroup

__all__ = ["Curriculum", "CurriculumConfig", "FixedLevel", "TaskChooser", "success_by_level"]


@runtime_checkable
class TaskChooser(Protocol):
    """What the collectors call to choose each group's task and to report finished groups.

    ``reset_options(env, env_id, group_index)`` returns the ``env.reset`` options of group
    ``group_index`` (every rollout of the group gets the same, with the same seed, so they
    play one task); ``observe(group)`` receives each finished group; ``end_step()`` closes a
    training step (the end of a :func:`~rollgym.rollout.collect` call or of a
    :meth:`~rollgym.rollout.PartialRollouts.step`).
    """

    def reset_options(self, env: Any, env_id: str, group_index: int) -> dict[str, Any] | None: ...

    def observe(self, group: RolloutGroup) -> None: ...

    def end_step(self) -> None: ...


class FixedLevel:
    """A task chooser that plays every group at one difficulty level (an index or a level name).

    Unlike a :class:`Curriculum`, its choices do not depend on the run, so a run with it can
    resume from a results file: :func:`~rollgym.rollout.collect` writes :attr:`fixed_options`
    into the file's header, and a file written at another level is refused.

    Example:
        >>> FixedLevel("level-1").reset_options(None, "MATH500-v1", 0)
        {'difficulty': 'level-1'}
    """

    def __init__(self, level: int | str) -> None:
        if isinstance(level, bool) or not isinstance(level, (int, str)) or (isinstance(level, int) and level < 0):
            raise ConfigError(f"level must be a level index >= 0 or a level name, got {level!r}.")
        self.fixed_options: dict[str, Any] = {DIFFICULTY_OPTION: level}

    def reset_options(self, env: Any, env_id: str, group_index: int) -> dict[str, Any]:
        """The same options for every group."""
        return dict(self.fixed_options)

    def observe(self, group: RolloutGroup) -> None:
        """Nothing to learn: the level is fixed."""

    def end_step(self) -> None:
        """Nothing to close."""


@dataclass(frozen=True)
class CurriculumConfig:
    """Settings of :class:`Curriculum`.

    Attributes:
        band: The target success rate ``(low, high)``, ``0 <= low < high <= 1``.
        min_episodes: Usable episodes at the frontier before a decision (at least 1).
        window: Levels played: the frontier and the ``window - 1`` below it, drawn uniformly (at least 1).
        start: The starting level of every env: an index, a level name, or ``"default"`` (the level that
            matches the env's own configuration, else 0).
        seed: Seeds the level draws inside a window.
    """

    band: tuple[float, float] = (0.4, 0.8)
    min_episodes: int = 32
    window: int = 1
    start: int | str = 0
    seed: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.band, (tuple, list)) or len(self.band) != 2:
            raise ConfigError(f"band must be a (low, high) pair of success rates, got {self.band!r}.")
        low = check_number("band low", self.band[0], 0.0, 1.0)
        check_number("band high", self.band[1], low, 1.0, low_name="band low")
        if self.band[0] >= self.band[1]:
            raise ConfigError(f"band must have low < high, got {tuple(self.band)!r}.")
        object.__setattr__(self, "band", (float(self.band[0]), float(self.band[1])))
        check_int("min_episodes", self.min_episodes, 1)
        check_int("window", self.window, 1)
        check_int("seed", self.seed, 0)
        if not isinstance(self.start, (int, str)) or isinstance(self.start, bool):
            raise ConfigError(f"start must be a level index, a level name or 'default', got {self.start!r}.")


@dataclass
class _Track:
    """One env's place on its ladder."""

    ladder: Difficulty
    frontier: int
    successes: int = 0
    episodes: int = 0
    decisions: list[str] = field(default_factory=list)


class Curriculum:
    """Moves each env's difficulty level to keep its success rate inside ``band``; see the module docstring.

    Args:
        config: :class:`CurriculumConfig`; or give its fields as keywords.
        ladders: Difficulty ladders by env id, for envs that do not expose ``env.unwrapped.difficulty``
            (a remote env); a number ``n`` means levels ``0`` to ``n - 1``.
        log_path: A JSONL file that receives each step's record as it is made.

    Example:
        >>> curriculum = Curriculum(band=(0.3, 0.7), min_episodes=8)
        >>> curriculum.config.band
        (0.3, 0.7)
    """

    def __init__(self, config: CurriculumConfig | None = None, *, ladders: Mapping[str, Difficulty | int] | None = None,
                 log_path: str | Path | None = None, **fields: Any) -> None:
        if config is not None and fields:
            raise ConfigError("Pass a CurriculumConfig or its fields as keywords, not both.")
        self.config = config or CurriculumConfig(**fields)
        self._given = dict(ladders or {})
        self._tracks: dict[str, _Track] = {}
        self._pending: list[tuple[str, str, int, bool]] = []  # (group id, env id, level, correct) of this step
        self._restored: dict[str, dict[str, Any]] = {}  # tracks of a loaded state, applied when the env reappears
        self.step = 0
        self.schedule: list[dict[str, Any]] = []
        self.log_path = Path(log_path) if log_path is not None else None

    # -- the TaskChooser interface --------------------------------------------------
    def reset_options(self, env: Any, env_id: str, group_index: int) -> dict[str, Any]:
        """``{"difficulty": level}`` for group ``group_index`` of ``env_id`` in this step."""
        track = self._track(env, env_id)
        low = max(0, track.frontier - self.config.window + 1)
        level = track.frontier
        if track.frontier > low:
            sequence = np.random.SeedSequence(
                self.config.seed, spawn_key=(stable_int(env_id) % 2**63, self.step, int(group_index)))
            level = low + int(np.random.Generator(np.random.PCG64(sequence)).integers(track.frontier - low + 1))
        return {DIFFICULTY_OPTION: level}

    def observe(self, group: RolloutGroup) -> None:
        """Record a finished group's usable episodes (their level is the env's ``info["difficulty"]``)."""
        for traj in group.usable():
            level = traj.info.get(DIFFICULTY_OPTION)
            if isinstance(level, int) and traj.env_id in self._tracks:
                self._pending.append((group.group_id, traj.env_id, level, traj.correct))

    def end_step(self) -> dict[str, Any]:
        """Apply this step's results (in group-id order), move the levels, log and return the step's record."""
        pending, self._pending = sorted(self._pending, key=lambda r: (r[0], r[1])), []
        record: dict[str, Any] = {"step": self.step, "envs": {}}
        low, high = self.config.band
        for env_id, track in sorted(self._tracks.items()):
            played: dict[int, list[bool]] = {}
            for _, eid, level, correct in pending:
                if eid == env_id:
                    played.setdefault(level, []).append(correct)
            frontier = track.frontier
            at_frontier = played.get(frontier, [])
            track.successes += sum(at_frontier)
            track.episodes += len(at_frontier)
            decision, rate = "wait", None
            if track.episodes >= self.config.min_episodes:
                rate = track.successes / track.episodes
                if rate > high and frontier < track.ladder.hardest:
                    decision, track.frontier = "up", frontier + 1
                elif rate < low and frontier > 0:
                    decision, track.frontier = "down", frontier - 1
                else:
                    decision = "hold"
                track.successes = track.episodes = 0
            track.decisions.append(decision)
            record["envs"][env_id] = {
                "level": frontier,
                "level_name": track.ladder.names[frontier],
                "played": {str(k): {"episodes": len(v), "success": sum(v) / len(v)} for k, v in sorted(played.items())},
                "decision": decision,
                "decided_on": rate,
                "next_level": track.frontier,
            }
        self.schedule.append(record)
        if self.log_path is not None:
            append_line(self.log_path, json.dumps(record, sort_keys=True), fsync=False)
        self.step += 1
        return record

    # -- state -------------------------------------------------------------------
    def level(self, env_id: str) -> int:
        """The frontier level of ``env_id`` (the level its next groups are played at)."""
        if env_id not in self._tracks:
            raise ConfigError(f"The curriculum has not seen {env_id!r} yet; it learns an env's levels from its "
                              "first group.")
        return self._tracks[env_id].frontier

    def levels(self) -> dict[str, int]:
        """The frontier level of every env seen so far."""
        return {env_id: track.frontier for env_id, track in sorted(self._tracks.items())}

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint needs to continue the schedule exactly (JSON-ready)."""
        return {"step": self.step, "tracks": {env_id: {"frontier": t.frontier, "successes": t.successes,
                                                         "episodes": t.episodes} for env_id, t in self._tracks.items()}}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from :meth:`state_dict` (the envs' ladders are read again on their next group)."""
        self.step = int(state["step"])
        self._restored = {k: dict(v) for k, v in state["tracks"].items()}

    # -- helpers -------------------------------------------------------------------
    def _track(self, env: Any, env_id: str) -> _Track:
        if env_id not in self._tracks:
            ladder = self._ladder(env, env_id)
            track = _Track(ladder, self._start(ladder))
            restored = self._restored.pop(env_id, None)
            if restored is not None:
                track.frontier = ladder.clamp(restored["frontier"])
                track.successes, track.episodes = int(restored["successes"]), int(restored["episodes"])
            self._tracks[env_id] = track
        return self._tracks[env_id]

    def _ladder(self, env: Any, env_id: str) -> Difficulty:
        given = self._given.get(env_id)
        if isinstance(given, int) and not isinstance(given, bool):
            return Difficulty(tuple(Level(str(i)) for i in range(given)))
        if isinstance(given, Difficulty):
            return given
        ladder = getattr(getattr(env, "unwrapped", env), "difficulty", None)
        if not isinstance(ladder, Difficulty):
            raise ConfigError(f"{env_id} has no difficulty levels for a curriculum to move through; pick an env "
                              "with levels (docs/curriculum.md lists them) or pass ladders={env_id: n}.")
        return ladder

    def _start(self, ladder: Difficulty) -> int:
        start = self.config.start
        if start == "default":
            return ladder.default if ladder.default is not None else 0
        return ladder.index(start)


def success_by_level(groups: Sequence[RolloutGroup]) -> dict[int, tuple[int, int]]:
    """``{level: (correct, usable episodes)}`` over groups played at difficulty levels.

    Example:
        >>> success_by_level([])
        {}
    """
    counts: dict[int, list[int]] = {}
    for group in groups:
        for traj in group.usable():
            level = traj.info.get(DIFFICULTY_OPTION)
            if isinstance(level, int):
                pair = counts.setdefault(level, [0, 0])
                pair[0] += int(traj.correct)
                pair[1] += 1
    return {level: (pair[0], pair[1]) for level, pair in sorted(counts.items())}
