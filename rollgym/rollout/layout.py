"""How the episode engine seeds and names the episodes of a run: :class:`EpisodeLayout`.

A run (:class:`~rollgym.rollout.spec.RunSpec`) plays episode ``j`` of task ``i``; its layout says which
seed resets the env, which seed resets the agent, and which ids and ``sample_idx`` the trajectory
carries. The engine asks the layout and nothing else, so a collection mode whose seeds differ is a
layout, not another copy of the engine:

* :class:`GroupLayout` (the default): task ``i``'s env seed is ``SeedSequence(run seed, spawn_key=(0, i))``
  and its rollout ``j``'s agent seed ``SeedSequence(run seed, spawn_key=(1, i, j))``
  (:func:`episode_seed`, :func:`agent_seed`), never ``seed + i``, so streams of different tasks
  and runs never overlap; group ids are ``{run id}-{i:05d}``.
* :class:`TaskListLayout`: one episode per entry of a task list, with the caller's group ids and
  sample indices (:func:`rollgym.train.adapters.episodes.play_tasks`, which the trainers call).
* :class:`SeatLayout`: the games of seated self-play (:func:`rollgym.rollout.selfplay.collect_seated`):
  the caller's task seeds, and one sampling seed per seat (:func:`seat_seed`).

Example:
    >>> layout = GroupLayout()
    >>> layout.env_seed(0, 0) != layout.env_seed(0, 1)
    True
    >>> layout.names("run", 2, 1)
    EpisodeNames(group_id='run-00002', traj_id='run-00002-1', sample_idx=1, source='policy')
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np

from rollgym.core.errors import ConfigError

__all__ = ["EpisodeLayout", "EpisodeNames", "GroupLayout", "SeatLayout", "TaskListLayout", "agent_seed",
           "episode_seed", "seat_seed"]


def episode_seed(run_seed: int, task_index: int) -> int:
    """The ``env.reset`` seed of task ``task_index`` in a run seeded ``run_seed``.

    Example:
        >>> episode_seed(0, 0) != episode_seed(0, 1) != episode_seed(1, 0)
        True
    """
    sequence = np.random.SeedSequence(entropy=int(run_seed), spawn_key=(0, int(task_index)))
    return int(sequence.generate_state(1, dtype=np.uint32)[0])


def agent_seed(run_seed: int, task_index: int, sample_idx: int) -> int:
    """The ``agent.reset`` seed of rollout ``sample_idx`` of task ``task_index``."""
    sequence = np.random.SeedSequence(entropy=int(run_seed), spawn_key=(1, int(task_index), int(sample_idx)))
    return int(sequence.generate_state(1, dtype=np.uint32)[0])


def seat_seed(seed: int | None, episode: int, seat: int) -> int | None:
    """The sampling seed of ``seat`` in game ``episode`` of a seated group (``None`` when ``seed`` is)."""
    if seed is None:
        return None
    digest = hashlib.sha256(f"{seed}/{episode}/{seat}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


class EpisodeNames(NamedTuple):
    """The ids an episode's trajectory carries: its group, its own id, its place in the group, its source."""

    group_id: str
    traj_id: str
    sample_idx: int
    source: str = "policy"


@runtime_checkable
class EpisodeLayout(Protocol):
    """Seeds and names of episode ``sample`` of task ``task_index`` (see the module docstring).

    ``prefix`` is the run's id prefix (``{run id}-{env id}``); ``describe()`` is what the results
    file's header records of the layout (``None`` for the default, so default runs keep their ids).
    """

    def env_seed(self, run_seed: int, task_index: int) -> int | None: ...

    def agent_seed(self, run_seed: int, task_index: int, sample: int) -> int | None: ...

    def names(self, prefix: str, task_index: int, sample: int) -> EpisodeNames: ...

    def sample_idx(self, task_index: int, sample: int) -> int: ...

    def describe(self) -> dict[str, Any] | None: ...


