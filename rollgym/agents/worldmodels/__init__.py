"""Deprecated: the reference world models moved to :mod:`rollgym.envs.worldmodel.models`.

They live with ``WorldModel-v0``, next to their network, training script,
weights and report. This alias goes in rollgym 0.3.0.
"""

from rollgym.core.deprecation import moved_to

__getattr__ = moved_to(__name__, {
    name: "rollgym.envs.worldmodel.models"
    for name in ("CopyLastModel", "LinearExtrapolationModel", "FlowWarpWorldModel", "WORLD_MODELS",
                 "make_world_model", "evaluate", "SHIPPED_WEIGHTS", "WEIGHTS_DIR", "VIEW_IDS")
})
