"""``rollgym rate``: Elo ratings with 95% intervals from game results, or from a tournament it runs.

Examples::

    rollgym rate results.jsonl --anchor random=0
    rollgym rate --game connect_four --bots random,greedy,mcts-50,mcts-200 --games 10 --out c4.jsonl
    rollgym rate --game chess --bots random,stockfish-skill-0,stockfish-elo-1500 --anchor stockfish-elo-1500=1500
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rollgym.commands.options import parse_pairs
from rollgym.core.errors import ConfigError

GAMES = ("connect_four", "hex", "chess", "chess960")


def register(subparsers: Any) -> None:
    """Add the ``rate`` sub-command."""
    parser = subparsers.add_parser(
        "rate", help="Elo ratings (maximum likelihood, anchored, 95%% intervals) from game results or a tournament",
        description="Fit Bradley-Terry / Elo ratings by maximum likelihood. Pass a JSONL file of results "
                    '({"first": A, "second": B, "score": 1|0.5|0} per line), or --game and --bots to play a '
                    "round robin that alternates colours. Chess ratings are on the Stockfish scale, not FIDE.",
    )
    parser.add_argument("results", nargs="?", help="JSONL file of game results")
    parser.add_argument("--game", choices=GAMES, help="play a tournament in this game")
    parser.add_argument("--bots", default="random,greedy,mcts-100",
                        help="comma-separated bot names (random, greedy, mcts-<N>, stockfish, stockfish-skill-<S>, "
                             "stockfish-elo-<E>)")
    parser.add_argument("--games", type=int, default=10, help="games per pair of bots (colours alternate)")
    parser.add_argument("--game-arg", action="append", default=[], metavar="KEY=VALUE",
                        help="game option, e.g. rows=5, size=7, swap=true, max_plies=200 (repeatable)")
    parser.add_argument("--anchor", action="append", default=[], metavar="NAME=ELO",
                        help="fix a player's rating (repeatable); default: random=0 when present")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="also write the tournament's results to this JSONL file")
    parser.add_argument("--json", action="store_true", help="print the ratings as JSON")
    parser.set_defaults(func=run)


def new_state_factory(game: str, options: dict[str, Any]) -> Any:
    """A function that returns a fresh start position of ``game`` with ``options``."""
    if game == "connect_four":
        from rollgym.envs.games.connect_four import ConnectFourState

        ConnectFourState(**options)
        return lambda: ConnectFourState(**options)
    if game == "hex":
        from rollgym.envs.games.hex import HexState

        HexState(**options)
        return lambda: HexState(**options)
    from rollgym.envs.games.chess_state import ChessState

    options = {"max_plies": 300, **options, "chess960": game == "chess960"}
    ChessState(**options)
    return lambda: ChessState(**options)


def run(args: argparse.Namespace) -> int:
    """Load or play the games, fit the ratings and print them."""
    from rich.console import Console
    from rich.table import Table

    from rollgym.benchmarks.ratings import fit_elo, load_results, run_tournament, save_results

    console = Console(highlight=False)
    anchors = {k: float(v) for k, v in parse_pairs(args.anchor, "--anchor").items()}
    game = args.game
    if args.results and args.game:
        raise ConfigError("Pass either a results file or --game, not both.")
    if args.results:
        results = load_results(args.results)
    elif game:
        from rollgym.agents.game_bots import ClosingBot
        from rollgym.envs.games.bots import make_bot

        names = [b.strip() for b in args.bots.split(",") if b.strip()]
        if len(set(names)) < 2:
            raise ConfigError("--bots needs at least two different bots, e.g. --bots random,greedy.")
        factory = new_state_factory(game, parse_pairs(args.game_arg, "--game-arg"))
        bots = {name: make_bot(name) for name in dict.fromkeys(names)}
        total = len(bots) * (len(bots) - 1) // 2 * args.games
        from rich.progress import Progress

        try:
            with Progress(console=console, transient=True) as progress:
                task = progress.add_task(f"{game} round robin", total=total)
                results = run_tournament(factory, bots, args.games, seed=args.seed,
                                         on_game=lambda _: progress.advance(task))
        finally:
            for bot in bots.values():
                if isinstance(bot, ClosingBot):
                    bot.close()
        if args.out:
            save_results(results, args.out)
    else:
        raise ConfigError("Pass a results file, or --game with --bots to play a tournament.")
    players = {r.first for r in results} | {r.second for r in results}
    if not anchors and "random" in players:
        anchors = {"random": 0.0}
    ratings = fit_elo(results, anchors or None)
    # a results file does not say its game: Stockfish among the players means these are chess ratings
    chess_ratings = game in ("chess", "chess960") or any(p.lower().startswith("stockfish") for p in players)
    scale = ("Stockfish scale (Stockfish's UCI_Elo calibration), not FIDE" if chess_ratings
             else "Elo relative to the anchors")
    if args.json:
        print(json.dumps({"scale": scale, "games": len(results), "ratings": [
            {"name": r.name, "elo": r.elo, "low": r.low, "high": r.high, "games": r.games, "points": r.points,
             "anchored": r.anchored, "perfect": r.perfect} for r in ratings.values()]}, indent=2))
        return 0
    table = Table(title=f"Ratings from {len(results)} games ({scale})")
    for column in ("player", "Elo", "95% interval", "games", "score"):
        table.add_column(column, justify="left" if column == "player" else "right")
    for r in sorted(ratings.values(), key=lambda x: -x.elo):
        interval = "anchor" if r.anchored else f"{r.low:.0f} to {r.high:.0f}"
        if r.perfect:
            interval += " (perfect record)"
        table.add_row(r.name, f"{r.elo:.0f}", interval, str(r.games), f"{100 * r.points / r.games:.0f}%")
    console.print(table)
    return 0
