"""Partial rollouts (APRIL) against synchronous collection, on a long-tailed generation workload.

The policy is a latency model of a batching inference engine whose throughput saturates
with batch size, as a real one's does. The engine runs in steps; a step decodes one token
of every running request and costs ``step_s * max(1, running / knee)``: below ``knee``
requests a step costs ``step_s`` whatever the batch (decoding is memory-bound), beyond it
the cost grows with the batch, so tokens per second level off at ``knee / step_s``. A
request admitted to a step first prefills its prompt at ``prefill_s`` per token, added to
that step's time (prefill is compute-bound: a batch's prompts cost their sum). Continuing
a chunked generation sends the prompt and the tokens sampled so far again, and they are
prefilled again (the engine keeps no prefix cache). Every token ends the answer with a
fixed probability (geometric lengths with a long tail up to ``max_tokens``). Each
training step costs ``train_s`` per trained token in every arm. Token ids are real ids
of the tiny local tokenizer; the env is Countdown.

- synchronous: each step collects ``groups`` fresh groups with ``collect_async`` and
  waits for the longest answer, as a plain GRPO loop does;
- synchronous x2, two steps (the control): collects ``2 x groups`` at once and trains two
  steps on them, the second one on answers one version stale: the same in-flight count
  and staleness as APRIL x2 without chunks, with no partial rollouts at all;
- APRIL: :class:`~rollgym.rollout.partial.PartialRollouts` keeps
  ``over_provision x groups`` in flight, returns as soon as ``groups`` are done and
  carries the rest over, with ``chunk_tokens`` (pausing inside long generations, at
  the price of re-sent prefixes) or without (pausing only between turns).

All arms produce the same number of finished groups per step; the figure is steps per
second (rollouts and training) and the ratio to synchronous. The APRIL paper reports
up to 44% more rollout throughput on real engines; here only the scheduling differs.
Held-out accuracy against wall time with a real model is the ``april`` experiment
(``python -m research april``).

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


class _Request:
    def __init__(self, prompt: list[int], max_tokens: int, future: asyncio.Future[Generation]) -> None:
        self.prompt = prompt
        self.max_tokens = max_tokens
        self.future = future
        self.ids: list[int] = []


class BatchedEngine:
    """A batching engine model: steps of ``step_s * max(1, running / knee)`` plus the prefill of admitted prompts.

    Every token is the last with probability ``stop_p``. Requests join the next step and
    leave when they stop or reach their ``max_tokens``; a step's time is slept against a
    running deadline, so the Python work between steps does not add up over a run.
    """

    name = "batched-engine"

    def __init__(self, tokenizer: Any, step_s: float = 0.002, knee: int = 32, stop_p: float = 1 / 96, seed: int = 0,
                 prefill_s: float = 0.000005) -> None:
        self.tokenizer = tokenizer
        self.step_s = step_s
        self.knee = knee
        self.prefill_s = prefill_s
        self.prefill_tokens = 0
        self.engine_steps = 0
        self.busy_s = 0.0  # the modelled engine time, for comparison with the wall time
        self.stop_p = stop_p
        self.policy_version = 0
        self.rng = np.random.default_rng(seed)
        self.eos = int(tokenizer.eos_token_id)
        self.filler = int(tokenizer("1", add_special_tokens=False)["input_ids"][0])
        self._waiting: list[_Request] = []
        self._running: list[_Request] = []
        self._stepper: asyncio.Task[None] | None = None

    def step_time(self, running: int, prefill_tokens: int) -> float:
        """The modelled time of one engine step."""
        return self.step_s * max(1.0, running / self.knee) + self.prefill_s * prefill_tokens

    async def generate(self, prompts: list[Any], sampling: SamplingParams) -> list[Generation]:
        loop = asyncio.get_running_loop()
        requests = [_Request(list(p), sampling.max_tokens, loop.create_future()) for p in prompts]
        self._waiting.extend(requests)
        if self._stepper is None or self._stepper.done() or self._stepper.get_loop() is not loop:
            self._stepper = loop.create_task(self._run())
        return list(await asyncio.gather(*(r.future for r in requests)))

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time()
        while self._waiting or self._running:
            admitted, self._waiting = self._waiting, []
            prefill = sum(len(r.prompt) for r in admitted)
            self.prefill_tokens += prefill
            self._running += admitted
            seconds = self.step_time(len(self._running), prefill)
            self.busy_s += seconds
            self.engine_steps += 1
            deadline = max(deadline + seconds, loop.time())  # running late: the step overlapped that work
            await asyncio.sleep(max(0.0, deadline - loop.time()))
            still = []
            for r in self._running:
                if r.future.done():  # cancelled by its caller
                    continue
                stop = self.rng.random() < self.stop_p
                r.ids.append(self.eos if stop else self.filler)
                if stop or len(r.ids) >= r.max_tokens:
                    finish = "stop" if stop else "length"
                    r.future.set_result(Generation(self.tokenizer.decode(r.ids, skip_special_tokens=True), r.ids,
                                                   [-1.0] * len(r.ids), finish, self.policy_version, r.prompt))
                else:
                    still.append(r)
            self._running = still


def train(groups: list[Any], train_s_per_token: float) -> None:
    """A training step's cost: proportional to the tokens it trains on, the same in every arm."""
    time.sleep(train_s_per_token * sum(len(t.completion_ids) for g in groups for t in g.trajectories))


