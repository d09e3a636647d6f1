"""One ground-truth episode: a scene, a scripted policy and the frames they produce, chunk by chunk.

The env and the training scripts share this class, so a model is trained on
exactly the data the env scores it on. The policy runs closed-loop, so each
chunk is simulated just before it is needed; :meth:`GroundTruthEpisode.copy`
snapshots everything (simulator, policy, random stream) for branching.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from rollgym.envs.worldmodel.policies import make_policy
from rollgym.envs.worldmodel.render import Renderer
from rollgym.envs.worldmodel.scene import Scene, draw_scene
from rollgym.envs.worldmodel.sim import TabletopSim, sanitize_action


@dataclass
class Chunk:
    """``frames`` ``(views, K, H, W, 3)`` uint8 after each of ``actions`` ``(K, 4)``; ``poses`` ``(K, 4)``."""

    actions: np.ndarray
    frames: np.ndarray
    poses: np.ndarray


class GroundTruthEpisode:
    """Simulates an episode of scene ``(split, index)`` under a scripted policy.

    Example:
        >>> ep = GroundTruthEpisode.from_index("test", 0, Renderer(size=32), context=2)
        >>> ep.context.shape, ep.next_chunk(4).frames.shape
        ((3, 2, 32, 32, 3), (3, 4, 32, 32, 3))
    """

    def __init__(self, scene: Scene, rng: np.random.Generator, renderer: Renderer, context: int,
                 policy: str = "mixed") -> None:
        self.scene = scene
        self.rng = rng
        self.renderer = renderer
        self.policy_name = policy
        self.policy = make_policy(policy, rng)
        self.sim = TabletopSim(scene)
        frames = [renderer.render(self.sim)]
        poses = [self.sim.state_vector()]
        for _ in range(context - 1):
            self.sim.step(self.policy.act(self.sim))
            frames.append(renderer.render(self.sim))
            poses.append(self.sim.state_vector())
        self.context = np.stack(frames, axis=1)  # (views, C, H, W, 3)
        self.context_poses = np.stack(poses)

    @classmethod
    def from_index(cls, split: str, index: int, renderer: Renderer, context: int, policy: str = "mixed",
                   min_objects: int = 2, max_objects: int = 4) -> GroundTruthEpisode:
        """The episode of scene ``index`` in ``split`` (deterministic)."""
        scene, rng = draw_scene(split, index, min_objects, max_objects)
        return cls(scene, rng, renderer, context, policy)

    def next_chunk(self, length: int) -> Chunk:
        """Run the policy for ``length`` frames and return what happened."""
        actions, frames, poses = [], [], []
        for _ in range(length):
            a = sanitize_action(self.policy.act(self.sim))
            self.sim.step(a)
            actions.append(a.astype(np.float32))
            frames.append(self.renderer.render(self.sim))
            poses.append(self.sim.state_vector())
        return Chunk(np.stack(actions), np.stack(frames, axis=1), np.stack(poses))

    def copy(self) -> GroundTruthEpisode:
        """An independent snapshot (the renderer, which holds no episode state, is shared)."""
        renderer = self.renderer
        self.renderer = None  # type: ignore[assignment]
        try:
            clone = copy.deepcopy(self)
        finally:
            self.renderer = renderer
        clone.renderer = renderer
        return clone
