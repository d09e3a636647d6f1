"""Reference world models for ``WorldModel-v0``: copy-last, linear extrapolation, a small torch CNN.

The network (:mod:`~rollgym.envs.worldmodel.network`), its training script
(:mod:`~rollgym.envs.worldmodel.train`), its shipped weights and the report
(:mod:`~rollgym.envs.worldmodel.report`) live in this package beside the env;
the env itself never imports them (they are policies, not part of its MDP).

Every model has ``act(observation, info) -> prediction``: it reads the env's
observation dict (context ``frames``, next ``actions``, ``effector`` poses) and
returns the predicted clip ``(views, chunk, H, W, 3)`` float32 in ``[0, 1]``.
The numpy models need no torch; :class:`FlowWarpWorldModel` imports torch when
it is built and loads the weights shipped with rollgym (``weights_only=True``).

Example:
    >>> import gymnasium as gym, rollgym
    >>> env = gym.make("WorldModel-v0", size=32)
    >>> obs, info = env.reset(seed=0)
    >>> _, reward, *_ = env.step(CopyLastModel().act(obs, info))
    >>> abs(reward) < 1e-9
    True
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from rollgym.core.errors import ConfigError, MissingDependencyError

WEIGHTS_DIR = Path(__file__).resolve().parent
SHIPPED_WEIGHTS = {
    "supervised": WEIGHTS_DIR / "flowwarp_supervised.pt",
    "finetuned": WEIGHTS_DIR / "flowwarp_finetuned.pt",
}
VIEW_IDS = {"left": 0, "right": 1, "wrist": 2}


def _chunk_length(observation: dict[str, np.ndarray]) -> int:
    return int(np.asarray(observation["actions"]).shape[0])


class CopyLastModel:
    """Repeats the last context frame of every view: the baseline every reward is measured against."""

    name = "copy_last"

    def reset(self, seed: int | None = None) -> None:
        """Stateless."""

    def act(self, observation: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray:
        """The last context frame, repeated for every frame of the chunk."""
        last = observation["frames"][:, -1].astype(np.float32) / 255.0
        return np.repeat(last[:, None], _chunk_length(observation), axis=1)


class LinearExtrapolationModel:
    """Continues each pixel's last change linearly: ``last + k * (last - previous)``, clipped.

    ``damping`` shrinks the step each frame (1.0: plain linear extrapolation).
    """

    name = "linear"

    def __init__(self, damping: float = 1.0) -> None:
        self.damping = damping

    def reset(self, seed: int | None = None) -> None:
        """Stateless."""

    def act(self, observation: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray:
        """The extrapolated chunk; with a single context frame this is copy-last."""
        frames = observation["frames"].astype(np.float32) / 255.0
        last = frames[:, -1]
        delta = last - frames[:, -2] if frames.shape[1] > 1 else np.zeros_like(last)
        k = _chunk_length(observation)
        steps = np.cumsum(self.damping ** np.arange(k, dtype=np.float32))
        return np.clip(last[:, None] + steps[None, :, None, None, None] * delta[:, None], 0.0, 1.0)


class FlowWarpWorldModel:
    """The small action-conditioned flow-warping CNN (:mod:`rollgym.envs.worldmodel.network`).

    Args:
        weights: ``"supervised"`` or ``"finetuned"`` (the files shipped with rollgym), or a path
            to a ``state_dict`` saved by ``rollgym.envs.worldmodel.train``.
        threads: torch CPU threads to use.
    """

    name = "flowwarp"

    def __init__(self, weights: str | Path = "finetuned", threads: int = 1) -> None:
        try:
            import torch
        except ImportError as exc:
            raise MissingDependencyError(
                "FlowWarpWorldModel needs torch; install it with pip install 'rollgym[worldmodel]'."
            ) from exc
        from rollgym.envs.worldmodel.network import FlowWarpNet

        path = SHIPPED_WEIGHTS.get(str(weights), Path(weights))
        if not path.exists():
            raise ConfigError(f"World-model weights {path} not found; pass 'supervised', 'finetuned' or a .pt path.")
        self._torch = torch
        self.threads = threads
        state = torch.load(path, map_location="cpu", weights_only=True)
        width = int(state.pop("_width").item()) if "_width" in state else 32
        self.net = FlowWarpNet(width)
        self.net.load_state_dict(state)
        self.net.eval()

    def reset(self, seed: int | None = None) -> None:
        """Stateless."""

    def act(self, observation: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray:
        """Roll the network out over the chunk for every view."""
        from rollgym.envs.worldmodel.network import rollout

        torch = self._torch
        views = info.get("views") or ["left", "right", "wrist"]
        unknown = [v for v in views if v not in VIEW_IDS]
        if unknown:
            raise ConfigError(f"FlowWarpWorldModel knows views {list(VIEW_IDS)}, not {unknown}.")
        old = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            with torch.no_grad():
                frames = torch.from_numpy(observation["frames"].astype(np.float32) / 255.0).permute(0, 1, 4, 2, 3)
                v = frames.shape[0]
                actions = torch.from_numpy(np.asarray(observation["actions"], np.float32))[None].expand(v, -1, -1)
                poses = torch.from_numpy(np.asarray(observation["effector"], np.float32))[None].expand(v, -1, -1)
                ids = torch.tensor([VIEW_IDS[x] for x in views], dtype=torch.long)
                out = rollout(self.net, frames, actions, poses, ids)
        finally:
            torch.set_num_threads(old)
        return out.permute(0, 1, 3, 4, 2).numpy().astype(np.float32)  # type: ignore[no-any-return]


WORLD_MODELS = {"copy_last": CopyLastModel, "linear": LinearExtrapolationModel, "flowwarp": FlowWarpWorldModel}


def make_world_model(name: str, **kwargs: Any) -> CopyLastModel | LinearExtrapolationModel | FlowWarpWorldModel:
    """Build a reference world model by name: ``copy_last``, ``linear`` or ``flowwarp``."""
    if name not in WORLD_MODELS:
        raise ConfigError(f"Unknown world model {name!r}; use one of {', '.join(WORLD_MODELS)}.")
    return WORLD_MODELS[name](**kwargs)  # type: ignore[no-any-return]


def evaluate(model: Any, env: Any, episodes: int, split: str = "test", start_index: int = 0) -> dict[str, float]:
    """Mean episode reward and skills of ``model`` on scenes ``start_index..`` of ``split``.

    Returns ``reward``, the view-averaged ``ssim_skill``, ``psnr_skill_db``,
    ``ssim_skill_masked`` and ``psnr_skill_masked_db`` over whole episodes.
    """
    totals: dict[str, list[float]] = {}
    for i in range(episodes):
        obs, info = env.reset(options={"task_index": start_index + i, "split": split})
        model.reset()
        done = False
        while not done:
            obs, _, done, _, info = env.step(model.act(obs, info))
        ep = info["episode"]
        totals.setdefault("reward", []).append(ep["reward"])
        for k, v in ep["reward_components"].items():
            totals.setdefault(k, []).append(v)
    return {k: float(np.mean(v)) for k, v in totals.items()}
