"""Elo ratings by maximum likelihood (Bradley-Terry), anchored to fixed players, with 95% intervals.

A game between ``first`` and ``second`` scores ``s`` in ``{0, 0.5, 1}`` for
``first``; its likelihood is ``p**s * (1 - p)**(1 - s)`` with
``p = 1 / (1 + 10 ** ((R_second - R_first) / 400))``, so a draw counts as half a
win (the usual Elo treatment). Anchored players keep their given rating; the
others are fitted by Newton's method, and each interval is ``±1.96`` standard
errors from the inverse observed information. A weak Gaussian prior (standard
deviation ``prior_sd`` Elo, around the anchors' mean) keeps a perfect record
finite; such players are flagged ``perfect`` and their intervals are wide.

Ratings of chess bots here are on the Stockfish scale (Stockfish's own
``UCI_Elo`` calibration, anchored as the caller says), not FIDE ratings.

:func:`run_tournament` plays bots against each other on any
:class:`~rollgym.envs.games.base.GameState`, alternating colours.
:func:`seated_results` turns self-play and multi-agent games
(:func:`rollgym.rollout.selfplay.play_seated`, e.g. from
:func:`rollgym.rollout.selfplay.round_robin` of checkpoints and fixed bots) into
the same :class:`GameResult` records, so checkpoints are rated beside the bots.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rollgym.core.errors import ConfigError
from rollgym.core.io import write_jsonl_atomic

ELO_PER_NAT = 400.0 / math.log(10.0)
Z95 = 1.959963984540054


@dataclass(frozen=True)
class GameResult:
    """One game: who moved first, who second, and the first player's score (1, 0.5 or 0)."""

    first: str
    second: str
    score: float

    def __post_init__(self) -> None:
        if self.score not in (0.0, 0.5, 1.0):
            raise ConfigError(f"A game score must be 1, 0.5 or 0 for the first player, got {self.score!r}.")
        if self.first == self.second:
            raise ConfigError(f"A player cannot play itself ({self.first!r}).")


@dataclass(frozen=True)
class Rating:
    """A fitted rating: Elo, its 95% interval, games played, points scored, whether anchored or perfect."""

    name: str
    elo: float
    low: float
    high: float
    games: int
    points: float
    anchored: bool = False
    perfect: bool = False

    @property
    def margin(self) -> float:
        """Half the width of the 95% interval."""
        return (self.high - self.low) / 2


def expected_score(elo_a: float, elo_b: float) -> float:
    """Expected score of a player rated ``elo_a`` against one rated ``elo_b``.

    Example:
        >>> round(expected_score(1600, 1200), 3)
        0.909
    """
    return 1.0 / (1.0 + 10.0 ** ((elo_b - elo_a) / 400.0))


