"""``WorldModelConfig``: the options of ``WorldModel-v0``, checked on construction."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from rollgym.core.config import check_choice, check_int, check_subset
from rollgym.core.errors import ConfigError
from rollgym.envs.worldmodel.policies import POLICIES
from rollgym.envs.worldmodel.render import VIEWS

MODES = ("autoregressive", "teacher_forced")
REGIONS = ("full", "motion", "both")
LPIPS_CHOICES = (True, False, "auto")


@dataclass(frozen=True)
class WorldModelConfig:
    """What a world-model episode looks like and how it is scored.

    Attributes:
        views: Cameras to predict, distinct names from ``left``, ``right``, ``wrist``.
        size: Frame side in pixels (at least 32).
        context: Context frames shown before each chunk (at least 1).
        chunk: Frames to predict per step (at least 1).
        min_chunks: Fewest chunks per episode (at least 1).
        max_chunks: Most chunks per episode (at least ``min_chunks``).
        mode: ``"autoregressive"`` (predictions feed the next context) or ``"teacher_forced"``.
        policy: The robot's policy: ``random``, ``push``, ``pick_place`` or ``mixed``.
        view_weights: ``{view: weight}``, non-negative, not all zero (normalised); ``None``: equal.
        reward_region: ``"full"``, ``"motion"`` or ``"both"``.
        lpips: ``"auto"`` (when the backbone weights are local), ``True`` (require them) or ``False``.

    Example:
        >>> WorldModelConfig(views=("left", "top"))
        Traceback (most recent call last):
        ...
        rollgym.core.errors.ConfigError: views may only hold 'left', 'right', 'wrist', got 'top'.
    """

    views: tuple[str, ...] = VIEWS
    size: int = 64
    context: int = 2
    chunk: int = 4
    min_chunks: int = 2
    max_chunks: int = 5
    mode: str = "autoregressive"
    policy: str = "mixed"
    view_weights: dict[str, float] | None = field(default=None, hash=False)
    reward_region: str = "both"
    lpips: bool | str = "auto"

    def __post_init__(self) -> None:
        object.__setattr__(self, "views", check_subset("views", list(self.views) if isinstance(
            self.views, (list, tuple)) else self.views, VIEWS))
        check_int("size", self.size, 32)
        check_int("context", self.context, 1)
        check_int("chunk", self.chunk, 1)
        check_int("min_chunks", self.min_chunks, 1)
        check_int("max_chunks", self.max_chunks, self.min_chunks, low_name="min_chunks")
        check_choice("mode", self.mode, MODES)
        check_choice("policy", self.policy, POLICIES)
        check_choice("reward_region", self.reward_region, REGIONS)
        check_choice("lpips", self.lpips, LPIPS_CHOICES)
        if self.view_weights is not None:
            weights: Any = self.view_weights
            if not isinstance(weights, dict) or set(weights) != set(self.views) or any(
                not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0 for w in weights.values()
            ) or sum(weights.values()) <= 0:
                raise ConfigError(
                    f"view_weights needs a non-negative weight for each of {self.views}, not all zero; "
                    f"got {weights!r}."
                )

    @property
    def weights(self) -> dict[str, float]:
        """The view weights, normalised to sum to 1."""
        raw = {v: 1.0 for v in self.views} if self.view_weights is None else dict(self.view_weights)
        total = sum(raw.values())
        return {v: raw[v] / total for v in self.views}
