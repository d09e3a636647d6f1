"""Quantized rollouts against float32 ones: tokens per CPU-second, and the train-inference mismatch they bring.

The model (default SmolLM2-135M-Instruct, from ``rollgym models pull``) is loaded once in float32;
one backend samples from it, a second, ``quantize="int8"``, from its int8 copy
(:mod:`rollgym.agents.backends.quantized`). Prompts: the first observation of the first test
tasks of Countdown-v0, rendered with the model's chat template as ChatAgent renders them.
Each arm samples (temperature 1, the same seeds) ``--max-tokens`` new tokens at batch 1 (one
prompt per call) and at batch 8 (eight prompts in one decode), interleaved, on ``--threads``
torch threads (default 1, so CPU-seconds are one core's). Reported: new tokens per CPU-second
(``time.process_time``, the figure least moved by other processes on a shared machine) and per
wall second, best of ``--repeats``, and the ratio.

The mismatch: every rollout's recorded logprobs against what a float32 trainer recomputes for
the same tokens (:func:`rollgym.train.sequences.sequence_logprobs`, as the GRPO trainer does),
summarised by :class:`rollgym.train.mismatch.Mismatch`: the k3 estimate of KL(behaviour || train)
per token, the largest and smallest ratio train / behaviour, the mean absolute logprob
difference; for the float32 rollouts too, as the floor that rounding alone gives.

The memory-bandwidth limit: at batch 1 a decode step reads every weight of the projections and
the output layer once, so ``bytes read per token x tokens/s`` against a measured copy bandwidth
says how far each arm is from the physical limit (int8 reads a quarter of the bytes).

Run: ``python bench/bench_quantized.py`` (about 3 minutes on one core). Without the model it
prints how to pull it and exits 0. Writes ``bench/results/quantized.json`` (``--quick`` saves nothing).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_speculative import copy_bandwidth, prompts_of
from model_runs import start_cpu_run


def bytes_per_token(model: Any) -> int:
    """Bytes of weights a batch-1 decode step reads: every linear layer's weight (and scales) and every norm."""
    import torch

    from rollgym.agents.backends.quantized import Int8Linear

    total = 0
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            total += module.weight.numel() * module.weight.element_size()
        elif isinstance(module, Int8Linear):
            total += module.weight_t.numel() + module.scale.numel() * module.scale.element_size()
        elif "Norm" in type(module).__name__:
            total += sum(p.numel() * p.element_size() for p in module.parameters(recurse=False))
    return total


def run_arm(backend: Any, prompts: list[list[int]], batch: int, sampling: Any) -> tuple[float, float, list[Any]]:
    """Sample every prompt, ``batch`` at a time; returns CPU seconds, wall seconds and the generations."""
    import gc

    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    gens: list[Any] = []
    for start in range(0, len(prompts), batch):
        chunk = prompts[start : start + batch]
        seeds = [sampling.seed * 1_000_003 + start + i for i in range(len(chunk))]
        gens += backend.generate_ids(chunk, sampling, seeds)
    return time.process_time() - cpu, time.perf_counter() - wall, gens


