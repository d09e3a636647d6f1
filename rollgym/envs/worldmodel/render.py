"""Render a :class:`~rollgym.envs.worldmodel.sim.TabletopSim` from several cameras, in numpy.

Every camera is described per pixel by where its ray meets a horizontal plane:
at height ``h`` the pixel sees table point ``(x0 + h * sx, y0 + h * sy)``. Objects
are prisms, drawn as stacked horizontal slices (dark sides, bright top) from the
farthest to the nearest; shadows fall straight down. The two external cameras
are fixed; the wrist camera looks straight down from just above the fingertip
and moves with it, so its four maps are recomputed every frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rollgym.envs.worldmodel.scene import TABLE_HALF, ObjectSpec
from rollgym.envs.worldmodel.sim import TabletopSim

VIEWS: tuple[str, ...] = ("left", "right", "wrist")
WRIST_HEIGHT = 0.3  # camera above the fingertip
WRIST_TAN = 0.8  # tan of half the wrist camera's field of view
TABLE_RGB = np.array([0.62, 0.58, 0.52], dtype=np.float32)
FLOOR_RGB = np.array([0.22, 0.24, 0.30], dtype=np.float32)
ROD_RGB = np.array([0.80, 0.80, 0.82], dtype=np.float32)
FINGER_RGB = np.array([0.12, 0.12, 0.14], dtype=np.float32)
_SIDE_SHADE = 0.6
_SHADOW = 0.7


@dataclass(frozen=True)
class ExternalCamera:
    """A fixed pinhole camera at ``position`` looking at ``target`` (z up)."""

    position: tuple[float, float, float]
    target: tuple[float, float, float]
    tan_half_fov: float

    def _frame(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The camera's centre and its forward, right and up unit vectors."""
        c = np.array(self.position)
        f = np.array(self.target) - c
        f /= np.linalg.norm(f)
        r = np.cross(f, [0.0, 0.0, 1.0])
        r /= np.linalg.norm(r)
        return c, f, r, np.cross(r, f)

    def plane_maps(self, size: int) -> tuple[np.ndarray, ...]:
        """``(x0, y0, sx, sy)``, each ``(size, size)`` float32: the ray of each pixel at height ``h``."""
        c, f, r, up = self._frame()
        grid = (np.arange(size) + 0.5) / size * 2 - 1
        u, v = np.meshgrid(grid * self.tan_half_fov, grid * self.tan_half_fov)
        d = f + u[..., None] * r - v[..., None] * up
        if (d[..., 2] >= 0).any():
            raise ValueError("Every pixel of an external camera must look down at the table.")
        sx, sy = d[..., 0] / d[..., 2], d[..., 1] / d[..., 2]
        x0, y0 = c[0] - c[2] * sx, c[1] - c[2] * sy
        return tuple(a.astype(np.float32) for a in (x0, y0, sx, sy))


    def project(self, point: np.ndarray, size: int) -> np.ndarray:
        """Pixel ``(column, row)`` of a 3D point, as floats (pixel centres at ``k + 0.5``)."""
        c, f, r, up = self._frame()
        d = np.asarray(point, dtype=np.float64) - c
        depth = d @ f
        u, v = (d @ r) / depth / self.tan_half_fov, -(d @ up) / depth / self.tan_half_fov
        return np.array([(u + 1) / 2 * size, (v + 1) / 2 * size])


CAMERAS: dict[str, ExternalCamera] = {
    "left": ExternalCamera((-1.7, -1.2, 1.9), (0.0, 0.1, 0.0), 0.33),
    "right": ExternalCamera((1.7, -1.2, 1.9), (0.0, 0.1, 0.0), 0.33),
}


