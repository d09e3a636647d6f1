"""``WorldModel-v0``: the agent is a world model that predicts robot video, chunk by chunk."""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from rollgym.core.difficulty import DIFFICULTY_OPTION, Difficulty, Level
from rollgym.core.errors import ConfigError, RollgymError
from rollgym.core.seeding import SPLITS, check_split
from rollgym.envs.worldmodel.config import WorldModelConfig
from rollgym.envs.worldmodel.episode import Chunk, GroundTruthEpisode
from rollgym.envs.worldmodel.metrics import ClipScores, LpipsScorer, lpips_status, score_clip
from rollgym.envs.worldmodel.pictures import comparison_strip
from rollgym.envs.worldmodel.render import VIEWS, Renderer
from rollgym.envs.worldmodel.sim import ACTION_DIM

PSNR_SCALE = 10.0  # dB per reward unit, so 1 dB of PSNR gain weighs like 0.1 SSIM
_RESET_OPTIONS = frozenset({"task_index", "split", "num_chunks", DIFFICULTY_OPTION})
#: Difficulty levels: the horizon, in chunks predicted in a row (autoregressive errors compound over it).
HORIZON_LEVELS: tuple[Level, ...] = tuple(
    Level(f"h{n}", {"num_chunks": n}, f"{n} chunk{'s' if n > 1 else ''} in a row") for n in (1, 2, 3, 5, 8))


class InvalidActionError(RollgymError, ValueError):
    """A predicted clip has the wrong shape or type; the message gives the expected one."""


