"""Board-game speed, side by side with OpenSpiel's Python bindings on this machine.

Reports random games per second (Connect Four 6x7, Hex 11x11) on two paths: the playout
shortcut MCTS rollouts use (``GameState.random_playout``; for Hex, fill the board at random and
flood-fill the winner once) and move by move through ``play()``, the path the envs' steps take;
then MCTS
simulations per second (rollgym's MCTS vs OpenSpiel's Python MCTSBot, both with
one random rollout per leaf), and the wall time of full Stockfish games. Ratios
are rollgym / OpenSpiel (above 1 means rollgym is faster). Rates are per CPU
second of this process; Stockfish games are wall time (the engine is another process).

    .venv/bin/python bench/bench_games.py [--seconds 3] [--json out.json] [--quick]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from rollgym.envs.games.connect_four import ConnectFourState
from rollgym.envs.games.hex import HexState
from rollgym.envs.games.mcts import MCTS


def rate(fn: Callable[[], Any], seconds: float) -> float:
    """Calls of ``fn`` per CPU second of this process over about ``seconds`` (after one warm-up call).

    CPU time, not wall time, so that other work on a shared machine does not skew the ratios;
    both libraries run single-threaded in this process.
    """
    fn()
    count, start = 0, time.process_time()
    while time.process_time() - start < seconds:
        fn()
        count += 1
    return count / (time.process_time() - start)


def our_playout(make: Callable[[], Any], rng: np.random.Generator) -> Callable[[], Any]:
    return lambda: make().random_playout(rng)


def our_move_by_move(make: Callable[[], Any], rng: random.Random) -> Callable[[], Any]:
    """A random game through the public play() API, one move at a time (the union-find path for Hex)."""

    def run() -> Any:
        state = make()
        while not state.is_terminal():
            moves = state.legal_moves()
            state.play(moves[rng.randrange(len(moves))])
        return state.winner()

    return run


def spiel_playout(game: Any, rng: random.Random) -> Callable[[], Any]:
    def run() -> Any:
        state = game.new_initial_state()
        while not state.is_terminal():
            actions = state.legal_actions()
            state.apply_action(actions[rng.randrange(len(actions))])
        return state.returns()

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="time per measurement")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 0.3 s per measurement")
    args = parser.parse_args()
    secs = 0.3 if args.quick else args.seconds
    rng = np.random.default_rng(0)
    prng = random.Random(0)
    rows: list[tuple[str, float, float | None]] = []
    try:
        import pyspiel
        from open_spiel.python.algorithms import mcts as spiel_mcts
    except ImportError:
        pyspiel = None
        print("OpenSpiel is not installed (pip install open-spiel); showing rollgym figures only.")

    c4 = pyspiel.load_game("connect_four") if pyspiel else None
    hex11 = pyspiel.load_game("hex", {"board_size": 11}) if pyspiel else None

    ours = rate(our_playout(ConnectFourState, rng), secs)
    rows.append(("Connect Four 6x7 random playouts/s", ours, rate(spiel_playout(c4, prng), secs) if c4 else None))
    ours = rate(our_move_by_move(ConnectFourState, prng), secs)
    rows.append(("Connect Four 6x7 playouts/s via play()", ours, rows[0][2]))
    ours = rate(our_playout(lambda: HexState(11), rng), secs)
    spiel_hex = rate(spiel_playout(hex11, prng), secs) if hex11 else None
    rows.append(("Hex 11x11 random playouts/s (fill + flood fill)", ours, spiel_hex))
    ours = rate(our_move_by_move(lambda: HexState(11), prng), secs)
    rows.append(("Hex 11x11 random playouts/s via play() (union-find)", ours, spiel_hex))

    for label, make, game in [("Connect Four", ConnectFourState, c4), ("Hex 11x11", lambda: HexState(11), hex11)]:
        sims = 400
        search = MCTS(sims, take_wins=False)
        ours = rate(lambda make=make, search=search: search.search(make(), rng), secs) * sims
        theirs = None
        if game is not None:
            bot = spiel_mcts.MCTSBot(game, 1.4, sims, spiel_mcts.RandomRolloutEvaluator(1, np.random.RandomState(0)),
                                     random_state=np.random.RandomState(0), solve=False)
            theirs = rate(lambda game=game, bot=bot: bot.step(game.new_initial_state()), secs) * sims
        rows.append((f"{label} MCTS simulations/s (400 per move, empty board)", ours, theirs))

    chess_rows = bench_stockfish()
    width = max(len(r[0]) for r in rows + chess_rows) + 2
    print(f"{'measure'.ljust(width)}{'rollgym':>12}{'OpenSpiel':>12}{'ratio':>8}")
    for name, ours, theirs in rows + chess_rows:
        theirs_text = f"{theirs:12.0f}" if theirs else f"{'-':>12}"
        ratio = f"{ours / theirs:8.2f}" if theirs else f"{'-':>8}"
        fmt = f"{ours:12.2f}" if ours < 100 else f"{ours:12.0f}"
        print(f"{name.ljust(width)}{fmt}{theirs_text}{ratio}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump([{"measure": n, "rollgym": o, "openspiel": t} for n, o, t in rows + chess_rows], f, indent=2)
    if not args.quick and rows[0][2] and rows[2][2]:
        from publish import save_results

        measured = [{"measure": n, "rollgym": o, "openspiel": t} for n, o, t in rows + chess_rows]
        paths = (("Connect Four random games (/s): MCTS playout shortcut / move by move through `play()`, the env's "
                  "path", rows[0], rows[1]),
                 ("Hex 11x11 random games (/s): playout shortcut (fill the board, flood-fill once) / move by move "
                  "through `play()`, the env's path", rows[2], rows[3]))
        readme = [{"what": label, "rollgym": f"{shortcut:,.0f} / {env_path:,.0f}", "peer": f"OpenSpiel {theirs:,.0f}",
                   "ratio": f"{shortcut / theirs:.1f}x / {env_path / theirs:.2f}x"}
                  for label, (_, shortcut, theirs), (_, env_path, _) in paths if theirs]
        save_results("games", {"rows": measured, "seconds_per_measurement": secs}, readme,
                     command="python bench/bench_games.py")


def bench_stockfish() -> list[tuple[str, float, float | None]]:
    """Seconds per full game: Stockfish (full strength, 2000 nodes/move) vs random, and skill 0 vs skill 20."""
    try:
        from rollgym.benchmarks.ratings import play_game
        from rollgym.envs.games.bots import RandomBot, StockfishBot
        from rollgym.envs.games.chess_state import ChessState
    except ImportError:
        return []
    from rollgym.core.errors import MissingDependencyError

    out: list[tuple[str, float, float | None]] = []
    try:
        with StockfishBot(20, nodes=2000, movetime=None) as strong, StockfishBot(0, nodes=2000, movetime=None) as weak:
            rng = np.random.default_rng(0)
            pairs = [("Stockfish-20 vs random", strong, RandomBot()), ("Stockfish skill 0 vs 20", weak, strong)]
            for label, a, b in pairs:
                times, plies = [], []
                for _ in range(3):
                    start = time.perf_counter()
                    final = play_game(ChessState(max_plies=300), a, b, rng)
                    times.append(time.perf_counter() - start)
                    plies.append(len(final.history))
                out.append((f"chess: s per game, {label} (2000 nodes/move, mean {np.mean(plies):.0f} plies)",
                            float(np.mean(times)), None))
    except MissingDependencyError as exc:
        print(exc)
    return out


if __name__ == "__main__":
    main()
