"""The tabletop simulator, its cameras, scripted policies and dataset export."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from rollgym.core.seeding import split_of_key
from rollgym.envs.worldmodel.dataset import export_dataset, load_dataset, simulate_dataset
from rollgym.envs.worldmodel.episode import GroundTruthEpisode
from rollgym.envs.worldmodel.policies import make_policy
from rollgym.envs.worldmodel.render import Renderer
from rollgym.envs.worldmodel.scene import draw_scene
from rollgym.envs.worldmodel.sim import TabletopSim, sanitize_action


def _digest(split: str, index: int, policy: str, steps: int = 30) -> str:
    ep = GroundTruthEpisode.from_index(split, index, Renderer(size=64), context=2, policy=policy)
    h = hashlib.sha256(ep.context.tobytes())
    chunk = ep.next_chunk(steps)
    for arr in (chunk.frames, chunk.actions, chunk.poses, ep.sim.positions, ep.sim.bottoms):
        h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()


@pytest.mark.parametrize("policy", ["random", "push", "pick_place"])
def test_simulator_is_bit_for_bit_deterministic(policy: str) -> None:
    assert _digest("train", 5, policy) == _digest("train", 5, policy)
    assert _digest("train", 5, policy) != _digest("train", 6, policy)


def test_scenes_are_seeded_and_splits_disjoint() -> None:
    keys = {split: {draw_scene(split, i)[0].key() for i in range(15)} for split in ("train", "validation", "test")}
    assert not keys["train"] & keys["test"] and not keys["train"] & keys["validation"]
    assert all(split_of_key(k) == "test" for k in keys["test"])
    scene = draw_scene("test", 0)[0]
    assert 2 <= len(scene.objects) <= 4
    assert len({o.colour for o in scene.objects}) == len(scene.objects)


def test_three_views_render_and_the_wrist_view_moves_with_the_effector() -> None:
    sim = TabletopSim(draw_scene("train", 2)[0])
    renderer = Renderer(size=64)
    before = renderer.render(sim)
    assert before.shape == (3, 64, 64, 3) and before.dtype == np.uint8
    for _ in range(4):
        sim.step(np.array([1.0, 0.0, 0.0, -1.0]))
    after = renderer.render(sim)
    changed = (before != after).any(axis=-1).mean(axis=(1, 2))
    assert changed[2] > 0.2  # the whole wrist image shifts
    assert 0 < changed[0] < 0.2 and 0 < changed[1] < 0.2  # external views: only the robot moves
    assert Renderer(("wrist",), size=96).render(sim).shape == (1, 96, 96, 3)


def test_push_policy_moves_objects_and_pick_place_lifts_one() -> None:
    for policy, check in (("push", "moved"), ("pick_place", "lifted")):
        moved, lifted = 0.0, False
        for index in range(4):
            ep = GroundTruthEpisode.from_index("train", index, Renderer(("left",), size=32), context=1, policy=policy)
            start = ep.sim.positions.copy()
            for _ in range(100):
                ep.next_chunk(1)
                lifted |= bool((ep.sim.bottoms > 0.02).any())
            moved = max(moved, float(np.hypot(*(ep.sim.positions - start).T).max()))
        if check == "moved":
            assert moved > 0.2
        else:
            assert lifted


def test_gripper_grasps_and_carries() -> None:
    sim = TabletopSim(draw_scene("train", 3)[0])
    policy = make_policy("pick_place", np.random.default_rng(0))
    held_steps = 0
    for _ in range(150):
        sim.step(policy.act(sim))
        held_steps += sim.held >= 0
    assert held_steps > 5


def test_sanitize_action_clips_and_rejects_wrong_shapes() -> None:
    a = sanitize_action(np.array([5.0, -5.0, np.nan, 0.5]))
    assert a.tolist() == [1.0, -1.0, 0.0, 0.5]
    with pytest.raises(ValueError, match="4 numbers"):
        sanitize_action(np.zeros(3))


def test_dataset_export_round_trip(tmp_path) -> None:
    path = export_dataset(tmp_path / "wm.npz", episodes=2, frames=6, size=32)
    data = load_dataset(path)
    assert data["frames"].shape == (2, 3, 6, 32, 32, 3)
    assert data["actions"].shape == (2, 5, 4) and data["poses"].shape == (2, 6, 4)
    again = simulate_dataset(2, 6, size=32)
    assert np.array_equal(again["frames"], data["frames"])
    assert np.array_equal(again["actions"], data["actions"])
    assert list(data["views"]) == ["left", "right", "wrist"]


def test_dataset_command_line(tmp_path, capsys) -> None:
    from rollgym.envs.worldmodel.dataset import main

    main([str(tmp_path / "d.npz"), "--episodes", "1", "--frames", "3", "--size", "32", "--policy", "push"])
    assert "wrote" in capsys.readouterr().out
    data = load_dataset(tmp_path / "d.npz")
    assert data["frames"].shape == (1, 3, 3, 32, 32, 3) and str(data["policy"]) == "push"
    with pytest.raises(ValueError, match="at least 2 frames"):
        simulate_dataset(1, 1)
