"""A deterministic tabletop simulator: an end effector with a gripper pushes and carries objects.

The physics is kinematic and runs in float64 numpy with no randomness, so the
same scene and the same actions give bit-for-bit the same states on every run.

Action (one per frame): ``(dx, dy, dz, grip)`` in ``[-1, 1]``; the first three
are velocity commands scaled by :data:`MAX_STEP_XY` and :data:`MAX_STEP_Z`;
``grip > 0`` closes the gripper, ``grip <= 0`` opens it. Values outside
``[-1, 1]`` are clipped and NaN counts as 0.

Contacts: the effector's fingertip is a disc of radius :data:`EFFECTOR_RADIUS`;
while it is lower than an object's top it pushes the object out of its way
(objects translate; they do not rotate). Objects push each other apart. Closing
the gripper low over an object grasps it; the object then moves with the
effector until the gripper opens, and falls back to the table.
"""

from __future__ import annotations

import copy

import numpy as np

from rollgym.envs.worldmodel.scene import TABLE_HALF, Scene

MAX_STEP_XY = 0.05
MAX_STEP_Z = 0.05
EFFECTOR_RADIUS = 0.05
Z_MIN, Z_MAX = 0.02, 0.6
XY_LIMIT = 0.95
FALL_SPEED = 0.08
GRIP_SPEED = 0.34  # fraction of the full opening per frame
ACTION_DIM = 4


def sanitize_action(action: np.ndarray) -> np.ndarray:
    """Return ``action`` as a float64 vector of 4 values in ``[-1, 1]`` (NaN becomes 0).

    Raises:
        ValueError: if the action does not hold exactly 4 numbers.
    """
    a = np.asarray(action, dtype=np.float64).reshape(-1)
    if a.shape != (ACTION_DIM,):
        raise ValueError(f"A robot action has {ACTION_DIM} numbers (dx, dy, dz, grip); got shape {np.shape(action)}.")
    return np.clip(np.nan_to_num(a, nan=0.0, posinf=1.0, neginf=-1.0), -1.0, 1.0)


class TabletopSim:
    """The state of one scene and its step function.

    Attributes:
        scene: The scene this simulation started from.
        effector: ``(x, y, z)`` of the fingertip.
        opening: Gripper opening in ``[0, 1]`` (1 = fully open).
        positions: ``(n, 2)`` object centres.
        bottoms: ``(n,)`` height of each object's base above the table.
        held: Index of the grasped object, or -1.

    Example:
        >>> from rollgym.envs.worldmodel.scene import draw_scene
        >>> sim = TabletopSim(draw_scene("train", 0)[0])
        >>> sim.step(np.array([1.0, 0.0, 0.0, 0.0]))
        >>> sim.t
        1
    """

    def __init__(self, scene: Scene) -> None:
        self.scene = scene
        self.radii = np.array([o.collision_radius for o in scene.objects])
        self.heights = np.array([o.height for o in scene.objects])
        self.effector = np.array(scene.effector_start, dtype=np.float64)
        self.opening = 1.0
        self.grip_closed = False
        self.positions = np.array([o.position for o in scene.objects], dtype=np.float64)
        self.bottoms = np.zeros(len(scene.objects))
        self.held = -1
        self.t = 0

    def copy(self) -> TabletopSim:
        """An independent copy (for branching)."""
        return copy.deepcopy(self)

    def state_vector(self) -> np.ndarray:
        """Effector pose as ``(x, y, z, opening)``, float32."""
        return np.array([*self.effector, self.opening], dtype=np.float32)

    def object_state(self) -> np.ndarray:
        """``(n, 3)`` object ``(x, y, z_bottom)``, float32."""
        return np.concatenate([self.positions, self.bottoms[:, None]], axis=1).astype(np.float32)

    def step(self, action: np.ndarray) -> None:
        """Advance one frame under ``action`` (see the module docstring)."""
        a = sanitize_action(action)
        before = self.effector.copy()
        self.effector[0:2] = np.clip(self.effector[0:2] + a[0:2] * MAX_STEP_XY, -XY_LIMIT, XY_LIMIT)
        self.effector[2] = np.clip(self.effector[2] + a[2] * MAX_STEP_Z, Z_MIN, Z_MAX)
        self._update_gripper(a[3] > 0)
        if self.held >= 0:
            self.positions[self.held] = self.effector[0:2]
            self.bottoms[self.held] = max(0.0, self.effector[2] - 0.5 * self.heights[self.held])
        self._fall()
        self._push(self.effector[0:2] - before[0:2])
        self._separate()
        self.t += 1

    def _update_gripper(self, close: bool) -> None:
        if close and not self.grip_closed:
            self.held = self._graspable()
        if not close and self.grip_closed:
            self.held = -1
        self.grip_closed = close
        target = 0.0 if close else 1.0
        if self.held >= 0:  # fingers stop on the object
            target = 0.45
        step = np.clip(target - self.opening, -GRIP_SPEED, GRIP_SPEED)
        self.opening = float(self.opening + step)

    def _graspable(self) -> int:
        if len(self.radii) == 0:
            return -1
        d = np.hypot(*(self.positions - self.effector[0:2]).T)
        tops = self.bottoms + self.heights
        ok = (d < 0.6 * self.radii + 0.04) & (self.effector[2] < tops + 0.02) & (self.opening > 0.6)
        if not ok.any():
            return -1
        return int(np.argmin(np.where(ok, d, np.inf)))

    def _fall(self) -> None:
        free = np.arange(len(self.bottoms)) != self.held
        self.bottoms[free] = np.maximum(0.0, self.bottoms[free] - FALL_SPEED)

    def _push(self, motion: np.ndarray) -> None:
        ex, ey, ez = self.effector
        for i in range(len(self.radii)):
            if i == self.held or ez >= self.bottoms[i] + self.heights[i] or ez + 0.1 < self.bottoms[i]:
                continue
            d = self.positions[i] - (ex, ey)
            dist = float(np.hypot(*d))
            reach = self.radii[i] + EFFECTOR_RADIUS
            if dist >= reach:
                continue
            if self.opening > 0.6 and dist < 0.6 * self.radii[i] + 0.04:
                continue  # the open fingers straddle the object, ready to grasp it
            if dist < 1e-9:
                norm = float(np.hypot(*motion))
                d, dist = (motion / norm, 1.0) if norm > 0 else (np.array([1.0, 0.0]), 1.0)
            self.positions[i] += d / dist * (reach - dist)
        self._clip_to_table()

    def _separate(self, iterations: int = 3) -> None:
        n = len(self.radii)
        for _ in range(iterations):
            moved = False
            for i in range(n):
                for j in range(i + 1, n):
                    if self.held in (i, j) or abs(self.bottoms[i] - self.bottoms[j]) > 0.05:
                        continue
                    d = self.positions[j] - self.positions[i]
                    dist = float(np.hypot(*d))
                    reach = self.radii[i] + self.radii[j]
                    if dist >= reach:
                        continue
                    u = d / dist if dist > 1e-9 else np.array([1.0, 0.0])
                    shift = 0.5 * (reach - dist) * u
                    self.positions[i] -= shift
                    self.positions[j] += shift
                    moved = True
            self._clip_to_table()
            if not moved:
                break

    def _clip_to_table(self) -> None:
        limit = (TABLE_HALF - 0.02) - self.radii[:, None]
        free = np.arange(len(self.radii)) != self.held
        self.positions[free] = np.clip(self.positions[free], -limit[free], limit[free])