def _inside(obj: ObjectSpec, x: np.ndarray, y: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """Whether points ``(x, y)``, relative to the object's centre, fall inside its footprint."""
    c, s = np.cos(obj.angle), np.sin(obj.angle)
    lx, ly = c * x + s * y, c * y - s * x
    r = obj.radius * scale
    if obj.shape == "circle":
        return lx * lx + ly * ly <= r * r  # type: ignore[no-any-return]
    if obj.shape == "square":
        h = r * 0.7071
        return (np.abs(lx) <= h) & (np.abs(ly) <= h)  # type: ignore[no-any-return]
    # equilateral triangle with a vertex along +y; the inradius is half the circumradius
    half = 0.5 * r
    return (ly >= -half) & (0.866 * lx + 0.5 * ly <= half) & (-0.866 * lx + 0.5 * ly <= half)  # type: ignore[no-any-return]


def _disc(x: np.ndarray, y: np.ndarray, radius: float) -> np.ndarray:
    return x * x + y * y <= radius * radius  # type: ignore[no-any-return]


def _segment_distance(cols: np.ndarray, rows: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in pixels from every pixel to the image segment ``a``-``b``."""
    d = b - a
    t = np.clip(((cols - a[0]) * d[0] + (rows - a[1]) * d[1]) / max(float(d @ d), 1e-9), 0.0, 1.0)
    return np.hypot(cols - (a[0] + t * d[0]), rows - (a[1] + t * d[1]))  # type: ignore[no-any-return]


def _table(x0: np.ndarray, y0: np.ndarray) -> np.ndarray:
    """The table's texture (a faint checkerboard, so that camera motion shows) and the floor."""
    checker = ((np.floor(x0 * 4) + np.floor(y0 * 4)) % 2).astype(np.float32)
    img = TABLE_RGB + (checker[..., None] - 0.5) * np.float32(0.08)
    on_table = (np.abs(x0) <= TABLE_HALF) & (np.abs(y0) <= TABLE_HALF)
    return np.where(on_table[..., None], img, FLOOR_RGB).astype(np.float32)


class Renderer:
    """Draws RGB frames of a simulation for a set of views.

    Example:
        >>> from rollgym.envs.worldmodel.scene import draw_scene
        >>> sim = TabletopSim(draw_scene("train", 0)[0])
        >>> Renderer(size=64).render(sim).shape
        (3, 64, 64, 3)
    """

    def __init__(self, views: tuple[str, ...] = VIEWS, size: int = 64) -> None:
        unknown = [v for v in views if v not in VIEWS]
        if unknown or not views:
            raise ValueError(f"Unknown view(s) {unknown}; choose from {', '.join(VIEWS)}.")
        if size < 16:
            raise ValueError(f"Image size must be at least 16 pixels, got {size}.")
        self.views = tuple(views)
        self.size = size
        self._maps = {v: CAMERAS[v].plane_maps(size) for v in views if v in CAMERAS}
        self._backgrounds = {v: _table(m[0], m[1]) for v, m in self._maps.items()}
        grid = ((np.arange(size) + 0.5) / size * 2 - 1).astype(np.float32) * WRIST_TAN
        self._wu, self._wv = np.meshgrid(grid, -grid)
        pix = np.arange(size, dtype=np.float32) + 0.5
        self._cols, self._rows = np.meshgrid(pix, pix)
        self._current_view = ""

    def render(self, sim: TabletopSim) -> np.ndarray:
        """All views of the current state, ``(views, size, size, 3)`` uint8."""
        frames = np.empty((len(self.views), self.size, self.size, 3), dtype=np.uint8)
        for i, view in enumerate(self.views):
            img = self._render_wrist(sim) if view == "wrist" else self._render_external(view, sim)
            frames[i] = (np.clip(img, 0.0, 1.0) * 255 + 0.5).astype(np.uint8)
        return frames

    # -- views ----------------------------------------------------------------
    def _render_external(self, view: str, sim: TabletopSim) -> np.ndarray:
        x0, y0, sx, sy = self._maps[view]
        img = self._backgrounds[view].copy()
        self._shadows(img, x0, y0, sim)
        cam = np.array(CAMERAS[view].position)
        centres = np.column_stack([sim.positions, sim.bottoms + 0.5 * sim.heights])
        order = np.argsort(-np.linalg.norm(centres - cam, axis=1), kind="stable")
        for i in order:
            self._prism(img, x0, y0, sx, sy, sim, int(i))
        self._current_view = view
        self._effector(img, x0, y0, sx, sy, sim)
        return img

    def _render_wrist(self, sim: TabletopSim) -> np.ndarray:
        ex, ey, ez = sim.effector
        cam_z = ez + WRIST_HEIGHT
        # a ray through (u, v) meets height h at (ex + (cam_z - h) u, ey + (cam_z - h) v)
        x0 = (ex + cam_z * self._wu).astype(np.float32)
        y0 = (ey + cam_z * self._wv).astype(np.float32)
        sx, sy = -self._wu, -self._wv
        img = _table(x0, y0)
        self._shadows(img, x0, y0, sim)
        tops = sim.bottoms + sim.heights
        for i in np.argsort(tops, kind="stable"):
            if tops[i] < cam_z - 0.02:
                self._prism(img, x0, y0, sx, sy, sim, int(i))
        self._fingers(img, x0, y0, sx, sy, sim)
        return img

    # -- parts ------------------------------------------------------------------
    def _shadows(self, img: np.ndarray, x0: np.ndarray, y0: np.ndarray, sim: TabletopSim) -> None:
        shade = np.ones(x0.shape, dtype=np.float32)
        for i, obj in enumerate(sim.scene.objects):
            if sim.bottoms[i] > 0.0:
                shade[_inside(obj, x0 - sim.positions[i, 0], y0 - sim.positions[i, 1])] = _SHADOW
        ex, ey, _ = sim.effector
        shade[_disc(x0 - ex, y0 - ey, 0.06)] = _SHADOW
        img *= shade[..., None]

    def _prism(self, img: np.ndarray, x0: np.ndarray, y0: np.ndarray, sx: np.ndarray, sy: np.ndarray,
               sim: TabletopSim, i: int) -> None:
        obj = sim.scene.objects[i]
        px, py = sim.positions[i]
        bottom, height = sim.bottoms[i], sim.heights[i]
        colour = np.array(obj.colour, dtype=np.float32)
        for k, frac in enumerate((0.0, 0.35, 0.7, 1.0)):
            h = np.float32(bottom + frac * height)
            mask = _inside(obj, x0 + h * sx - np.float32(px), y0 + h * sy - np.float32(py))
            img[mask] = colour if k == 3 else colour * _SIDE_SHADE

    def _finger_offsets(self, sim: TabletopSim) -> tuple[float, float]:
        gap = 0.025 + 0.06 * sim.opening
        return -gap, gap

    def _effector(self, img: np.ndarray, x0: np.ndarray, y0: np.ndarray, sx: np.ndarray, sy: np.ndarray,
                  sim: TabletopSim) -> None:
        ex, ey, ez = (np.float32(v) for v in sim.effector)
        for off in self._finger_offsets(sim):
            for h in (ez, ez + np.float32(0.05)):
                x, y = x0 + h * sx - (ex + np.float32(off)), y0 + h * sy - ey
                img[(np.abs(x) <= 0.018) & (np.abs(y) <= 0.03)] = FINGER_RGB
        for h in (ez + np.float32(0.08), ez + np.float32(0.1)):
            img[_disc(x0 + h * sx - ex, y0 + h * sy - ey, 0.08)] = ROD_RGB * 0.8
        view = self._current_view
        a = CAMERAS[view].project(np.array([ex, ey, ez + 0.1]), self.size)
        b = CAMERAS[view].project(np.array([ex, ey, ez + 0.9]), self.size)
        img[_segment_distance(self._cols, self._rows, a, b) <= self.size * 0.016] = ROD_RGB

    def _fingers(self, img: np.ndarray, x0: np.ndarray, y0: np.ndarray, sx: np.ndarray, sy: np.ndarray,
                 sim: TabletopSim) -> None:
        ex, ey, ez = (np.float32(v) for v in sim.effector)
        for off in self._finger_offsets(sim):
            h = ez + np.float32(0.06)
            x, y = x0 + h * sx - (ex + np.float32(off)), y0 + h * sy - ey
            img[(np.abs(x) <= 0.018) & (np.abs(y) <= 0.03)] = FINGER_RGB
