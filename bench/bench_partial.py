"""Partial rollouts (APRIL) against synchronous collection, on a long-tailed generation workload.

The policy is a latency model of a batching inference engine: each decode step of a
request takes a fixed time whatever else is running (perfect batching), and every
token ends the answer with a fixed probability, so answer lengths are geometric, with
a long tail up to ``max_tokens``. Token ids are real ids of the tiny local tokenizer;
the env is Countdown.

- synchronous: each step collects ``groups`` fresh groups with ``collect_async`` and
  waits for the longest answer, as a plain GRPO loop does;
- APRIL: :class:`~rollgym.rollout.partial.PartialRollouts` keeps
  ``over_provision x groups`` in flight, returns as soon as ``groups`` are done and
  carries the rest over (``chunk_tokens`` tokens per engine call).

Both produce the same number of finished groups per step; the figure is steps per
second and the ratio APRIL / synchronous. The APRIL paper reports up to 44% more
rollout throughput on real engines; here only the scheduling differs.

Run: ``.venv/bin/python bench/bench_partial.py [--quick]``.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from typing import Any

import numpy as np

from rollgym.agents.backends.base import Generation, SamplingParams
from rollgym.agents.backends.tiny import build_tiny_model
from rollgym.agents.chat import ChatAgent
from rollgym.rollout.partial import PartialRollouts
from rollgym.rollout.stream import collect_async


class GeometricEngine:
    """Decode steps of ``step_s`` each; every token is the last with probability ``stop_p``."""

    name = "geometric-engine"

    def __init__(self, tokenizer: Any, step_s: float = 0.002, stop_p: float = 1 / 96, seed: int = 0) -> None:
        self.tokenizer = tokenizer
        self.step_s = step_s
        self.stop_p = stop_p
        self.policy_version = 0
        self.rng = np.random.default_rng(seed)
        self.eos = int(tokenizer.eos_token_id)
        self.filler = int(tokenizer("1", add_special_tokens=False)["input_ids"][0])

    async def generate(self, prompts: list[Any], sampling: SamplingParams) -> list[Generation]:
        async def one(prompt: list[int]) -> Generation:
            ids: list[int] = []
            for _ in range(sampling.max_tokens):
                if self.rng.random() < self.stop_p:
                    ids.append(self.eos)
                    break
                ids.append(self.filler)
            await asyncio.sleep(self.step_s * len(ids))
            finish = "stop" if ids[-1] == self.eos else "length"
            return Generation(self.tokenizer.decode(ids, skip_special_tokens=True), ids, [-1.0] * len(ids), finish,
                              self.policy_version, list(prompt))

        return list(await asyncio.gather(*(one(p) for p in prompts)))


def main(quick: bool = False) -> None:
    folder = build_tiny_model(tempfile.mkdtemp(prefix="rollgym-bench-"))
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    steps, groups, group_size, max_tokens = (4, 4, 4, 384) if quick else (10, 8, 4, 512)
    sampling = SamplingParams(max_tokens=max_tokens, temperature=1.0)

    engine = GeometricEngine(tokenizer)
    started = time.perf_counter()
    for step in range(steps):
        collect_async(ChatAgent(engine, sampling), "Countdown-v0", groups, group_size, split="train", seed=step,
                      concurrency=groups * group_size)
        engine.policy_version += 1
    sync_s = time.perf_counter() - started

    rows = []
    for over in (1.5, 2.0):
        engine = GeometricEngine(tokenizer)
        with PartialRollouts(ChatAgent(engine, sampling), "Countdown-v0", group_size=group_size,
                             groups_per_step=groups, over_provision=over, chunk_tokens=32) as rollouts:
            started = time.perf_counter()
            mixed = 0
            for _ in range(steps):
                out = rollouts.step()
                mixed += sum(len(t.metrics.get("policy_versions", [])) > 1 for g in out for t in g.trajectories)
                engine.policy_version += 1
            rows.append((over, time.perf_counter() - started, mixed))

    print(f"{steps} steps of {groups} groups x {group_size}, geometric lengths (mean 96, cap {max_tokens}), "
          f"{engine.step_s * 1e3:.0f} ms per decode step")
    print(f"{'collector':<28}{'steps/s':>10}{'ratio':>8}{'carried rollouts':>18}")
    print(f"{'synchronous (collect_async)':<28}{steps / sync_s:>10.2f}{1.0:>8.2f}{'-':>18}")
    for over, seconds, mixed in rows:
        print(f"{f'APRIL, over-provision {over}':<28}{steps / seconds:>10.2f}{sync_s / seconds:>8.2f}{mixed:>18}")
    if not quick:
        from publish import save_results

        figures = {"steps": steps, "groups": groups, "group_size": group_size, "max_tokens": max_tokens,
                   "sync_steps_per_s": steps / sync_s,
                   "april": [{"over_provision": over, "steps_per_s": steps / seconds, "ratio": sync_s / seconds,
                              "carried": mixed} for over, seconds, mixed in rows]}
        overs = " / ".join(f"{over:g}" for over, _, _ in rows)
        row = {"what": f"APRIL partial rollouts vs synchronous steps (long-tailed lengths, over-provision {overs})",
               "rollgym": " / ".join(f"{steps / seconds:.2f}" for _, seconds, _ in rows) + " steps/s",
               "peer": f"{steps / sync_s:.2f} steps/s",
               "ratio": " / ".join(f"{sync_s / seconds:.2f}x" for _, seconds, _ in rows)}
        save_results("partial", figures, [row], command="python bench/bench_partial.py")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
