"""WorldModel-v0: Gymnasium conformance, modes, horizons, bad actions, branching, pictures."""

from __future__ import annotations

import subprocess
import sys
import warnings
import zlib

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import rollgym
from rollgym.envs.worldmodel.env import WorldModelEnv
from rollgym.envs.worldmodel.models import CopyLastModel
from rollgym.envs.worldmodel.pictures import write_strip


def _small(**kwargs: object) -> WorldModelEnv:
    kwargs.setdefault("size", 32)
    return WorldModelEnv(**kwargs)  # type: ignore[arg-type]


def test_check_env_passes_without_warnings() -> None:
    env = gym.make("WorldModel-v0")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)
    assert rollgym.env_info("WorldModel-v0").family == "worldmodel"


def test_import_rollgym_does_not_import_torch() -> None:
    code = "import sys, rollgym, gymnasium as g; g.make('WorldModel-v0'); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False"


def test_reset_is_seeded_and_observation_in_space() -> None:
    env = _small()
    a, info_a = env.reset(seed=3)
    b, info_b = env.reset(seed=3)
    assert info_a["task_id"] == info_b["task_id"]
    assert info_a["spec_hash"] == rollgym.env_info("WorldModel-v0").content_hash
    for key in a:
        assert np.array_equal(a[key], b[key])
    assert env.observation_space.contains(a)
    c, _ = env.reset(options={"task_index": 4, "split": "test"})
    d, info_d = env.reset(options={"task_index": 4, "split": "test"})
    assert np.array_equal(c["frames"], d["frames"]) and info_d["task_id"] == "worldmodel/test/4"


def test_horizon_varies_per_episode_and_episode_summary() -> None:
    env = _small(min_chunks=1, max_chunks=4)
    horizons = set()
    for seed in range(12):
        _, info = env.reset(seed=seed)
        horizons.add(info["num_chunks"])
    assert len(horizons) > 1 and horizons <= {1, 2, 3, 4}
    obs, info = env.reset(options={"task_index": 0, "num_chunks": 3})
    model, steps, done = CopyLastModel(), 0, False
    while not done:
        obs, reward, done, truncated, info = env.step(model.act(obs, info))
        steps += 1
        assert not truncated and isinstance(reward, float)
    assert steps == 3
    assert info["episode"]["frames"] == 3 * env.chunk
    curves = info["episode"]["curves"]
    assert set(curves) == {"left", "right", "wrist"} and len(curves["wrist"]["ssim"]) == 12
    with pytest.raises(RuntimeError, match="reset"):
        env.step(model.act(obs, info))


def test_autoregressive_feeds_back_predictions_and_teacher_forcing_truth() -> None:
    grey = None
    for mode in ("autoregressive", "teacher_forced"):
        env = _small(mode=mode)
        env.reset(options={"task_index": 1, "num_chunks": 3})
        grey = np.full(env.action_space.shape, 0.5, np.float32)
        obs, *_ = env.step(grey)
        got_grey = bool((obs["frames"] == 128).all())
        assert got_grey == (mode == "autoregressive")


def test_teacher_forced_baseline_moves_but_copy_last_still_scores_zero() -> None:
    env = _small(mode="teacher_forced")
    obs, info = env.reset(options={"task_index": 2, "num_chunks": 3})
    model, done = CopyLastModel(), False
    while not done:
        obs, reward, done, _, info = env.step(model.act(obs, info))
        assert abs(reward) < 1e-9


def test_perfect_prediction_beats_copy_last() -> None:
    env = _small(policy="push")
    env.reset(options={"task_index": 0, "num_chunks": 2})
    truth = env._state["pending"].frames  # the test peeks at ground truth on purpose
    _, reward, *_ = env.step(truth)
    assert reward > 0


def test_bad_actions_give_clear_errors_or_documented_clipping() -> None:
    env = _small()
    env.reset(seed=0)
    shape = env.action_space.shape
    first = env._observation()["frames"].copy()
    for bad, words in [
        (np.zeros((1, 2, 3), np.float32), "shape"),
        (np.zeros(shape, np.int64), "dtype"),
        (np.zeros(shape, bool), "dtype"),
        ("not frames", "dtype"),
        ([[1.0], [1.0, 2.0]], "array of shape"),
    ]:
        obs, reward, terminated, truncated, info = env.step(bad)  # type: ignore[arg-type]
        assert info["error"] == "invalid_action" and words in info["message"], info.get("message")
        assert (reward, terminated, truncated) == (0.0, False, False)
        assert np.array_equal(obs["frames"], first)
    assert env._state["chunk_index"] == 0  # rejected actions change nothing

    nan = np.full(shape, np.nan, np.float32)
    nan[0, 0, 0, 0] = np.inf
    _, reward, _, _, info = env.step(nan)
    assert np.isfinite(reward) and info["invalid_pixels"] == nan.size
    big = np.full(shape, 7.0, np.float64)
    big[0] = -3.0
    _, reward, _, _, info = env.step(big)
    assert np.isfinite(reward) and info["clipped_pixels"] == big.size


