"""Partial rollouts (APRIL) against synchronous collection, on a long-tailed generation workload.

The policy is a latency model of a batching inference engine: each decode step of a
request takes a fixed time whatever else is running (perfect batching), every token
ends the answer with a fixed probability (geometric lengths with a long tail up to
``max_tokens``), and every engine call first prefills its prompt at ``prefill_ms``
per token, so continuing a chunked generation pays again for the prompt and the
tokens sampled so far (re-sent prefixes are charged; the engine keeps no prefix
cache). Each training step costs ``train_ms`` per trained token in every arm. Token
ids are real ids of the tiny local tokenizer; the env is Countdown.

- synchronous: each step collects ``groups`` fresh groups with ``collect_async`` and
  waits for the longest answer, as a plain GRPO loop does;
- APRIL: :class:`~rollgym.rollout.partial.PartialRollouts` keeps
  ``over_provision x groups`` in flight, returns as soon as ``groups`` are done and
  carries the rest over, with ``chunk_tokens`` (pausing inside long generations, at
  the price of re-sent prefixes) or without (pausing only between turns).

All arms produce the same number of finished groups per step; the figure is steps per
second (rollouts and training) and the ratio to synchronous. The APRIL paper reports
up to 44% more rollout throughput on real engines; here only the scheduling differs.
Held-out accuracy against wall time with a real model is the ``april`` experiment
(``python -m rollgym.train.experiments april``).

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

    def __init__(self, tokenizer: Any, step_s: float = 0.002, stop_p: float = 1 / 96, seed: int = 0,
                 prefill_s: float = 0.0001) -> None:
        self.tokenizer = tokenizer
        self.step_s = step_s
        self.prefill_s = prefill_s
        self.prefill_tokens = 0
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
            self.prefill_tokens += len(prompt)
            await asyncio.sleep(self.prefill_s * len(prompt) + self.step_s * len(ids))
            finish = "stop" if ids[-1] == self.eos else "length"
            return Generation(self.tokenizer.decode(ids, skip_special_tokens=True), ids, [-1.0] * len(ids), finish,
                              self.policy_version, list(prompt))

        return list(await asyncio.gather(*(one(p) for p in prompts)))


def train(groups: list[Any], train_s_per_token: float) -> None:
    """A training step's cost: proportional to the tokens it trains on, the same in every arm."""
    time.sleep(train_s_per_token * sum(len(t.completion_ids) for g in groups for t in g.trajectories))


def main(quick: bool = False) -> None:
    folder = build_tiny_model(tempfile.mkdtemp(prefix="rollgym-bench-"))
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    steps, groups, group_size, max_tokens = (4, 4, 4, 384) if quick else (10, 8, 4, 512)
    train_s = 0.00005  # 50 us per trained token: about a quarter of a synchronous step here
    sampling = SamplingParams(max_tokens=max_tokens, temperature=1.0)

    engine = GeometricEngine(tokenizer)
    started = time.perf_counter()
    for step in range(steps):
        out = collect_async(ChatAgent(engine, sampling), "Countdown-v0", groups, group_size, split="train", seed=step,
                            concurrency=groups * group_size)
        train(out, train_s)
        engine.policy_version += 1
    sync_s = time.perf_counter() - started
    sync_prefill = engine.prefill_tokens

    rows = []
    for over, chunk in ((1.5, 32), (2.0, 32), (1.5, None), (2.0, None)):
        engine = GeometricEngine(tokenizer)
        with PartialRollouts(ChatAgent(engine, sampling), "Countdown-v0", group_size=group_size,
                             groups_per_step=groups, over_provision=over, chunk_tokens=chunk) as rollouts:
            started = time.perf_counter()
            mixed = 0
            for _ in range(steps):
                out = rollouts.step()
                train(out, train_s)
                mixed += sum(len(t.metrics.get("policy_versions", [])) > 1 for g in out for t in g.trajectories)
                engine.policy_version += 1
            rows.append((over, chunk, time.perf_counter() - started, mixed, rollouts.cost()["resent_prefix_tokens"],
                         engine.prefill_tokens))

    print(f"{steps} steps of {groups} groups x {group_size}, geometric lengths (mean 96, cap {max_tokens}), "
          f"{engine.step_s * 1e3:.0f} ms per decode step, {engine.prefill_s * 1e3:.1f} ms per prefilled token, "
          f"{train_s * 1e6:.0f} us per trained token")
    print(f"{'collector':<36}{'steps/s':>9}{'ratio':>7}{'carried':>9}{'re-sent tokens':>16}{'prefilled':>11}")
    print(f"{'synchronous (collect_async)':<36}{steps / sync_s:>9.2f}{1.0:>7.2f}{'-':>9}{0:>16}{sync_prefill:>11}")
    for over, chunk, seconds, mixed, resent, prefilled in rows:
        name = f"APRIL x{over}, " + (f"chunks of {chunk}" if chunk else "no chunks")
        print(f"{name:<36}{steps / seconds:>9.2f}{sync_s / seconds:>7.2f}{mixed:>9}{resent:>16}{prefilled:>11}")
    if not quick:
        from publish import save_results

        figures = {"steps": steps, "groups": groups, "group_size": group_size, "max_tokens": max_tokens,
                   "sync_steps_per_s": steps / sync_s, "sync_prefilled_tokens": sync_prefill,
                   "april": [{"over_provision": over, "chunk_tokens": chunk, "steps_per_s": steps / seconds,
                              "ratio": sync_s / seconds, "carried": mixed, "resent_prefix_tokens": resent,
                              "prefilled_tokens": prefilled}
                             for over, chunk, seconds, mixed, resent, prefilled in rows]}
        labels = " / ".join(f"x{over:g} {'chunks of ' + str(chunk) if chunk else 'no chunks'}"
                            for over, chunk, *_ in rows)
        row = {"what": f"APRIL partial rollouts vs synchronous steps (long-tailed lengths, prefill of re-sent "
                       f"prefixes and training time charged; {labels})",
               "rollgym": " / ".join(f"{steps / seconds:.2f}" for _, _, seconds, *_ in rows) + " steps/s",
               "peer": f"{steps / sync_s:.2f} steps/s",
               "ratio": " / ".join(f"{sync_s / seconds:.2f}x" for _, _, seconds, *_ in rows)}
        save_results("partial", figures, [row], command="python bench/bench_partial.py")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
