"""``SearchConfig``: how a search episode runs and is rewarded, checked on construction.

What a question looks like (topology, hops, dispersion, ...) is a
:class:`~rollgym.envs.search.questions.QuestionSpec`; this holds the rest of the
options of ``Search-v1`` and ``SearchQA-v1``.
"""

from __future__ import annotations

from dataclasses import dataclass

from rollgym.core.config import check_bool, check_choice, check_int, check_number
from rollgym.envs.search.world import DEFAULT_SIZE, MAX_SIZE, MIN_SIZE

REWARDS = ("em", "f1")


@dataclass(frozen=True)
class SearchConfig:
    """The world, the limits and the reward of a search episode.

    Attributes:
        world_size: Entities in the generated world (``MIN_SIZE`` to ``MAX_SIZE``; 2000 by default).
        world_seed: Seed of the world (any integer).
        max_turns: Actions per episode (at least 1) before it is truncated.
        max_calls_per_turn: Tool calls run per action (at least 1).
        reward: ``"em"`` (exact match) or ``"f1"`` (token F1 without hedges).
        efficiency_weight: Weight of the round budget in the reward, from 0 to 1.
        budget_scale: Multiplier (0 or more) of the reference rounds that make the budget.
        hedge_guard: ``True`` (v1): an F1 answer longer than the gold earns nothing.

    Example:
        >>> SearchConfig(reward="exact")
        Traceback (most recent call last):
        ...
        rollgym.core.errors.ConfigError: reward must be one of 'em', 'f1', got 'exact'.
    """

    world_size: int = DEFAULT_SIZE
    world_seed: int = 0
    max_turns: int = 20
    max_calls_per_turn: int = 8
    reward: str = "em"
    efficiency_weight: float = 0.0
    budget_scale: float = 1.0
    hedge_guard: bool = True

    def __post_init__(self) -> None:
        check_int("world_size", self.world_size, MIN_SIZE, MAX_SIZE)
        check_int("world_seed", self.world_seed)
        check_int("max_turns", self.max_turns, 1)
        check_int("max_calls_per_turn", self.max_calls_per_turn, 1)
        check_choice("reward", self.reward, REWARDS)
        object.__setattr__(self, "efficiency_weight", check_number("efficiency_weight", self.efficiency_weight, 0, 1))
        object.__setattr__(self, "budget_scale", check_number("budget_scale", self.budget_scale, 0))
        check_bool("hedge_guard", self.hedge_guard)