def test_uint8_and_float_predictions_score_the_same() -> None:
    env = _small()
    rewards = []
    for action in (np.full(env.action_space.shape, 51, np.uint8), np.full(env.action_space.shape, 0.2, np.float32)):
        env.reset(options={"task_index": 5})
        rewards.append(env.step(action)[1])
    assert rewards[0] == pytest.approx(rewards[1], abs=1e-6)


def test_branching_scores_candidates_from_the_same_state() -> None:
    env = _small()
    obs, info = env.reset(options={"task_index": 3, "num_chunks": 4})
    obs, *_ = env.step(CopyLastModel().act(obs, info))
    snapshot = env.clone_state()
    rng = np.random.default_rng(0)
    candidates = [CopyLastModel().act(obs, info), rng.random(env.action_space.shape, dtype=np.float32)]
    results = []
    for cand in candidates + candidates[:1]:
        env.restore_state(snapshot)
        next_obs, reward, *_ = env.step(cand)
        results.append((reward, next_obs["actions"].copy()))
    assert results[0][0] == results[2][0] and results[0][0] != results[1][0]
    assert all(np.array_equal(results[0][1], r[1]) for r in results)  # the ground truth is the same
    # seed-and-prefix replay reaches the same state
    env2 = _small()
    o2, i2 = env2.reset(options={"task_index": 3, "num_chunks": 4})
    o2, *_ = env2.step(CopyLastModel().act(o2, i2))
    assert env2.step(candidates[1])[1] == results[1][0]


def test_info_has_per_view_per_frame_curves_and_lpips_status() -> None:
    env = _small(view_weights={"left": 1.0, "right": 1.0, "wrist": 2.0})
    env.reset(seed=1)
    _, _, _, _, info = env.step(np.zeros(env.action_space.shape, np.float32))
    for view in ("left", "right", "wrist"):
        assert len(info["curves"][view]["psnr"]) == env.chunk
        assert len(info["curves"][view]["baseline_ssim_masked"]) == env.chunk
    expected = {"ssim_skill", "psnr_skill_db", "ssim_skill_masked", "psnr_skill_masked_db"}
    assert set(info["reward_components"]) == expected
    from rollgym.envs.worldmodel.metrics import lpips_status

    available, _ = lpips_status()
    if not available:
        assert info["lpips"] is None and info["lpips_status"].startswith("missing")
        with pytest.raises(rollgym.ConfigError, match="lpips"):
            _small(lpips=True)


def test_bad_config_raises_one_clear_error() -> None:
    for kwargs in ({"views": ["top"]}, {"mode": "dreaming"}, {"size": 8}, {"min_chunks": 3, "max_chunks": 2},
                   {"view_weights": {"left": 1.0}}, {"policy": "teleport"}):
        with pytest.raises(rollgym.ConfigError):
            _small(**kwargs)
    env = _small()
    with pytest.raises(rollgym.ConfigError, match="reset option"):
        env.reset(options={"level": 3})


def test_render_and_strip_png(tmp_path) -> None:
    env = gym.make("WorldModel-v0", size=32, render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (32, 3 * 32, 3) and frame.dtype == np.uint8
    env.step(np.full(env.action_space.shape, 0.3, np.float32))
    strip = env.render()
    assert strip.shape == (9 * 34, 4 * 34, 3)
    truth = np.zeros((1, 2, 8, 8, 3), np.uint8)
    pred = np.full((1, 2, 8, 8, 3), 0.5, np.float32)
    path = write_strip(tmp_path / "strip.png", truth, pred)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    idat = data[data.index(b"IDAT") + 4 : data.index(b"IEND") - 8]
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(3 * 10, 1 + 2 * 10 * 3)[:, 1:]
    pixels = raw.reshape(30, 20, 3)
    assert pixels[0, 0].tolist() == [0, 0, 0] and pixels[10, 0].tolist() == [128, 128, 128]