@dataclass(frozen=True)
class GroupLayout:
    """The default layout: seeds derived from the run seed by ``SeedSequence``, ids from the run's prefix."""

    def env_seed(self, run_seed: int, task_index: int) -> int | None:
        return episode_seed(run_seed, task_index)

    def agent_seed(self, run_seed: int, task_index: int, sample: int) -> int | None:
        return agent_seed(run_seed, task_index, sample)

    def names(self, prefix: str, task_index: int, sample: int) -> EpisodeNames:
        group_id = f"{prefix}-{task_index:05d}"
        return EpisodeNames(group_id, f"{group_id}-{sample}", sample)

    def sample_idx(self, task_index: int, sample: int) -> int:
        return sample

    def describe(self) -> dict[str, Any] | None:
        return None


@dataclass(frozen=True)
class TaskListLayout:
    """One episode per entry of a task list (``group_size=1``; task ``i`` is entry ``i``).

    Entry ``i`` resets the env with ``run_seed + i`` (only env-side randomness, such as a game bot,
    depends on it: the task itself is fixed) and its agent with ``SeedSequence(run_seed, spawn_key=(7, i))``;
    its trajectory is ``{group_ids[i]}-{i}`` with ``sample_idx[i]`` and ``source``.
    """

    group_ids: tuple[str, ...]
    sample_indices: tuple[int, ...]
    source: str = "policy"

    def __post_init__(self) -> None:
        if len(self.group_ids) != len(self.sample_indices):
            raise ConfigError(f"group_ids names {len(self.group_ids)} episodes but sample_idx "
                              f"{len(self.sample_indices)}; pass one of each per task.")

    @classmethod
    def of(cls, ids: Sequence[str], sample_idx: Sequence[int] | None, source: str) -> TaskListLayout:
        """A layout for ``len(ids)`` episodes; ``sample_idx`` defaults to their positions."""
        return cls(tuple(ids), tuple(sample_idx) if sample_idx else tuple(range(len(ids))), source)

    def env_seed(self, run_seed: int, task_index: int) -> int | None:
        return run_seed + task_index

    def agent_seed(self, run_seed: int, task_index: int, sample: int) -> int | None:
        sequence = np.random.SeedSequence(entropy=int(run_seed), spawn_key=(7, int(task_index)))
        return int(sequence.generate_state(1)[0])

    def names(self, prefix: str, task_index: int, sample: int) -> EpisodeNames:
        group_id = self.group_ids[task_index]
        return EpisodeNames(group_id, f"{group_id}-{task_index}", self.sample_indices[task_index], self.source)

    def sample_idx(self, task_index: int, sample: int) -> int:
        return self.sample_indices[task_index]

    def describe(self) -> dict[str, Any] | None:
        return {"kind": "task-list", "group_ids": list(self.group_ids), "sample_idx": list(self.sample_indices),
                "source": self.source}


@dataclass(frozen=True)
class SeatLayout:
    """Seated games: task ``i`` is the game drawn by ``seeds[i]``; game ``j`` of it has ``num_seats``
    trajectories (``sample_idx = j * num_seats + seat``), seat ``s`` sampling with ``seat_seed(seeds[i], j, s)``.

    Group ids are ``{env_id}:{split}:{seeds[i]}``, trajectory ids ``{group id}:e{j}s{seat}``.
    """

    seeds: tuple[int, ...]
    num_seats: int
    env_id: str
    split: str

    def env_seed(self, run_seed: int, task_index: int) -> int | None:
        return self.seeds[task_index]

    def agent_seed(self, run_seed: int, task_index: int, sample: int) -> int | None:
        game, seat = divmod(sample, self.num_seats)
        return seat_seed(self.seeds[task_index], game, seat)

    def names(self, prefix: str, task_index: int, sample: int) -> EpisodeNames:
        group_id = f"{self.env_id}:{self.split}:{self.seeds[task_index]}"
        game, seat = divmod(sample, self.num_seats)
        return EpisodeNames(group_id, f"{group_id}:e{game}s{seat}", sample)

    def sample_idx(self, task_index: int, sample: int) -> int:
        return sample

    def describe(self) -> dict[str, Any] | None:
        return {"kind": "seats", "seeds": list(self.seeds), "num_seats": self.num_seats}
