"""Deprecated: the flow-warping network moved to :mod:`rollgym.envs.worldmodel.network` (goes in rollgym 0.3.0)."""

from rollgym.core.deprecation import moved_to

__getattr__ = moved_to(__name__, {
    name: "rollgym.envs.worldmodel.network" for name in ("FlowWarpNet", "rollout", "NUM_VIEWS", "ACTION_DIM",
                                                         "IN_CHANNELS")
})
