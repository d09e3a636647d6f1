"""Measure that difficulty levels get harder, where the unit tests only check structure: the game ladders.

For each game id and level, a fixed reference player (a bot playing as the agent, through the
text interface) plays ``--games`` games against the level's opponent and board; the win rate
should fall as the level rises. ``--families`` adds the single-agent proxies the tests assert
(Countdown solver states and random-policy hits, ToolWorld/ToolGen oracle tool calls), as one
table. Results print as Markdown and go to ``--out`` as JSON.

Run: nice python bench/bench_difficulty.py [--games 10] [--envs ConnectFour-v0 Hex-v0 Chess-v1] [--out x.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

REFERENCE = {"ConnectFour-v0": "mcts-200", "Hex-v0": "mcts-200", "Chess-v1": "stockfish-nodes-256",
             "Chess960-v1": "stockfish-nodes-256"}


def game_ladder(env_id: str, games: int) -> list[dict[str, Any]]:
    """Win, draw and loss counts of the reference player against every level of ``env_id``."""
    import rollgym
    from rollgym.agents.game_bots import BotAgent
    from rollgym.rollout import collect

    env = rollgym.make(env_id)
    ladder = env.unwrapped.difficulty  # type: ignore[attr-defined]
    env.close()
    rows = []
    for k, level in enumerate(ladder.levels):
        started = time.perf_counter()
        groups = collect(BotAgent(REFERENCE[env_id], seed=0), env_id, n_tasks=games, group_size=1, split="test",
                         seed=k, max_steps=400, task_chooser=_Fixed(k))
        results = [t.info.get("result") for g in groups for t in g.usable()]
        rows.append({"env": env_id, "level": level.name, "reference": REFERENCE[env_id], "games": len(results),
                     "wins": results.count("win"), "draws": results.count("draw"), "losses": results.count("loss"),
                     "seconds": round(time.perf_counter() - started, 1)})
        print(json.dumps(rows[-1]), flush=True)
    return rows


class _Fixed:
    """A task chooser that plays every group at one level (the bench's only use of the hook)."""

    def __init__(self, level: int) -> None:
        self.level = level

    def reset_options(self, env: Any, env_id: str, group_index: int) -> dict[str, Any]:
        return {"difficulty": self.level}

    def observe(self, group: Any) -> None:
        pass

    def end_step(self) -> None:
        pass


def family_proxies() -> list[dict[str, Any]]:
    """The single-agent proxies of tests/test_difficulty_levels.py, per level."""
    import numpy as np

    import rollgym
    from rollgym.agents import OracleAgent
    from rollgym.envs.countdown import countdown_random_policy
    from rollgym.envs.countdown.solver import search_states
    from rollgym.rollout import run_episode
    from rollgym.verifiers.countdown import verify_countdown

    rows = []
    env = rollgym.make("Countdown-v0").unwrapped
    rng = np.random.default_rng(0)
    for k, level in enumerate(env.difficulty.levels):
        tasks = [env.level_source(k).task(i, "train") for i in range(48)]
        states = [search_states(t.meta["numbers"], t.meta["target"], t.meta["operators"]) for t in tasks]
        hits = statistics.mean(verify_countdown(t, countdown_random_policy("", {"task_meta": t.meta}, rng)).correct
                               for t in tasks for _ in range(50))
        rows.append({"env": "Countdown-v0", "level": level.name, "solver_states": statistics.mean(states),
                     "random_policy_success": hits})
    for env_id in ("ToolWorld-v1", "ToolGen-v0"):
        env = rollgym.make(env_id).unwrapped
        for k, level in enumerate(env.difficulty.levels):
            calls = [run_episode(env, OracleAgent(), seed=s, options={"difficulty": k})[0].metrics["tool_calls"]
                     for s in range(48)]
            rows.append({"env": env_id, "level": level.name, "oracle_tool_calls": statistics.mean(calls)})
        env.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=10)
    parser.add_argument("--envs", nargs="*", default=["ConnectFour-v0", "Hex-v0", "Chess-v1"])
    parser.add_argument("--families", action="store_true", help="also the single-agent proxies")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    rows: list[dict[str, Any]] = []
    for env_id in args.envs:
        rows += game_ladder(env_id, args.games)
    print("\n| env | level | reference player | games | wins | draws | losses |\n|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['env']} | {r['level']} | {r['reference']} | {r['games']} | {r['wins']} | {r['draws']} | "
              f"{r['losses']} |")
    if args.families:
        proxies = family_proxies()
        print("\n| env | level | measure | value |\n|---|---|---|---|")
        for r in proxies:
            for key, value in r.items():
                if key not in ("env", "level"):
                    print(f"| {r['env']} | {r['level']} | {key} | {value:.4g} |")
        rows += proxies
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump(rows, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