class WorldModelEnv(gym.Env[dict[str, np.ndarray], np.ndarray]):
    """Predict what a robot's cameras will see next, given the robot's next actions.

    ## Description

    A deterministic tabletop simulator (:mod:`rollgym.envs.worldmodel.sim`) plays
    an episode: a scripted policy (random motion, pushes, or pick-and-place)
    moves an end effector with a gripper among 2-4 objects of different shapes
    and colours, seen by two fixed external cameras (``left``, ``right``) and a
    ``wrist`` camera that moves with the effector. The agent is the world model:
    it sees a few context frames per view and the next chunk of robot actions,
    and must predict the frames those actions produce, for every view.

    In ``autoregressive`` mode (the default) the agent never sees ground truth
    after ``reset``: the next observation's frames are the last frames of its
    own prediction, so errors compound. In ``teacher_forced`` mode they are the
    true frames.

    ## Action Space

    ``Box(0, 1, (views, chunk, size, size, 3), float32)``: the predicted frames.
    uint8 arrays of that shape are accepted and divided by 255. Values outside
    ``[0, 1]`` are clipped and NaN/inf pixels are replaced (NaN and -inf by 0,
    +inf by 1); ``info["clipped_pixels"]`` and ``info["invalid_pixels"]`` count
    them. Anything else (a wrong shape, a non-numeric dtype, text, a ragged list)
    is rejected without raising: the step changes nothing (same observation,
    reward 0.0, not terminated) and ``info`` carries ``error="invalid_action"``
    and ``message``, one sentence with the expected shape; the agent retries.

    ## Observation Space

    ``Dict``:

    - ``frames``: ``Box(0, 255, (views, context, size, size, 3), uint8)``: the
      context frames (true after reset; then the agent's own in autoregressive mode).
    - ``actions``: ``Box(-1, 1, (chunk, 4), float32)``: the next robot actions
      ``(dx, dy, dz, grip)``, one per frame to predict.
    - ``effector``: ``Box(-1, 1, (chunk + 1, 4), float32)``: the robot's own pose
      ``(x, y, z, gripper opening)`` at the last context frame and after each
      action (proprioception: the robot's kinematics, known without cameras).

    ## Starting State

    Scene ``task_index`` of the split (drawn from the env's RNG unless given) and
    the first ``context`` frames of its episode. ``options={"num_chunks": n}`` fixes the
    horizon; ``options={"difficulty": k}`` picks it from :data:`HORIZON_LEVELS` (1, 2, 3, 5
    or 8 chunks; ``info["difficulty"]`` is ``k`` and the task id ends in ``@h<n>``).

    ## Rewards

    Per view and frame: SSIM (Gaussian, 11x11) and PSNR (capped at 50 dB) of the
    prediction, and of the copy-last baseline (the last context frame repeated,
    i.e. copy-last's own rollout in this mode), over the whole frame and inside a
    motion mask (pixels where the truth or the prediction differs from the
    baseline, dilated by 2). The skill of a view is prediction minus baseline,
    averaged over the chunk. The reward is the view-weighted mean of the skills
    selected by ``reward_region``: SSIM skill and PSNR skill / 10 dB, on the full
    frame, the motion mask, or both. Copy-last scores exactly 0; a perfect
    prediction scores above 0 whenever anything moves.

    ## Episode End

    ``terminated`` after the episode's last chunk; the horizon (``num_chunks``)
    varies per episode in ``[min_chunks, max_chunks]``. Never truncated.

    ## Information

    ``task_id``, ``env_id``, ``spec_hash``, ``split``, ``task_index``, ``mode``,
    ``num_chunks``, ``chunk_index``, ``policy``, ``views``. After a step also
    ``skill`` (per view), ``reward_components``, ``curves`` (per view, per frame:
    SSIM, PSNR, masked variants, baselines, mask fraction), ``clipped_pixels``,
    ``invalid_pixels``, ``lpips`` (per view and frame, or ``None``) with
    ``lpips_status``; at the end, ``episode`` with skills and curves over the clip,
    and the fields every rollgym env ends with: ``reward`` (the last step's),
    ``correct`` (the episode's clip reward is above 0, i.e. the predictions beat
    copy-last over the whole episode), ``parsed`` (``None``: predictions are
    arrays), ``error`` (``None``) and ``details`` (``episode_reward`` and its
    ``reward_components``).

    ## Arguments

    ``views`` (subset of ``left``, ``right``, ``wrist``), ``size`` (>= 32),
    ``context`` (frames, >= 1), ``chunk`` (frames per step), ``min_chunks`` /
    ``max_chunks``, ``mode``, ``policy`` (``random``, ``push``, ``pick_place``,
    ``mixed``), ``split``, ``view_weights`` (``{view: weight}``, normalised),
    ``reward_region``, ``lpips`` (``"auto"``: when the backbone weights are
    local; ``True``: require them; ``False``), ``render_mode`` (``rgb_array``).

    Branching: :meth:`clone_state` / :meth:`restore_state` snapshot an episode so
    that several candidate futures can be scored from the same state; replaying
    the same seed and prefix of predictions gives the same state too.

    ## Version History

    - v0: initial release. (The terminal ``info`` later gained the Score fields; rewards
      and tasks did not change.)
    """

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 8}  # noqa: RUF012

    def __init__(
        self,
        views: tuple[str, ...] | list[str] = VIEWS,
        size: int = 64,
        context: int = 2,
        chunk: int = 4,
        min_chunks: int = 2,
        max_chunks: int = 5,
        mode: str = "autoregressive",
        policy: str = "mixed",
        split: str = "train",
        view_weights: dict[str, float] | None = None,
        reward_region: str = "both",
        lpips: bool | str = "auto",
        render_mode: str | None = None,
    ) -> None:
        self.config = WorldModelConfig(
            views=tuple(views) if isinstance(views, (list, tuple)) else views, size=size, context=context,
            chunk=chunk, min_chunks=min_chunks, max_chunks=max_chunks, mode=mode, policy=policy,
            view_weights=view_weights, reward_region=reward_region, lpips=lpips,
        )
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ConfigError(f"render_mode must be 'rgb_array' or None, got {render_mode!r}.")
        views = self.config.views
        self.views = views
        self.size = size
        self.context = context
        self.chunk = chunk
        self.min_chunks, self.max_chunks = min_chunks, max_chunks
        self.mode = mode
        self.policy = policy
        self.split = check_split(split)
        self.reward_region = reward_region
        self.view_weights = np.array([self.config.weights[v] for v in views])
        self.render_mode = render_mode
        ok, why = lpips_status()
        if lpips is True and not ok:
            raise ConfigError(f"lpips=True but {why}; pass lpips='auto' to report it as missing instead.")
        self._lpips_reason = why if lpips is not False else "disabled (lpips=False)"
        self._lpips: LpipsScorer | None = LpipsScorer() if ok and lpips is not False else None

        v = len(views)
        self.observation_space = spaces.Dict(  # type: ignore[assignment]
            {
                "frames": spaces.Box(0, 255, (v, context, size, size, 3), np.uint8),
                "actions": spaces.Box(-1.0, 1.0, (chunk, ACTION_DIM), np.float32),
                "effector": spaces.Box(-1.0, 1.0, (chunk + 1, ACTION_DIM), np.float32),
            }
        )
        self.action_space = spaces.Box(0.0, 1.0, (v, chunk, size, size, 3), np.float32)
        self._renderer = Renderer(views, size)
        self._state: dict[str, Any] | None = None

    # -- identity ------------------------------------------------------------
    @property
    def env_id(self) -> str:
        """The id this env was made with."""
        return self.spec.id if self.spec is not None else "WorldModel-v0"

    @property
    def spec_hash(self) -> str | None:
        """The content hash of this env's id (``None`` if unregistered)."""
        from rollgym.core.registration import content_hash_of

        return content_hash_of(self.env_id)

    @property
    def difficulty(self) -> Difficulty:
        """Five horizons, 1 to 8 chunks predicted in a row; the default draws 2-5 (``min_chunks``-``max_chunks``)."""
        return Difficulty(HORIZON_LEVELS, default=None,
                          grows="the frames predicted in a row, and how far the truth drifts from the last seen frame")

    # -- gymnasium API -------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        options = dict(options or {})
        unknown = set(options) - _RESET_OPTIONS
        if unknown:
            raise ConfigError(f"Unknown reset option(s) {sorted(unknown)}; use 'task_index', 'split', 'num_chunks' "
                              "or 'difficulty'.")
        level: int | None = None
        if DIFFICULTY_OPTION in options:
            if "num_chunks" in options:
                raise ConfigError("A difficulty level sets num_chunks; give 'difficulty' or 'num_chunks', not both.")
            level = self.difficulty.index(options[DIFFICULTY_OPTION])
            options["num_chunks"] = HORIZON_LEVELS[level].knobs["num_chunks"]
        split = options.get("split", self.split)
        if split not in SPLITS:
            raise ConfigError(f"Unknown split {split!r}; use one of {', '.join(SPLITS)}.")
        index = options.get("task_index")
        if index is None:
            index = int(self.np_random.integers(0, 2**31))
        elif not isinstance(index, (int, np.integer)) or index < 0:
            raise ConfigError(f"task_index must be a non-negative integer, got {index!r}.")
        episode = GroundTruthEpisode.from_index(split, int(index), self._renderer, self.context, self.policy)
        num_chunks = options.get("num_chunks")
        if num_chunks is None:
            num_chunks = int(episode.rng.integers(self.min_chunks, self.max_chunks + 1))
        elif not isinstance(num_chunks, (int, np.integer)) or num_chunks < 1:
            raise ConfigError(f"num_chunks must be a positive integer, got {num_chunks!r}.")
        self._state = {
            "episode": episode,
            "split": split,
            "index": int(index),
            "num_chunks": int(num_chunks),
            "chunk_index": 0,
            "frames": episode.context.copy(),
            "truth_last": episode.context[:, -1].copy(),
            "anchor": episode.context[:, -1].copy(),  # what copy-last repeats
            "pose": episode.context_poses[-1].copy(),
            "pending": episode.next_chunk(self.chunk),
            "scores": [],
            "last_prediction": None,
            "last_truth": None,
            "done": False,
            "difficulty": level,
        }
        return self._observation(), self._info()

    def step(self, action: np.ndarray) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        st = self._state
        if st is None or st["done"]:
            raise RuntimeError("Call reset() before step(), and again after an episode ends.")
        try:
            prediction, clipped, invalid = self._validate(action)
        except InvalidActionError as exc:  # a bad prediction is the agent's error, never a crash
            return self._observation(), 0.0, False, False, {**self._info(), "error": "invalid_action",
                                                            "message": str(exc)}
        pending: Chunk = st["pending"]
        truth = pending.frames.astype(np.float32) / 255.0
        baseline = st["anchor"].astype(np.float32) / 255.0
        scores = score_clip(truth, prediction, baseline)
        st["scores"].append(scores)
        reward, components = self._reward(scores)
        lpips = self._lpips(prediction, truth) if self._lpips is not None else None

        pred_u8 = (prediction * 255 + 0.5).astype(np.uint8)
        st["last_prediction"], st["last_truth"] = pred_u8, pending.frames
        st["truth_last"] = pending.frames[:, -1].copy()
        source = pred_u8 if self.mode == "autoregressive" else pending.frames
        st["frames"] = np.concatenate([st["frames"], source], axis=1)[:, -self.context :]
        if self.mode == "teacher_forced":
            st["anchor"] = pending.frames[:, -1].copy()
        st["pose"] = pending.poses[-1].copy()
        st["chunk_index"] += 1
        terminated = st["chunk_index"] >= st["num_chunks"]
        st["done"] = terminated
        info = self._info()
        info.update(
            skill={k: dict(zip(self.views, map(float, v))) for k, v in scores.skill().items()},
            reward_components=components,
            curves=scores.curves(self.views),
            clipped_pixels=clipped,
            invalid_pixels=invalid,
            lpips=None if lpips is None else {v: lpips[i].tolist() for i, v in enumerate(self.views)},
            lpips_status="available" if self._lpips is not None else f"missing: {self._lpips_reason}",
        )
        if terminated:
            clip = ClipScores.concatenate(st["scores"])
            clip_reward, clip_components = self._reward(clip)
            info["episode"] = {
                "reward": clip_reward,
                "reward_components": clip_components,
                "skill": {k: dict(zip(self.views, map(float, v))) for k, v in clip.skill().items()},
                "curves": clip.curves(self.views),
                "frames": int(clip.ssim.shape[1]),
            }
            info.update(reward=float(reward), correct=bool(clip_reward > 0.0), parsed=None, error=None,
                        details={"episode_reward": float(clip_reward), "reward_components": dict(clip_components)})
            st["pending"] = Chunk(np.zeros((self.chunk, ACTION_DIM), np.float32), pending.frames,
                                  np.repeat(pending.poses[-1:], self.chunk, axis=0))
        else:
            st["pending"] = st["episode"].next_chunk(self.chunk)
        return self._observation(), reward, terminated, False, info

    def render(self) -> np.ndarray | None:  # type: ignore[override]
        """``rgb_array``: the latest true frame of every view side by side; after a step, the
        strip of truth, prediction and error of the last chunk."""
        if self._state is None:
            return None
        st = self._state
        if st["last_prediction"] is None:
            return np.concatenate(list(st["truth_last"]), axis=1)  # type: ignore[no-any-return]
        return comparison_strip(st["last_truth"], st["last_prediction"])

    # -- branching -------------------------------------------------------------------
    def clone_state(self) -> dict[str, Any]:
        """A snapshot of the current episode; :meth:`restore_state` returns to it any number of times.

        Example:
            >>> env = WorldModelEnv(size=32)
            >>> _ = env.reset(seed=0)
            >>> snap = env.clone_state()
            >>> r1 = env.step(env.action_space.sample())[1]
            >>> env.restore_state(snap)
        """
        if self._state is None:
            raise RuntimeError("Call reset() before clone_state().")
        return self._copy_state(self._state)

    def restore_state(self, snapshot: dict[str, Any]) -> None:
        """Return to a snapshot from :meth:`clone_state` (the snapshot stays reusable)."""
        if not isinstance(snapshot, dict) or "episode" not in snapshot:
            raise ConfigError("restore_state() takes a snapshot returned by clone_state().")
        self._state = self._copy_state(snapshot)

    @staticmethod
    def _copy_state(state: dict[str, Any]) -> dict[str, Any]:
        out = {k: copy.deepcopy(v) for k, v in state.items() if k != "episode"}
        out["episode"] = state["episode"].copy()
        return out

    # -- helpers -----------------------------------------------------------------------
    def _validate(self, action: Any) -> tuple[np.ndarray, int, int]:
        expected = self.action_space.shape
        try:
            arr = np.asarray(action)
        except Exception as exc:  # ragged lists, objects whose __array__ raises: all mean "not frames"
            raise InvalidActionError(
                f"The prediction must be an array of shape {expected}; got {type(action).__name__} ({exc})."
            ) from exc
        if arr.dtype == np.uint8:
            arr = arr.astype(np.float32) / np.float32(255.0)
        elif arr.dtype.kind != "f":
            raise InvalidActionError(
                f"The prediction must be float in [0, 1] or uint8 in [0, 255]; got dtype {arr.dtype}."
            )
        if arr.shape != expected:
            raise InvalidActionError(
                f"The prediction must have shape {expected} (views, chunk, H, W, RGB); got {arr.shape}."
            )
        arr = arr.astype(np.float32, copy=True)
        bad = ~np.isfinite(arr)
        invalid = int(bad.sum())
        if invalid:
            arr[np.isnan(arr)] = 0.0
            arr[np.isposinf(arr)] = 1.0
            arr[np.isneginf(arr)] = 0.0
        outside = (arr < 0.0) | (arr > 1.0)
        clipped = int(outside.sum())
        if clipped:
            np.clip(arr, 0.0, 1.0, out=arr)
        return arr, clipped, invalid

    def _reward(self, scores: ClipScores) -> tuple[float, dict[str, float]]:
        skill = scores.skill()
        w = self.view_weights
        components = {
            "ssim_skill": float(w @ skill["ssim"]),
            "psnr_skill_db": float(w @ skill["psnr"]),
            "ssim_skill_masked": float(w @ skill["ssim_masked"]),
            "psnr_skill_masked_db": float(w @ skill["psnr_masked"]),
        }
        full = 0.5 * (components["ssim_skill"] + components["psnr_skill_db"] / PSNR_SCALE)
        motion = 0.5 * (components["ssim_skill_masked"] + components["psnr_skill_masked_db"] / PSNR_SCALE)
        reward = {"full": full, "motion": motion, "both": 0.5 * (full + motion)}[self.reward_region]
        return float(reward), components

    def _observation(self) -> dict[str, np.ndarray]:
        st = self._state
        assert st is not None
        pending: Chunk = st["pending"]
        effector = np.concatenate([st["pose"][None], pending.poses]).astype(np.float32)
        return {
            "frames": st["frames"].copy(),
            "actions": pending.actions.astype(np.float32),
            "effector": np.clip(effector, -1.0, 1.0),
        }

    def _info(self) -> dict[str, Any]:
        st = self._state
        assert st is not None
        level = st.get("difficulty")
        suffix = f"@{HORIZON_LEVELS[level].name}" if level is not None else ""
        info = {
            "task_id": f"worldmodel/{st['split']}/{st['index']}{suffix}",
            "env_id": self.env_id,
            "spec_hash": self.spec_hash,
            "split": st["split"],
            "task_index": st["index"],
            "mode": self.mode,
            "policy": st["episode"].policy_name,
            "views": list(self.views),
            "num_chunks": st["num_chunks"],
            "chunk_index": st["chunk_index"],
        }
        if level is not None:
            info[DIFFICULTY_OPTION] = level
        return info