def run_synchronous(tokenizer: Any, sampling: SamplingParams, steps: int, groups: int, group_size: int,
                    train_s: float, per_collect: int) -> tuple[float, BatchedEngine]:
    """``steps`` training steps of ``groups`` groups, collecting ``per_collect`` steps' groups at a time."""
    engine = BatchedEngine(tokenizer)
    started = time.perf_counter()
    for first in range(0, steps, per_collect):
        count = min(per_collect, steps - first)
        out = collect_async(ChatAgent(engine, sampling), "Countdown-v0", groups * count, group_size, split="train",
                            seed=first, concurrency=groups * count * group_size)
        for k in range(count):  # the later steps train on answers sampled before the earlier updates
            train(out[k * groups:(k + 1) * groups], train_s)
            engine.policy_version += 1
    return time.perf_counter() - started, engine


def main(quick: bool = False) -> None:
    folder = build_tiny_model(tempfile.mkdtemp(prefix="rollgym-bench-"))
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    steps, groups, group_size, max_tokens = (4, 4, 4, 384) if quick else (10, 8, 4, 512)
    train_s = 0.00005  # 50 us per trained token: about a quarter of a synchronous step here
    sampling = SamplingParams(max_tokens=max_tokens, temperature=1.0)

    sync_s, engine = run_synchronous(tokenizer, sampling, steps, groups, group_size, train_s, per_collect=1)
    sync_prefill = engine.prefill_tokens
    control_s, control = run_synchronous(tokenizer, sampling, steps, groups, group_size, train_s, per_collect=2)

    rows = []
    busy = [engine.busy_s, control.busy_s]  # modelled engine seconds per arm (the rest of the wall time: env, training)
    for over, chunk in ((1.5, 32), (2.0, 32), (1.5, None), (2.0, None)):
        engine = BatchedEngine(tokenizer)
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
            busy.append(engine.busy_s)

    print(f"{steps} steps of {groups} groups x {group_size}, geometric lengths (mean 96, cap {max_tokens}); engine "
          f"step {engine.step_s * 1e3:.0f} ms x max(1, running / {engine.knee}) + {engine.prefill_s * 1e6:.0f} us "
          f"per prefilled token; {train_s * 1e6:.0f} us per trained token")
    print(f"{'collector':<36}{'steps/s':>9}{'ratio':>7}{'carried':>9}{'re-sent tokens':>16}{'prefilled':>11}")
    print(f"{'synchronous (collect_async)':<36}{steps / sync_s:>9.2f}{1.0:>7.2f}{'-':>9}{0:>16}{sync_prefill:>11}")
    print(f"{'synchronous x2, two steps':<36}{steps / control_s:>9.2f}{sync_s / control_s:>7.2f}{'-':>9}{0:>16}"
          f"{control.prefill_tokens:>11}")
    for over, chunk, seconds, mixed, resent, prefilled in rows:
        name = f"APRIL x{over}, " + (f"chunks of {chunk}" if chunk else "no chunks")
        print(f"{name:<36}{steps / seconds:>9.2f}{sync_s / seconds:>7.2f}{mixed:>9}{resent:>16}{prefilled:>11}")
    print("modelled engine seconds per arm (same order): " + ", ".join(f"{b:.1f}" for b in busy))
    if not quick:
        from publish import save_results

        figures = {"steps": steps, "groups": groups, "group_size": group_size, "max_tokens": max_tokens,
                   "engine": {"step_s": engine.step_s, "knee": engine.knee, "prefill_s": engine.prefill_s,
                              "model": "step_s * max(1, running / knee) + prefill_s * admitted prompt tokens"},
                   "train_s_per_token": train_s,
                   "sync_steps_per_s": steps / sync_s, "sync_prefilled_tokens": sync_prefill,
                   "control": {"what": "synchronous, 2 x groups collected at once, trained over two steps",
                               "steps_per_s": steps / control_s, "ratio": sync_s / control_s,
                               "prefilled_tokens": control.prefill_tokens},
                   "engine_busy_s": {"synchronous": busy[0], "control": busy[1],
                                     "april": busy[2:]},
                   "april": [{"over_provision": over, "chunk_tokens": chunk, "steps_per_s": steps / seconds,
                              "ratio": sync_s / seconds, "carried": mixed, "resent_prefix_tokens": resent,
                              "prefilled_tokens": prefilled}
                             for over, chunk, seconds, mixed, resent, prefilled in rows]}
        labels = " / ".join(f"x{over:g} {'chunks of ' + str(chunk) if chunk else 'no chunks'}"
                            for over, chunk, *_ in rows)
        row = {"what": f"APRIL partial rollouts vs synchronous steps (engine model whose throughput saturates "
                       f"beyond {engine.knee} running requests; long-tailed lengths, prefill of re-sent prefixes "
                       f"and training time charged; {labels}; control: synchronous x2 groups over two steps)",
               "rollgym": " / ".join(f"{steps / seconds:.2f}" for _, _, seconds, *_ in rows)
               + f" steps/s; control {steps / control_s:.2f} steps/s",
               "peer": f"{steps / sync_s:.2f} steps/s",
               "ratio": " / ".join(f"{sync_s / seconds:.2f}x" for _, _, seconds, *_ in rows)
               + f"; control {sync_s / control_s:.2f}x"}
        save_results("partial", figures, [row], command="python bench/bench_partial.py")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
