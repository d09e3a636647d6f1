"""Seeded tabletop scenes: which objects lie where, with what shape, colour and size.

A scene is a pure function of ``(split, index)``: :func:`draw_scene` draws it
with :func:`rollgym.core.seeding.draw_in_split`, so the train, validation and
test splits never share a scene. The table spans ``[-1, 1]`` in x and y; z
points up from the table surface.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rollgym.core.seeding import draw_in_split

FAMILY = "worldmodel"
SHAPES: tuple[str, ...] = ("circle", "square", "triangle")
# Distinct, saturated colours (RGB in [0, 1]) that stand out from the grey table.
PALETTE: tuple[tuple[float, float, float], ...] = (
    (0.90, 0.20, 0.15),
    (0.15, 0.55, 0.95),
    (0.95, 0.80, 0.10),
    (0.20, 0.75, 0.30),
    (0.70, 0.30, 0.85),
    (0.95, 0.50, 0.10),
)
TABLE_HALF = 1.0


@dataclass(frozen=True)
class ObjectSpec:
    """One object of a scene.

    Attributes:
        shape: ``"circle"``, ``"square"`` or ``"triangle"``.
        colour: RGB in ``[0, 1]``.
        radius: Circumradius of the footprint, in table units.
        height: Height of the prism.
        angle: Rotation of the footprint about z, in radians (fixed; pushes translate only).
        position: Initial ``(x, y)`` of the centre.
    """

    shape: str
    colour: tuple[float, float, float]
    radius: float
    height: float
    angle: float
    position: tuple[float, float]

    @property
    def collision_radius(self) -> float:
        """The radius of the disc used for contacts (a little inside the corners)."""
        return self.radius if self.shape == "circle" else 0.85 * self.radius


@dataclass(frozen=True)
class Scene:
    """A seeded scene: objects and where the effector starts."""

    objects: tuple[ObjectSpec, ...]
    effector_start: tuple[float, float, float]

    def key(self) -> bytes:
        """A content key that decides the scene's split (see :func:`rollgym.core.seeding.split_of_key`)."""
        parts = [f"{o.shape}:{o.colour}:{o.radius:.3f}:{o.position[0]:.3f}:{o.position[1]:.3f}" for o in self.objects]
        return ("|".join(parts) + f"|{self.effector_start}").encode()


def random_scene(rng: np.random.Generator, min_objects: int = 2, max_objects: int = 4) -> Scene:
    """Draw a scene whose objects do not overlap.

    Example:
        >>> s = random_scene(np.random.default_rng(0))
        >>> 2 <= len(s.objects) <= 4
        True
    """
    n = int(rng.integers(min_objects, max_objects + 1))
    colours = rng.permutation(len(PALETTE))[:n]
    objects: list[ObjectSpec] = []
    for i in range(n):
        shape = SHAPES[int(rng.integers(len(SHAPES)))]
        radius = float(rng.uniform(0.13, 0.18))
        height = float(radius * rng.uniform(0.7, 1.1))
        angle = float(rng.uniform(0, 2 * np.pi))
        for _ in range(200):
            pos = rng.uniform(-0.7, 0.7, size=2)
            if all(np.hypot(*(pos - np.array(o.position))) > radius + o.radius + 0.05 for o in objects):
                break
        centre = (float(pos[0]), float(pos[1]))
        objects.append(ObjectSpec(shape, PALETTE[int(colours[i])], radius, height, angle, centre))
    start = rng.uniform(-0.6, 0.6, size=2)
    return Scene(tuple(objects), (float(start[0]), float(start[1]), float(rng.uniform(0.25, 0.4))))


def draw_scene(
    split: str, index: int, min_objects: int = 2, max_objects: int = 4
) -> tuple[Scene, np.random.Generator]:
    """Scene ``index`` of ``split`` and the generator that drew it (for the episode's policy).

    Example:
        >>> a, _ = draw_scene("test", 3)
        >>> b, _ = draw_scene("test", 3)
        >>> a == b
        True
    """
    return draw_in_split(
        FAMILY,
        split,
        index,
        lambda rng: random_scene(rng, min_objects, max_objects),
        key=Scene.key,
    )
