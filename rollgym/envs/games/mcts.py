"""Monte Carlo tree search over any :class:`~rollgym.envs.games.base.GameState`, with pluggable evaluators.

The evaluator is what makes the search useful for language models: it returns
a value for the player to move and, optionally, prior probabilities over the
legal moves. :class:`RandomRolloutEvaluator` plays random games to the end
(classic UCT); :class:`CallableEvaluator` wraps any two functions, e.g. an LLM
asked "who is better here?" and "which moves look best?" (the external-search
setting, where the model guides a search it does not run itself). With priors
the tree policy is PUCT; without, UCT with unvisited moves first.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from rollgym.core.errors import ConfigError
from rollgym.envs.games.base import GameState


@runtime_checkable
class Evaluator(Protocol):
    """Scores leaves for :class:`MCTS`."""

    def evaluate(self, state: GameState, rng: np.random.Generator) -> float:
        """Expected result for the player to move in ``state``, in ``[-1, 1]`` (1 = that player wins)."""
        ...

    def priors(self, state: GameState, moves: Sequence[Any]) -> Sequence[float] | None:
        """Prior probabilities aligned with ``moves``, or ``None`` for none (plain UCT)."""
        ...


class RandomRolloutEvaluator:
    """The mean result of ``n_rollouts`` uniformly random games from the leaf.

    Example:
        >>> from rollgym.envs.games.connect_four import ConnectFourState
        >>> v = RandomRolloutEvaluator(4).evaluate(ConnectFourState(), np.random.default_rng(0))
        >>> -1.0 <= v <= 1.0
        True
    """

    def __init__(self, n_rollouts: int = 1) -> None:
        if n_rollouts < 1:
            raise ConfigError(f"n_rollouts must be at least 1, got {n_rollouts}.")
        self.n_rollouts = n_rollouts

    def evaluate(self, state: GameState, rng: np.random.Generator) -> float:
        player = state.current_player
        total = 0.0
        for _ in range(self.n_rollouts):
            winner = state.copy().random_playout(rng)
            total += 0.0 if winner is None else (1.0 if winner == player else -1.0)
        return total / self.n_rollouts

    def priors(self, state: GameState, moves: Sequence[Any]) -> Sequence[float] | None:
        return None


class CallableEvaluator:
    """An evaluator built from functions, for example ones that ask a language model.

    Args:
        value_fn: ``value_fn(state) -> float`` in ``[-1, 1]`` for the player to move;
            ``None`` falls back to one random rollout.
        prior_fn: ``prior_fn(state, moves) -> list[float]`` (need not be normalised);
            ``None`` means no priors.
    """

    def __init__(
        self,
        value_fn: Callable[[GameState], float] | None = None,
        prior_fn: Callable[[GameState, Sequence[Any]], Sequence[float]] | None = None,
    ) -> None:
        self.value_fn = value_fn
        self.prior_fn = prior_fn
        self._rollout = RandomRolloutEvaluator(1)

    def evaluate(self, state: GameState, rng: np.random.Generator) -> float:
        if self.value_fn is None:
            return self._rollout.evaluate(state, rng)
        value = float(self.value_fn(state))
        return max(-1.0, min(1.0, value)) if math.isfinite(value) else 0.0

    def priors(self, state: GameState, moves: Sequence[Any]) -> Sequence[float] | None:
        if self.prior_fn is None:
            return None
        raw = [max(0.0, float(p)) if math.isfinite(float(p)) else 0.0 for p in self.prior_fn(state, moves)]
        if len(raw) != len(moves) or sum(raw) <= 0:
            return None  # a malformed prior falls back to uniform rather than corrupting the search
        total = sum(raw)
        return [p / total for p in raw]


class _Node:
    __slots__ = ("children", "move", "player", "prior", "total", "visits")

    def __init__(self, move: Any, player: int, prior: float) -> None:
        self.move = move
        self.player = player  # the player who made ``move``; ``total`` is from their side
        self.prior = prior
        self.visits = 0
        self.total = 0.0
        self.children: list[_Node] | None = None


@dataclass
class SearchResult:
    """What a search found: the chosen move and visit counts and mean values of the root's moves."""

    move: Any
    visits: dict[Any, int]
    values: dict[Any, float]
    simulations: int


