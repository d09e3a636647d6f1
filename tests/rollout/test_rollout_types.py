"""Turn, Trajectory and RolloutGroup: JSON round trips, validation, usable()."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rollgym.core.task import Task
from rollgym.rollout import RolloutGroup, Trajectory, Turn, to_jsonable


def make_trajectory(idx: int = 0, status: str = "completed", reward: float | None = 1.0) -> Trajectory:
    turns = [
        Turn([1, 2], [3, 4], [-0.1, -0.2], [5], 0.0, 7, "tool"),
        Turn([1, 2, 3, 4, 5], [6], [-0.3], [], 1.0, 7, "stop"),
    ]
    return Trajectory(
        traj_id=f"g-{idx}",
        group_id="g",
        sample_idx=idx,
        source="external:teacher" if idx == 1 else "policy",
        env_id="ToyAdd-v0",
        task_id="t0",
        seed=123,
        prompt_ids=[1, 2],
        completion_ids=[3, 4, 5, 6],
        loss_mask=[1, 1, 0, 1],
        logprobs=[-0.1, -0.2, 0.0, -0.3],
        reward=reward,
        step_rewards=[0.0, 1.0],
        reward_components={"format": 0.5},
        status=status,  # type: ignore[arg-type]
        turns=turns,
        messages=[{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
        info={"correct": True, "parsed": np.int64(5), "arr": np.arange(3), "tup": (1, 2), "nan": float("nan")},
        metrics={"num_turns": 2, "agent_s": np.float32(0.5)},
    )


def test_trajectory_round_trips_through_json() -> None:
    traj = make_trajectory()
    data = traj.to_dict()
    text = json.dumps(data, allow_nan=False)  # raises if anything is not JSON-safe
    back = Trajectory.from_dict(json.loads(text))
    assert back.to_dict() == data
    assert back.info["parsed"] == 5 and back.info["arr"] == [0, 1, 2] and back.info["nan"] is None
    assert back.turns[0].output_logprobs == [-0.1, -0.2]
    assert back.turns[0].policy_version == 7
    assert back.source == "policy"
    assert Trajectory.from_dict(make_trajectory(1).to_dict()).source == "external:teacher"


def test_a_round_tripped_trajectory_equals_itself_again() -> None:
    once = Trajectory.from_dict(json.loads(json.dumps(make_trajectory().to_dict())))
    twice = Trajectory.from_dict(json.loads(json.dumps(once.to_dict())))
    assert once == twice


def test_group_round_trip_and_usable_drops_failed_and_aborted() -> None:
    task = Task("t0", "ToyAdd-v0", "What is 1 + 2?", np.int64(3), {"a": 1})
    group = RolloutGroup(
        "g",
        task,
        4,
        [
            make_trajectory(0),
            make_trajectory(1, "truncated", 0.0),
            make_trajectory(2, "failed", None),
            make_trajectory(3, "aborted", None),
        ],
        pseudo_label=np.int64(3),
    )
    assert [t.sample_idx for t in group.usable()] == [0, 1]
    assert group.complete
    data = json.loads(json.dumps(group.to_dict()))
    back = RolloutGroup.from_dict(data)
    assert back.to_dict() == data
    assert back.task is not None and back.task.answer == 3 and back.pseudo_label == 3
    assert back.rewards == [1.0, 0.0, None, None]


def test_failed_rollout_is_never_correct_even_if_info_says_so() -> None:
    assert make_trajectory(status="completed").correct
    assert not make_trajectory(status="failed", reward=None).correct


def test_text_only_trajectory_has_empty_token_fields() -> None:
    traj = Trajectory("t", "g", 0, "ToyAdd-v0", "task", 1)
    assert traj.prompt_ids == traj.completion_ids == traj.loss_mask == traj.logprobs == []
    assert Trajectory.from_dict(traj.to_dict()) == traj


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"status": "done"}, "status"),
        ({"source": "teacher"}, "source"),
        ({"loss_mask": [1]}, "same length"),
    ],
)
def test_invalid_trajectories_are_rejected(changes: dict, message: str) -> None:
    data = make_trajectory().to_dict() | changes
    with pytest.raises(ValueError, match=message):
        Trajectory.from_dict(data)


def test_to_jsonable_converts_numpy_and_containers() -> None:
    value = {"a": np.bool_(True), "b": {np.int32(1), np.int32(2)}, 3: [np.float64(0.25)], "inf": float("inf")}
    assert to_jsonable(value) == {"a": True, "b": [1, 2], "3": [0.25], "inf": None}
    assert to_jsonable(to_jsonable(value)) == to_jsonable(value)
    assert type(to_jsonable(np.int64(3))) is int
    assert to_jsonable(True) is True