def fit_elo(results: Iterable[GameResult], anchors: dict[str, float] | None = None,
            prior_sd: float = 1000.0, max_iter: int = 100) -> dict[str, Rating]:
    """Fit Elo ratings to game results by maximum likelihood.

    Args:
        results: the games.
        anchors: players with fixed ratings, e.g. ``{"random": 0}``; by default the
            player with the most games is anchored at 0.
        prior_sd: standard deviation (Elo) of the weak prior that keeps perfect records finite.

    Raises:
        ConfigError: when there are no games, an anchor never played, or some player
            is not linked to an anchor through games.

    Example:
        >>> games = [GameResult("a", "b", 1.0)] * 3 + [GameResult("b", "a", 1.0)]
        >>> ratings = fit_elo(games, anchors={"b": 0})
        >>> ratings["a"].elo > 0
        True
    """
    games = list(results)
    if not games:
        raise ConfigError("No games to rate; play a tournament or pass a results file first.")
    names = sorted({g.first for g in games} | {g.second for g in games})
    counts = dict.fromkeys(names, 0)
    points = dict.fromkeys(names, 0.0)
    for g in games:
        counts[g.first] += 1
        counts[g.second] += 1
        points[g.first] += g.score
        points[g.second] += 1.0 - g.score
    if not anchors:
        anchors = {max(names, key=lambda n: (counts[n], n)): 0.0}
    unknown = [a for a in anchors if a not in counts]
    if unknown:
        raise ConfigError(f"Anchor(s) {unknown} played no games; anchor one of: {', '.join(names)}.")
    _check_connected(games, names, set(anchors))
    free = [n for n in names if n not in anchors]
    index = {n: i for i, n in enumerate(free)}
    theta0 = np.array([anchors[n] for n in anchors], dtype=float).mean() / ELO_PER_NAT
    theta = np.full(len(free), theta0)
    inv_var = 1.0 / (prior_sd / ELO_PER_NAT) ** 2 if prior_sd else 0.0
    fixed = {n: v / ELO_PER_NAT for n, v in anchors.items()}
    a_idx = np.array([index.get(g.first, -1) for g in games])
    b_idx = np.array([index.get(g.second, -1) for g in games])
    a_fix = np.array([fixed.get(g.first, 0.0) for g in games])
    b_fix = np.array([fixed.get(g.second, 0.0) for g in games])
    scores = np.array([g.score for g in games])

    def parts(th: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        ta = np.where(a_idx >= 0, th[np.maximum(a_idx, 0)] if len(th) else 0.0, a_fix)
        tb = np.where(b_idx >= 0, th[np.maximum(b_idx, 0)] if len(th) else 0.0, b_fix)
        d = ta - tb
        p = 1.0 / (1.0 + np.exp(-d))
        eps = 1e-12
        loglik = float(np.sum(scores * np.log(p + eps) + (1 - scores) * np.log(1 - p + eps)))
        loglik -= 0.5 * inv_var * float(np.sum((th - theta0) ** 2))
        grad = -inv_var * (th - theta0)
        hess = -inv_var * np.eye(len(th))
        w = p * (1 - p)
        r = scores - p
        fa, fb = a_idx >= 0, b_idx >= 0
        both = fa & fb
        np.add.at(grad, a_idx[fa], r[fa])
        np.add.at(grad, b_idx[fb], -r[fb])
        diag = np.zeros(len(th))
        np.add.at(diag, a_idx[fa], w[fa])
        np.add.at(diag, b_idx[fb], w[fb])
        hess -= np.diag(diag)
        np.add.at(hess, (a_idx[both], b_idx[both]), w[both])
        np.add.at(hess, (b_idx[both], a_idx[both]), w[both])
        return loglik, grad, hess

    if free:
        loglik, grad, hess = parts(theta)
        for _ in range(max_iter):
            step = np.linalg.solve(hess, -grad)
            t = 1.0
            while t > 1e-6:
                candidate = theta + t * step
                new_loglik, new_grad, new_hess = parts(candidate)
                if new_loglik >= loglik - 1e-12:
                    break
                t /= 2
            theta, loglik, grad, hess = candidate, new_loglik, new_grad, new_hess
            if np.max(np.abs(t * step)) < 1e-9:
                break
        cov = np.linalg.inv(-hess)
        se = np.sqrt(np.maximum(np.diag(cov), 0.0)) * ELO_PER_NAT
    ratings: dict[str, Rating] = {}
    for n in names:
        if n in anchors:
            ratings[n] = Rating(n, float(anchors[n]), float(anchors[n]), float(anchors[n]), counts[n], points[n],
                                anchored=True)
            continue
        elo = float(theta[index[n]] * ELO_PER_NAT)
        half = float(Z95 * se[index[n]])
        perfect = points[n] in (0.0, float(counts[n]))
        ratings[n] = Rating(n, elo, elo - half, elo + half, counts[n], points[n], perfect=perfect)
    return ratings


def _check_connected(games: Sequence[GameResult], names: list[str], anchors: set[str]) -> None:
    links: dict[str, set[str]] = {n: set() for n in names}
    for g in games:
        links[g.first].add(g.second)
        links[g.second].add(g.first)
    seen = set(anchors)
    stack = list(anchors)
    while stack:
        for other in links[stack.pop()]:
            if other not in seen:
                seen.add(other)
                stack.append(other)
    cut_off = [n for n in names if n not in seen]
    if cut_off:
        raise ConfigError(
            f"{', '.join(cut_off)} never played anyone linked to an anchor, so their ratings are undefined; "
            "add games against rated players."
        )


def simulate_results(true_elos: dict[str, float], games_per_pair: int, rng: np.random.Generator,
                     draw_rate: float = 0.0) -> list[GameResult]:
    """Round-robin results drawn from the Elo model (colours alternate), for testing the fit.

    With ``draw_rate`` d, a game is drawn with probability ``d * 2 * min(p, 1 - p)`` and
    otherwise won with the remaining probabilities, so the expected score stays ``p``.
    """
    names = sorted(true_elos)
    results = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            for k in range(games_per_pair):
                first, second = (a, b) if k % 2 == 0 else (b, a)
                p = expected_score(true_elos[first], true_elos[second])
                draw = draw_rate * 2 * min(p, 1 - p)
                u = rng.random()
                score = 1.0 if u < p - draw / 2 else (0.5 if u < p + draw / 2 else 0.0)
                results.append(GameResult(first, second, score))
    return results


def play_game(state: Any, first: Any, second: Any, rng: np.random.Generator) -> Any:
    """Play one game between two bots (``choose(state, rng)``) from ``state``; returns the final state."""
    bots = (first, second)
    while not state.is_terminal():
        move = bots[state.current_player].choose(state.copy(), rng)
        state.play(move)
    return state


def run_tournament(new_state: Callable[[], Any], bots: dict[str, Any], games_per_pair: int, seed: int = 0,
                   on_game: Callable[[GameResult], None] | None = None) -> list[GameResult]:
    """A round robin in which every pair plays ``games_per_pair`` games, alternating who moves first.

    Example:
        >>> from rollgym.envs.games.bots import make_bot
        >>> from rollgym.envs.games.connect_four import ConnectFourState
        >>> res = run_tournament(ConnectFourState, {"random": make_bot("random"), "greedy": make_bot("greedy")}, 2)
        >>> len(res), {r.first for r in res} == {"random", "greedy"}
        (2, True)
    """
    if games_per_pair < 1:
        raise ConfigError(f"games_per_pair must be at least 1, got {games_per_pair}.")
    names = list(bots)
    seq = np.random.SeedSequence(seed)
    results = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            for k in range(games_per_pair):
                first, second = (a, b) if k % 2 == 0 else (b, a)
                rng = np.random.default_rng(seq.spawn(1)[0])
                final = play_game(new_state(), bots[first], bots[second], rng)
                result = GameResult(first, second, final.score(0))
                results.append(result)
                if on_game is not None:
                    on_game(result)
    return results


def seated_results(trajectories: Iterable[Any]) -> list[GameResult]:
    """One :class:`GameResult` per finished two-seat game in ``trajectories`` (seated-game trajectories).

    A game is the seats sharing a ``group_id`` and ``info["episode"]``; the players are
    ``info["players"]`` and the first seat scores 1, 0.5 or 0 as its payoff is above, equal to
    or below the second seat's (so chip payoffs such as poker's count as wins and losses).
    Games with a failed, aborted or truncated seat are left out (they have no result).

    Example:
        >>> from rollgym.rollout.types import Trajectory
        >>> seats = [Trajectory(f"t{s}", "g", s, "K", "t", 0, reward=r,
        ...                     info={"seat": s, "episode": 0, "players": ["ckpt-10", "nash"], "payoffs": [2.0, -2.0]})
        ...          for s, r in enumerate([2.0, -2.0])]
        >>> seated_results(seats)
        [GameResult(first='ckpt-10', second='nash', score=1.0)]
    """
    games: dict[tuple[str, Any], list[Any]] = {}
    for traj in trajectories:
        games.setdefault((traj.group_id, traj.info.get("episode")), []).append(traj)
    results = []
    for seats in games.values():
        seats.sort(key=lambda t: int(t.info.get("seat", 0)))
        if len(seats) != 2 or any(t.status != "completed" for t in seats):
            continue
        players, payoffs = seats[0].info.get("players"), seats[0].info.get("payoffs")
        if not players or payoffs is None or len(players) != 2 or len(payoffs) != 2:
            continue
        first, second = float(payoffs[0]), float(payoffs[1])
        score = 1.0 if first > second else 0.5 if first == second else 0.0
        results.append(GameResult(str(players[0]), str(players[1]), score))
    return results


def save_results(results: Iterable[GameResult], path: str | os.PathLike[str]) -> None:
    """Write results as JSON lines, atomically (temp file, then rename)."""
    write_jsonl_atomic(path, (asdict(r) for r in results))


def load_results(path: str | os.PathLike[str]) -> list[GameResult]:
    """Read JSON-lines results: ``{"first": .., "second": .., "score": 1|0.5|0}`` per line.

    ``white``/``black`` are accepted for ``first``/``second``, and ``result`` as
    ``"1-0"``, ``"0-1"`` or ``"1/2-1/2"`` instead of ``score``.
    """
    file = Path(path)
    if not file.exists():
        raise ConfigError(f"Results file {str(file)!r} does not exist; pass a JSONL file of games.")
    results = []
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            first = str(row.get("first", row.get("white")))
            second = str(row.get("second", row.get("black")))
            score = row["score"] if "score" in row else {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}[row["result"]]
            results.append(GameResult(first, second, float(score)))
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError, ValueError) as exc:
            raise ConfigError(
                f"Line {number} of {file} is not a game result ({exc}); write "
                '{"first": "a", "second": "b", "score": 1}.'
            ) from exc
    return results
