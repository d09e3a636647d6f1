"""Export simulator episodes as a dataset (``.npz``) for training world models.

Arrays in the file (``N`` episodes, ``V`` views, ``T`` frames):

- ``frames``: ``(N, V, T, H, W, 3)`` uint8.
- ``actions``: ``(N, T - 1, 4)`` float32; ``actions[:, t]`` leads from frame ``t`` to ``t + 1``.
- ``poses``: ``(N, T, 4)`` float32 effector ``(x, y, z, opening)`` at each frame.
- ``objects``: ``(N, T, max_objects, 3)`` float32 object ``(x, y, z_bottom)`` (NaN-padded).
- ``scene_index``, ``views``, ``split``, ``policy``: where the episodes came from.

Example:
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "wm.npz")
    >>> _ = export_dataset(path, episodes=2, frames=5, size=32)
    >>> load_dataset(path)["frames"].shape
    (2, 3, 5, 32, 32, 3)
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

from rollgym.core.io import atomic_path
from rollgym.envs.worldmodel.episode import GroundTruthEpisode
from rollgym.envs.worldmodel.render import VIEWS, Renderer


def simulate_dataset(episodes: int, frames: int, split: str = "train", policy: str = "mixed", size: int = 64,
                     views: tuple[str, ...] = VIEWS, start_index: int = 0, max_objects: int = 4
                     ) -> dict[str, np.ndarray]:
    """Simulate ``episodes`` episodes of ``frames`` frames each (scenes ``start_index..`` of ``split``)."""
    if episodes < 1 or frames < 2:
        raise ValueError(f"Need at least 1 episode of at least 2 frames, got {episodes} x {frames}.")
    renderer = Renderer(tuple(views), size)
    all_frames = np.empty((episodes, len(views), frames, size, size, 3), np.uint8)
    actions = np.empty((episodes, frames - 1, 4), np.float32)
    poses = np.empty((episodes, frames, 4), np.float32)
    objects = np.full((episodes, frames, max_objects, 3), np.nan, np.float32)
    for n in range(episodes):
        ep = GroundTruthEpisode.from_index(split, start_index + n, renderer, context=1, policy=policy,
                                           max_objects=max_objects)
        k = len(ep.sim.radii)
        objects[n, 0, :k] = ep.sim.object_state()
        all_frames[n, :, 0] = ep.context[:, 0]
        poses[n, 0] = ep.context_poses[0]
        for t in range(1, frames):
            chunk = ep.next_chunk(1)
            all_frames[n, :, t] = chunk.frames[:, 0]
            actions[n, t - 1] = chunk.actions[0]
            poses[n, t] = chunk.poses[0]
            objects[n, t, :k] = ep.sim.object_state()
    return {
        "frames": all_frames,
        "actions": actions,
        "poses": poses,
        "objects": objects,
        "scene_index": np.arange(start_index, start_index + episodes),
        "views": np.array(views),
        "split": np.array(split),
        "policy": np.array(policy),
    }


def export_dataset(path: str | os.PathLike[str], episodes: int, frames: int, **kwargs: object) -> Path:
    """Simulate (see :func:`simulate_dataset`) and write a compressed ``.npz`` atomically."""
    data = simulate_dataset(episodes, frames, **kwargs)  # type: ignore[arg-type]
    with atomic_path(path) as tmp:
        np.savez_compressed(tmp, **data)  # type: ignore[arg-type]
    return Path(path)


def load_dataset(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Read a dataset written by :func:`export_dataset` into memory."""
    with np.load(path, allow_pickle=False) as f:
        return {k: f[k] for k in f.files}


def main(argv: list[str] | None = None) -> None:
    """``python -m rollgym.envs.worldmodel.dataset OUT.npz --episodes 100 --frames 24``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--frames", type=int, default=24)
    parser.add_argument("--split", default="train")
    parser.add_argument("--policy", default="mixed")
    parser.add_argument("--size", type=int, default=64)
    args = parser.parse_args(argv)
    path = export_dataset(args.out, args.episodes, args.frames, split=args.split, policy=args.policy, size=args.size)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
