"""Strength of model-guided search against the reference bots, with the search budget on one axis.

Players: the reference bots (``random``, ``greedy``, ``mcts-<N>`` with random rollouts) and, over one
language model, external search (:class:`~rollgym.agents.model_search.ModelMCTSBot`: MCTS whose priors and
value are the model's, at several simulation budgets) and internal search
(:class:`~rollgym.agents.internal_search.InternalSearchAgent`: the model writes a tree of futures, at a
tree width). The reference bots play a round robin among themselves; every model player plays every
reference bot; colours alternate. Ratings are :func:`~rollgym.benchmarks.ratings.fit_elo` (maximum
likelihood, ``random`` anchored at 0, 95% intervals). Torch runs on one thread.

    .venv/bin/python bench/bench_model_search.py                       # the tiny random model (built here)
    .venv/bin/python bench/bench_model_search.py --model smollm2-135m-instruct --budgets 1,4 \\
        --opponents random,greedy --internal-widths "" --games 4

Results go to ``bench/results/model_search.json`` (the tiny model) or ``model_search_real.json`` (any other
model), with README rows (``--no-save`` to skip).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import time
from typing import Any

import numpy as np

from rollgym.benchmarks.ratings import GameResult, fit_elo, play_game


def new_state(game: str) -> Any:
    from rollgym.commands.rate import new_state_factory

    return new_state_factory(game, {"size": 5} if game == "hex" else {})()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny", help="'tiny' (built here) or a model folder/name")
    parser.add_argument("--game", default="connect_four", choices=("connect_four", "hex", "chess", "chess960"))
    parser.add_argument("--budgets", default="1,4,16", help="MCTS simulations per move of the model-guided search")
    parser.add_argument("--values", default="judge",
                        help="value modes of the model-guided MCTS: judge (the model's win/lose), random-rollout")
    parser.add_argument("--internal-widths", default="2", help="tree widths of the internal search ('' for none)")
    parser.add_argument("--opponents", default="random,greedy,mcts-50", help="reference bots")
    parser.add_argument("--games", type=int, default=6, help="games per pairing (colours alternate)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(1)
    from rollgym.agents.backends.hf import TransformersBackend
    from rollgym.agents.internal_search import InternalSearchAgent
    from rollgym.agents.model_search import ModelMCTSBot
    from rollgym.envs.games.bots import make_bot

    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    if args.model == "tiny":
        from rollgym.agents.backends.tiny import build_tiny_model

        folder = build_tiny_model(tempfile.mkdtemp(prefix="rollgym-tiny-"), seed=0)
        backend = TransformersBackend.from_pretrained(str(folder))
        model_label = "tiny random model (2 layers, hidden 32)"
    else:
        backend = TransformersBackend.from_pretrained(args.model)
        model_label = args.model
    references = {name: make_bot(name) for name in args.opponents.split(",") if name}
    model_players: dict[str, Any] = {}
    values = [v for v in args.values.split(",") if v]
    for value in values:
        for budget in [int(b) for b in args.budgets.split(",") if b]:
            bot = ModelMCTSBot(backend, simulations=budget, value=value)
            model_players[bot.name] = bot
    for width in [int(w) for w in args.internal_widths.split(",") if w]:
        agent = InternalSearchAgent(backend, width=width, seed=args.seed)
        model_players[agent.name] = agent
    pairings = [(a, b) for i, a in enumerate(references) for b in list(references)[i + 1:]]
    pairings += [(m, r) for m in model_players for r in references]
    players = {**references, **model_players}
    seq = np.random.SeedSequence(args.seed)
    results: list[GameResult] = []
    cpu: dict[str, float] = dict.fromkeys(players, 0.0)
    moves: dict[str, int] = dict.fromkeys(players, 0)
    started = time.process_time()
    for a, b in pairings:
        for k in range(args.games):
            first, second = (a, b) if k % 2 == 0 else (b, a)
            rng = np.random.default_rng(seq.spawn(1)[0])
            timed = [_Timed(players[first], first, cpu, moves), _Timed(players[second], second, cpu, moves)]
            final = play_game(new_state(args.game), timed[0], timed[1], rng)
            results.append(GameResult(first, second, final.score(0)))
        print(f"{a} vs {b}: {sum(r.score if r.first == a else 1 - r.score for r in results[-args.games:])}"
              f"/{args.games}", file=sys.stderr, flush=True)
    ratings = fit_elo(results, {"random": 0.0} if "random" in references else None)
    rows = []
    for name in players:
        r = ratings[name]
        rows.append({"player": name, "elo": round(r.elo), "low": round(r.low), "high": round(r.high),
                     "games": r.games, "points": r.points, "anchored": r.anchored, "perfect": r.perfect,
                     "cpu_s_per_move": round(cpu[name] / moves[name], 3) if moves[name] else None})
        print(f"{name:24s} {r.elo:7.0f} [{r.low:6.0f}, {r.high:6.0f}] {r.points}/{r.games}  "
              f"{rows[-1]['cpu_s_per_move']} CPU s/move")
    internal = {name: dict(p.stats) for name, p in model_players.items() if isinstance(p, InternalSearchAgent)}
    if internal:
        print("internal search:", internal)
    figures = {"model": model_label, "game": args.game, "games_per_pairing": args.games, "seed": args.seed,
               "torch_threads": 1, "ratings": rows, "internal_search_stats": internal,
               "results": [{"first": r.first, "second": r.second, "score": r.score} for r in results],
               "cpu_seconds": round(time.process_time() - started, 1)}
    if args.no_save:
        return
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from publish import save_results

    def cell(name: str) -> str:
        r = ratings[name]
        return f"{r.elo:.0f} [{r.low:.0f}, {r.high:.0f}]"

    game = args.game.replace("_", " ")
    peer = ", ".join(f"{n} {cell(n)}" for n in references if n != "random")
    rows_out = []
    externals: list[str] = []
    for value in values:
        mine = [n for n, p in model_players.items()
                if isinstance(p, ModelMCTSBot) and p.evaluator.value_mode == value]
        externals += mine
        budgets = " / ".join(str(model_players[n].simulations) for n in mine)
        how = "win/lose value" if value == "judge" else "value from one random game"
        what = (f"Model-guided MCTS (the model's move priors, {how}, no engine), {game}, {model_label}: "
                f"Elo [95% interval] at {budgets} simulations a move, random = 0, {args.games} games a pairing")
        rows_out.append({"what": what, "rollgym": " / ".join(cell(n) for n in mine), "peer": peer, "ratio": ""})
    for n, p in model_players.items():
        if isinstance(p, InternalSearchAgent):
            base = externals[0] if externals else None
            rows_out.append({
                "what": f"Internal search (the model writes a tree of futures, width {p.width}, then picks), "
                        f"{game}, {model_label}: Elo [95% interval], random = 0",
                "rollgym": cell(n),
                "peer": f"{base} {cell(base)}" if base else "",
                "ratio": f"{p.stats['malformed']}/{p.stats['searches']} trees malformed (fell back to the priors)",
            })
    command = "python bench/bench_model_search.py " + shlex.join(sys.argv[1:])
    if args.model == "tiny":
        path = save_results("model_search", figures, rows_out, command=command.strip(), load_before=load_before)
    else:
        path = save_results("model_search_real", figures, rows_out, command=command.strip(), load_before=load_before)
    print(path)


class _Timed:
    """A player whose CPU time and moves are counted."""

    def __init__(self, player: Any, name: str, cpu: dict[str, float], moves: dict[str, int]) -> None:
        self.player, self.name, self.cpu, self.moves = player, name, cpu, moves

    def choose(self, state: Any, rng: np.random.Generator) -> Any:
        t = time.process_time()
        move = self.player.choose(state, rng)
        self.cpu[self.name] += time.process_time() - t
        self.moves[self.name] += 1
        return move


if __name__ == "__main__":
    main()
