"""Helpers shared by the UserSim tests."""

from __future__ import annotations

import rollgym
from rollgym.envs.usersim.scenarios import SCENARIOS


def irreversible_tasks(limit: int) -> list[tuple[str, int]]:
    """The first ``limit`` (split, index) pairs of UserSim-v1 whose scenario has an irreversible action."""
    env = rollgym.make("UserSim-v1").unwrapped
    found = [(split, i) for split in ("train", "test_unseen") for i in range(40)
             if SCENARIOS[env.source.task(i, split).meta["scenario"]].irreversible][:limit]
    env.close()
    return found
