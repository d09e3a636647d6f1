"""Deprecated: Monte Carlo tree search moved to :mod:`rollgym.envs.games.mcts` (the game envs' opponents use it).

This alias goes in rollgym 0.3.0.
"""

from rollgym.core.deprecation import moved_to

__getattr__ = moved_to(__name__, {
    name: "rollgym.envs.games.mcts"
    for name in ("Evaluator", "RandomRolloutEvaluator", "CallableEvaluator", "SearchResult", "MCTS")
})
