"""UserSim: the simulated user's turn latency, next to a tool turn and to a model in the user's seat.

Run: ``.venv/bin/python bench/bench_usersim.py`` (a few minutes, most of it building and running the tiny model;
``--quick`` for a smoke run without the model).

Measured in the same run, through ``env.step`` of ``UserSim-v0`` as the oracle plays (so parsing, the user's
rules, recording and the terminal grading of the last turn are included):

1. **user turn**: an agent message answered by the rule-driven user (intent matching, paraphrase, state);
2. **tool turn**: an agent tool call answered by ToolWorld's apps, in the same episodes;
3. **model user turn**: the same messages answered by a model in the user's seat, the smallest there is: the
   tests' tiny random 2-layer model on the CPU through the transformers backend (``user_model=backend_user(...)``).
   tau2-bench puts an API LLM in that seat; a real model costs far more than this floor.

Also the user's ``respond`` alone, and oracle episodes per second. Nothing here asserts: the figures go into
docs/usersim.md and the README.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from typing import Any

import rollgym
from rollgym.agents import OracleAgent
from rollgym.envs.usersim.user import QUESTIONS, SimulatedUser, default_device


def percentiles(samples: list[float]) -> dict[str, float]:
    """p50 and p95 in milliseconds."""
    ordered = sorted(samples)
    return {"p50_ms": 1000 * statistics.median(ordered), "p95_ms": 1000 * ordered[int(0.95 * (len(ordered) - 1))],
            "n": len(ordered)}


def step_times(env: Any, episodes: int, max_user_turns: int | None = None) -> dict[str, list[float]]:
    """Wall time of every ``env.step`` by channel, over oracle episodes."""
    times: dict[str, list[float]] = {"user": [], "tools": []}
    agent = OracleAgent()
    for index in range(episodes):
        observation, info = env.reset(options={"task_index": index})
        agent.reset(index)
        done = False
        while not done:
            action = agent.act(observation, info)
            start = time.perf_counter()
            observation, _, terminated, truncated, info = env.step(action)
            times[info["channel"]].append(time.perf_counter() - start)
            done = terminated or truncated
            if max_user_turns is not None and len(times["user"]) >= max_user_turns:
                return times
    return times


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer episodes and no model in the user's seat")
    args = parser.parse_args(argv)
    episodes = 20 if args.quick else 200
    report: dict[str, Any] = {}

    user = SimulatedUser({"amount": "$12.50", "person": "Dana Okafor"}, default_device(("payments",)), patience=10**9)
    questions = list(QUESTIONS.values())
    samples = []
    for i in range(episodes * 20):
        start = time.perf_counter()
        user.respond(questions[i % len(questions)])
        samples.append(time.perf_counter() - start)
    report["respond_only"] = percentiles(samples)

    env = rollgym.make("UserSim-v0").unwrapped
    step_times(env, 5)  # warm the base worlds
    start = time.perf_counter()
    times = step_times(env, episodes)
    report["oracle_episodes_per_s"] = episodes / (time.perf_counter() - start)
    report["user_turn"] = percentiles(times["user"])
    report["tool_turn"] = percentiles(times["tools"])
    env.close()

    if not args.quick:
        from rollgym.agents.backends.base import SamplingParams
        from rollgym.agents.backends.hf import TransformersBackend
        from rollgym.agents.backends.tiny import build_tiny_model
        from rollgym.agents.llm_user import backend_user

        with tempfile.TemporaryDirectory() as folder:
            backend = TransformersBackend.from_pretrained(str(build_tiny_model(folder, seed=0)))
            model = backend_user(backend, SamplingParams(max_tokens=24, temperature=0.7, seed=0))
            llm_env = rollgym.make("UserSim-v0", user_model=model).unwrapped
            step_times(llm_env, 2, max_user_turns=2)  # warm up
            report["model_user_turn"] = percentiles(step_times(llm_env, 40, max_user_turns=60)["user"])
            llm_env.close()

    print(f"{'measure':36s} {'p50 ms':>10s} {'p95 ms':>10s} {'n':>7s}")
    for key in ("respond_only", "user_turn", "tool_turn", "model_user_turn"):
        if key in report:
            r = report[key]
            print(f"{key:36s} {r['p50_ms']:10.3f} {r['p95_ms']:10.3f} {r['n']:7d}")
    print(f"oracle episodes/s: {report['oracle_episodes_per_s']:.1f}")
    if not args.quick:
        from publish import save_results

        ours, model_p50 = report["user_turn"]["p50_ms"], report["model_user_turn"]["p50_ms"]
        save_results("usersim", report, [
            {"what": "UserSim user turn through env.step (p50): rule-driven user vs the tiny 2-layer test model in "
                     "the user's seat (CPU)", "rollgym": f"{ours:.2f} ms", "peer": f"{model_p50:.1f} ms",
             "ratio": f"{model_p50 / ours:.0f}x"},
        ], command="python bench/bench_usersim.py")
    return report


if __name__ == "__main__":
    main(sys.argv[1:])
