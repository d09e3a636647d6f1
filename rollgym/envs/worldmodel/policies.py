"""Scripted robot policies that produce the action sequences of the dataset and the env.

Each policy reads the simulator state, keeps its own phase, and draws its random
choices (targets, noise) from the generator it was given, so an episode is a pure
function of its scene and seed.

- ``random``: smooth random motion with occasional gripper toggles.
- ``push``: go behind an object, lower the fingertip, push the object towards a goal.
- ``pick_place``: hover over an object, descend, grasp, lift, carry, lower, release.
- ``mixed``: one of the three, chosen per episode.
"""

from __future__ import annotations

import numpy as np

from rollgym.envs.worldmodel.sim import EFFECTOR_RADIUS, MAX_STEP_XY, MAX_STEP_Z, TabletopSim

POLICIES: tuple[str, ...] = ("random", "push", "pick_place", "mixed")
_HOVER = 0.32


def _towards(sim: TabletopSim, target: np.ndarray, rng: np.random.Generator, noise: float = 0.1) -> np.ndarray:
    """Velocity command that moves the fingertip towards ``target`` (x, y, z), with a little noise."""
    delta = target - sim.effector
    a = np.empty(3)
    a[0:2] = delta[0:2] / MAX_STEP_XY
    a[2] = delta[2] / MAX_STEP_Z
    a += rng.normal(0.0, noise, size=3)
    return np.clip(a, -1.0, 1.0)  # type: ignore[no-any-return]


class RandomPolicy:
    """Smoothly varying random velocity commands; the gripper toggles now and then."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.velocity = np.zeros(3)
        self.grip = -1.0

    def act(self, sim: TabletopSim) -> np.ndarray:
        """The next action."""
        self.velocity = 0.8 * self.velocity + 0.45 * self.rng.normal(size=3)
        if self.rng.random() < 0.06:
            self.grip = -self.grip
        return np.array([*np.clip(self.velocity, -1, 1), self.grip])


class _ObjectPolicy:
    """Works on one object at a time, towards a random goal."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.phase = "choose"
        self.target = 0
        self.goal = np.zeros(2)
        self.timer = 0

    def _next_object(self, sim: TabletopSim, patience: int, first_phase: str) -> np.ndarray:
        """Count a step and return the position of the object worked on: on ``choose``, or after ``patience``
        steps on one object, a new object and goal are drawn and the work starts at ``first_phase``."""
        self.timer += 1
        if self.phase == "choose" or self.timer > patience:
            self.target = int(self.rng.integers(len(sim.radii)))
            self.goal = self.rng.uniform(-0.6, 0.6, size=2)
            self.phase, self.timer = first_phase, 0
        return sim.positions[self.target]  # type: ignore[no-any-return]


class PushPolicy(_ObjectPolicy):
    """Pushes one object after another towards random goals on the table."""

    def act(self, sim: TabletopSim) -> np.ndarray:
        """The next action."""
        obj = self._next_object(sim, patience=80, first_phase="approach")
        to_goal = self.goal - obj
        dist = float(np.hypot(*to_goal))
        u = to_goal / max(dist, 1e-6)
        behind = obj - u * (sim.radii[self.target] + EFFECTOR_RADIUS + 0.04)
        if self.phase == "approach":
            z = _HOVER if np.hypot(*(behind - sim.effector[0:2])) > 0.06 else 0.03
            a = _towards(sim, np.array([*behind, z]), self.rng)
            if sim.effector[2] < 0.06 and np.hypot(*(behind - sim.effector[0:2])) < 0.08:
                self.phase = "push"
        elif self.phase == "push":
            a = _towards(sim, np.array([*(obj - u * 0.05 + u * 0.08), 0.03]), self.rng)
            a[0:2] = np.clip(a[0:2], -0.7, 0.7)
            if dist < 0.06 or np.hypot(*(sim.effector[0:2] - obj)) > 0.35:
                self.phase = "lift"
        else:  # lift
            a = _towards(sim, np.array([*sim.effector[0:2], _HOVER]), self.rng)
            if sim.effector[2] > _HOVER - 0.05:
                self.phase = "choose"
        return np.array([*a, -1.0])


class PickPlacePolicy(_ObjectPolicy):
    """Picks objects up and puts them down somewhere else."""

    def act(self, sim: TabletopSim) -> np.ndarray:
        """The next action."""
        obj = self._next_object(sim, patience=90, first_phase="hover")
        grasp_z = 0.5 * sim.heights[self.target]
        grip = -1.0
        if self.phase == "hover":
            a = _towards(sim, np.array([*obj, _HOVER]), self.rng)
            if np.hypot(*(obj - sim.effector[0:2])) < 0.03:
                self.phase = "descend"
        elif self.phase == "descend":
            a = _towards(sim, np.array([*obj, grasp_z]), self.rng, noise=0.03)
            if sim.effector[2] < grasp_z + 0.02:
                self.phase = "grasp"
        elif self.phase == "grasp":
            a, grip = np.zeros(3), 1.0
            if sim.held == self.target or sim.opening < 0.5:
                self.phase = "carry" if sim.held == self.target else "release"
        elif self.phase == "carry":
            grip = 1.0
            z = _HOVER if np.hypot(*(self.goal - sim.effector[0:2])) > 0.05 else grasp_z + 0.03
            a = _towards(sim, np.array([*self.goal, z]), self.rng, noise=0.05)
            if z < _HOVER and sim.effector[2] < grasp_z + 0.06:
                self.phase = "release"
        else:  # release, then lift
            a = _towards(sim, np.array([*sim.effector[0:2], _HOVER]), self.rng) if sim.opening > 0.9 else np.zeros(3)
            if sim.effector[2] > _HOVER - 0.05:
                self.phase = "choose"
        return np.array([*a, grip])


def make_policy(name: str, rng: np.random.Generator) -> RandomPolicy | PushPolicy | PickPlacePolicy:
    """Build a scripted policy by name (``mixed`` picks one of the others with ``rng``).

    Example:
        >>> p = make_policy("push", np.random.default_rng(0))
        >>> type(p).__name__
        'PushPolicy'
    """
    if name == "mixed":
        name = ("random", "push", "pick_place")[int(rng.integers(3))]
    if name == "random":
        return RandomPolicy(rng)
    if name == "push":
        return PushPolicy(rng)
    if name == "pick_place":
        return PickPlacePolicy(rng)
    raise ValueError(f"Unknown policy {name!r}; use one of {', '.join(POLICIES)}.")