def mismatch_of(model: Any, pad_id: int, prompts: list[list[int]], gens: list[Any]) -> dict[str, Any]:
    """The mismatch figures of ``gens`` against ``model``'s float32 recomputation (GRPO's forward pass)."""
    import torch

    from rollgym.train.mismatch import Mismatch
    from rollgym.train.sequences import Row, sequence_logprobs

    rows = [Row(p, g.token_ids, [1] * len(g.token_ids), g.logprobs, 0.0) for p, g in zip(prompts, gens) if g.token_ids]
    mismatch = Mismatch()
    with torch.no_grad():
        for start in range(0, len(rows), 8):
            new, old, mask = sequence_logprobs(model, rows[start : start + 8], pad_id)
            mismatch.add(new, old, mask)
    return {**mismatch.stats(), "tokens": mismatch.tokens}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--prompts", type=int, default=8, help="Countdown prompts (default: 8)")
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="4 prompts, 8 tokens, one repeat, nothing saved")
    args = parser.parse_args()
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.backends.hf import TransformersBackend
    from rollgym.core.errors import ConfigError

    load_before = start_cpu_run(args.threads)
    try:
        full = TransformersBackend.from_pretrained(args.model)
    except ConfigError as exc:
        print(f"{exc} (rollgym models pull {args.model})")
        return 0
    int8 = TransformersBackend(full.model, full.tokenizer, quantize="int8")
    n_prompts, max_tokens, repeats = (4, 8, 1) if args.quick else (args.prompts, args.max_tokens, args.repeats)
    prompts = prompts_of("Countdown-v0", full.tokenizer, n_prompts)
    sampling = SamplingParams(temperature=1.0, max_tokens=max_tokens, seed=0)
    quantized_model = int8._quantized.model_for(int8.policy_version)
    read = {"float32": bytes_per_token(full.model), "int8": bytes_per_token(quantized_model)}
    bandwidth = copy_bandwidth()
    print(f"weights read per token: float32 {read['float32'] / 2**20:.0f} MiB, int8 {read['int8'] / 2**20:.0f} MiB; "
          f"copy bandwidth {bandwidth / 2**30:.1f} GiB/s", flush=True)
    figures: dict[str, Any] = {"model": args.model, "threads": args.threads, "max_tokens": max_tokens,
                               "prompts": n_prompts, "prompt_tokens_mean": sum(map(len, prompts)) / len(prompts),
                               "temperature": 1.0, "bytes_read_per_token": read,
                               "copy_bandwidth_bytes_per_s": bandwidth, "batches": {}}
    rows = []
    for batch in (1, 8):
        runs: dict[str, list[tuple[float, float, int]]] = {"float32": [], "int8": []}
        last: dict[str, list[Any]] = {}
        for _ in range(repeats):
            for name, backend in (("float32", full), ("int8", int8)):
                cpu, wall, gens = run_arm(backend, prompts, batch, sampling)
                tokens = sum(len(g.token_ids) for g in gens)
                runs[name].append((tokens / cpu, tokens / wall, tokens))
                last[name] = gens
        arms = {}
        for name in runs:
            per_cpu = max(r[0] for r in runs[name])
            arms[name] = {"tokens_per_cpu_s": per_cpu, "tokens_per_wall_s": max(r[1] for r in runs[name]),
                          "runs": runs[name], "mismatch": mismatch_of(full.model, full.pad_id, prompts, last[name])}
            if batch == 1:
                arms[name]["fraction_of_bandwidth_limit"] = per_cpu * read[name] / bandwidth
        ratio = arms["int8"]["tokens_per_cpu_s"] / arms["float32"]["tokens_per_cpu_s"]
        figures["batches"][str(batch)] = {**arms, "ratio_tokens_per_cpu_s": ratio}
        q, f = arms["int8"], arms["float32"]
        print(f"batch {batch}: float32 {f['tokens_per_cpu_s']:.1f} tok/CPU-s, int8 {q['tokens_per_cpu_s']:.1f} "
              f"tok/CPU-s ({ratio:.2f}x); mismatch int8: KL(k3) {q['mismatch']['mismatch_kl']:.2e}/token, "
              f"max ratio {q['mismatch']['mismatch_max_ratio']:.2f}, mean |diff| "
              f"{q['mismatch']['mismatch_abs_diff']:.3f}; float32: KL {f['mismatch']['mismatch_kl']:.1e}", flush=True)
        limit = ""
        if batch == 1:
            limit = (f"; {q['fraction_of_bandwidth_limit']:.0%} vs {f['fraction_of_bandwidth_limit']:.0%} of the "
                     "memory-bandwidth limit")
        rows.append({"what": f"Sampled rollouts, {args.model}, batch {batch}, Countdown prompts, {max_tokens} tokens "
                             f"(int8 rollout weights vs float32)",
                     "rollgym": f"{q['tokens_per_cpu_s']:.1f} tok/CPU-s int8; mismatch to the float32 trainer: "
                                f"KL(k3) {q['mismatch']['mismatch_kl']:.3f}/token, max ratio "
                                f"{q['mismatch']['mismatch_max_ratio']:.1f}",
                     "peer": f"{f['tokens_per_cpu_s']:.1f} tok/CPU-s float32 (KL {f['mismatch']['mismatch_kl']:.0e})"
                             + limit,
                     "ratio": f"{ratio:.2f}x"})
    if args.quick:
        return 0
    from publish import save_results

    save_results("quantized", figures, rows, command="python bench/bench_quantized.py", load_before=load_before)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