class MCTS:
    """UCT / PUCT search.

    Args:
        simulations: simulations per move.
        evaluator: leaf evaluator; one random rollout by default.
        uct_c: exploration constant (UCT uses ``c * sqrt(ln N / n)``, PUCT ``c * p * sqrt(N) / (1 + n)``).
        take_wins: play a move that wins at once without searching (plain UCT may otherwise
            prefer a slower win that it sampled more often).

    Example:
        >>> from rollgym.envs.games.connect_four import ConnectFourState
        >>> s = ConnectFourState()
        >>> for col in [0, 6, 0, 6, 0]:
        ...     s.play(col)
        >>> MCTS(200).search(s, np.random.default_rng(0)).move  # O must block column 1
        0
    """

    def __init__(self, simulations: int = 400, evaluator: Evaluator | None = None, uct_c: float = 1.4,
                 take_wins: bool = True) -> None:
        if not isinstance(simulations, int) or simulations < 1:
            raise ConfigError(f"MCTS simulations must be a positive integer, got {simulations!r}.")
        self.simulations = simulations
        self.evaluator: Evaluator = evaluator if evaluator is not None else RandomRolloutEvaluator(1)
        self.uct_c = uct_c
        self.take_wins = take_wins

    def _expand(self, node: _Node, state: GameState, rng: np.random.Generator) -> None:
        moves = state.legal_moves()
        priors = self.evaluator.priors(state, moves)
        order = rng.permutation(len(moves))  # random tie-breaking among unvisited moves
        player = state.current_player
        if priors is None:
            node.children = [_Node(moves[i], player, 1.0) for i in order]
        else:
            node.children = [_Node(moves[i], player, float(priors[i])) for i in order]

    def _select(self, node: _Node, use_priors: bool) -> _Node:
        children = node.children
        assert children
        c = self.uct_c
        if use_priors:
            sqrt_n = math.sqrt(node.visits + 1)
            return max(
                children,
                key=lambda ch: (ch.total / ch.visits if ch.visits else 0.0) + c * ch.prior * sqrt_n / (1 + ch.visits),
            )
        for child in children:
            if child.visits == 0:
                return child
        log_n = math.log(node.visits)
        return max(children, key=lambda ch: ch.total / ch.visits + c * math.sqrt(log_n / ch.visits))

    def search(self, state: GameState, rng: np.random.Generator) -> SearchResult:
        """Search from ``state`` (not modified) and return the most visited move."""
        if state.is_terminal():
            raise ValueError("MCTS.search needs a position that is not over.")
        if self.take_wins:
            wins = state.winning_moves(state.current_player)
            if wins:
                return SearchResult(wins[0], {wins[0]: 0}, {wins[0]: 1.0}, 0)
        root = _Node(None, 1 - state.current_player, 1.0)
        self._expand(root, state, rng)
        use_priors = any(ch.prior != 1.0 for ch in root.children or [])
        if root.children and len(root.children) == 1:
            only = root.children[0].move
            return SearchResult(only, {only: 0}, {only: 0.0}, 0)
        evaluator = self.evaluator
        for _ in range(self.simulations):
            sim = state.copy()
            node = root
            path = [root]
            while True:
                if sim.is_terminal():
                    winner = sim.winner()
                    value0 = 0.0 if winner is None else (1.0 if winner == 0 else -1.0)
                    break
                if node.children is None:
                    self._expand(node, sim, rng)
                    to_move = sim.current_player
                    v = evaluator.evaluate(sim, rng)
                    value0 = v if to_move == 0 else -v
                    break
                node = self._select(node, use_priors)
                sim.play(node.move)
                path.append(node)
            for n in path:
                n.visits += 1
                n.total += value0 if n.player == 0 else -value0
        children = root.children or []
        best = max(children, key=lambda ch: (ch.visits, ch.total / ch.visits if ch.visits else -2.0))
        return SearchResult(
            best.move,
            {ch.move: ch.visits for ch in children},
            {ch.move: (ch.total / ch.visits if ch.visits else 0.0) for ch in children},
            self.simulations,
        )
