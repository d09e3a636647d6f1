"""Self-play episode speed against the bot baseline, on Connect Four and Kuhn poker.

Self-play: :func:`rollgym.rollout.selfplay.play_seated` plays one game with an agent
in both seats and builds one trajectory per seat (per-seat observations, event logs,
Score fields). Baseline: the path a user has without self-play, one episode of the
single-agent env against its bot through the collector's own episode loop
(:func:`rollgym.rollout.episode.run_episode`), which builds one trajectory. The
agents are the same cheap scripted players on both paths (random moves for Connect
Four, the Nash strategy for Kuhn poker), so the rates measure the episode machinery,
not a model. Rates are episodes per CPU second of this process; the ratio is
self-play / baseline (above 1 means self-play episodes are cheaper).

    .venv/bin/python bench/bench_selfplay.py [--seconds 3] [--quick]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import rollgym
from rollgym.agents import RandomAgent
from rollgym.agents.game_bots import BotAgent
from rollgym.envs.games.board_seats import BoardSeats
from rollgym.envs.games.kuhn import KuhnPoker, NashKuhnBot
from rollgym.rollout.episode import run_episode
from rollgym.rollout.selfplay import play_seated


def rate(fn: Callable[[int], Any], seconds: float) -> float:
    """Calls of ``fn(i)`` per CPU second of this process over about ``seconds`` (after one warm-up call)."""
    fn(0)
    count, start = 0, time.process_time()
    while time.process_time() - start < seconds:
        count += 1
        fn(count)
    return count / (time.process_time() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--quick", action="store_true", help="0.2 s per measurement, nothing saved")
    args = parser.parse_args()
    secs = 0.2 if args.quick else args.seconds

    c4_game = BoardSeats(rollgym.make("ConnectFour-v0"))
    c4_seats = [BotAgent("random", seed=0), BotAgent("random", seed=1)]
    c4_env = rollgym.make("ConnectFour-v0", opponent="random")
    c4_agent = RandomAgent(seed=0)
    kuhn_game = KuhnPoker()
    kuhn_seats = [NashKuhnBot(seed=0), NashKuhnBot(seed=1)]
    kuhn_env = rollgym.make("KuhnPoker-v0", opponent="nash")
    kuhn_agent = NashKuhnBot(seed=2)

    rows = [
        ("Connect Four 6x7, random moves", rate(lambda i: play_seated(c4_game, c4_seats, seed=i), secs),
         rate(lambda i: run_episode(c4_env, c4_agent, seed=i), secs)),
        ("Kuhn poker, Nash strategy", rate(lambda i: play_seated(kuhn_game, kuhn_seats, seed=i), secs),
         rate(lambda i: run_episode(kuhn_env, kuhn_agent, seed=i), secs)),
    ]
    width = max(len(r[0]) for r in rows) + 2
    print(f"{'episodes per CPU second'.ljust(width)}{'self-play':>12}{'vs bot':>12}{'ratio':>8}")
    for name, ours, base in rows:
        print(f"{name.ljust(width)}{ours:12.0f}{base:12.0f}{ours / base:8.2f}")
    if not args.quick:
        from publish import save_results

        readme = [{"what": f"Self-play episodes/s, {name} (both seats agents, a trajectory per seat) / against the "
                           "env's bot (one trajectory)",
                   "rollgym": f"{ours:,.0f}", "peer": f"vs bot {base:,.0f}", "ratio": f"{ours / base:.2f}x"}
                  for name, ours, base in rows]
        save_results("selfplay", {"rows": [{"measure": n, "selfplay": o, "vs_bot": b} for n, o, b in rows],
                                  "seconds_per_measurement": secs}, readme, command="python bench/bench_selfplay.py")


if __name__ == "__main__":
    main()
