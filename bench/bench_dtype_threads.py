"""Which dtype and thread count decode fastest on this CPU, and what each costs in logprob accuracy against float32.

Qwen2.5-Coder-0.5B-Instruct (``rollgym models pull qwen2.5-coder-0.5b-instruct``) through the HF backend's
own decode (``TransformersBackend.generate_ids``), greedy, at batch 1, for float32 and bfloat16 weights
with 1 and 2 torch threads. The prompt is Countdown-v0's first observation rendered with the model's chat
template (the one ``bench_real_model.py`` uses).

- ``decode_tokens_per_s``: new tokens after the first, over the time beyond a 1-token run on the same
  prompt (so the prefill is left out); best of the repeats.
- ``logprob_drift``: the float32, 1-thread greedy completions of four prompts are scored by every setting
  (``logprobs_of``: one forward pass over prompt + completion); the mean and the largest absolute
  difference from float32 on one thread, per token. ``same_greedy_tokens`` says whether the setting's own
  batch-1 greedy decode chose float32's tokens, and ``greedy_prefix`` how many of them before it parted.

Run: ``python bench/bench_dtype_threads.py`` (about 3 minutes on 2 cores; ``--quick`` saves nothing).
Without the pulled model it prints how to pull it and exits 0. Writes ``bench/results/dtype_threads.json``.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time
from pathlib import Path
from typing import Any

from model_runs import model_is_pulled

MODEL = "qwen2.5-coder-0.5b-instruct"
SETTINGS = (("float32", 1), ("float32", 2), ("bfloat16", 1), ("bfloat16", 2))


def countdown_prompts(tokenizer: Any, n: int) -> list[list[int]]:
    """The first prompts of Countdown-v0's first ``n`` test tasks of run seed 0, as ChatAgent renders them."""
    from bench_real_model import countdown_prompts as render

    return render(tokenizer, n)


def decode_rate(backend: Any, prompt: list[int], new_tokens: int, repeats: int) -> dict[str, Any]:
    """Best-of-``repeats`` decode speed at batch 1, the prefill (a 1-token run) left out; and the tokens chosen."""
    from rollgym.agents.backends.base import SamplingParams

    one, full = SamplingParams(max_tokens=1, temperature=0.0), SamplingParams(max_tokens=new_tokens, temperature=0.0)
    backend.generate_ids([prompt], one)  # warm up
    first: list[float] = []
    whole: list[float] = []
    tokens: list[int] = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        backend.generate_ids([prompt], one)
        first.append(time.perf_counter() - start)
        start = time.perf_counter()
        tokens = backend.generate_ids([prompt], full)[0].token_ids
        whole.append(time.perf_counter() - start)
    decode_s = min(whole) - min(first)
    return {"prefill_plus_one_s": min(first), "whole_s": min(whole), "new_tokens": len(tokens),
            "decode_tokens_per_s": (len(tokens) - 1) / decode_s if decode_s > 0 and len(tokens) > 1 else None,
            "tokens": tokens}


def measure(quick: bool) -> dict[str, Any]:
    import torch

    from rollgym.agents.backends.hf import TransformersBackend

    new_tokens, repeats = (8, 1) if quick else (32, 2)
    figures: dict[str, Any] = {"model": MODEL, "batch": 1, "max_new_tokens": new_tokens, "repeats": repeats,
                               "torch": torch.__version__, "settings": {}}
    reference: dict[str, Any] = {}
    for dtype in ("float32", "bfloat16"):
        backend = TransformersBackend.from_pretrained(MODEL, dtype=dtype)
        prompts = countdown_prompts(backend.tokenizer, 4)
        for threads in (1, 2):
            if (dtype, threads) not in SETTINGS:
                continue
            torch.set_num_threads(threads)
            if not reference:  # float32, 1 thread: the completions every setting scores
                from rollgym.agents.backends.base import SamplingParams

                greedy = SamplingParams(max_tokens=new_tokens, temperature=0.0)
                reference["completions"] = [g.token_ids for g in backend.generate_ids(prompts, greedy)]
                reference["logprobs"] = [backend.logprobs_of(p, c) for p, c in zip(prompts, reference["completions"])]
            speed = decode_rate(backend, prompts[0], new_tokens, repeats)
            scored = [backend.logprobs_of(p, c) for p, c in zip(prompts, reference["completions"])]
            drift = [abs(a - b) for ours, ref in zip(scored, reference["logprobs"]) for a, b in zip(ours, ref)]
            if "batch1_tokens" not in reference:
                reference["batch1_tokens"] = speed["tokens"]
            ref_tokens, ours = reference["batch1_tokens"], speed.pop("tokens")
            parted = [i for i, (a, b) in enumerate(zip(ours, ref_tokens)) if a != b]
            prefix = parted[0] if parted else min(len(ours), len(ref_tokens))
            row = {**speed, "dtype": dtype, "threads": threads, "same_greedy_tokens": ours == ref_tokens,
                   "greedy_prefix": prefix, "scored_tokens": len(drift),
                   "logprob_drift_mean": statistics.fmean(drift), "logprob_drift_max": max(drift)}
            figures["settings"][f"{dtype}/{threads}"] = row
            rate = row["decode_tokens_per_s"]
            print(f"{dtype:>8}, {threads} thread(s): {rate if rate is None else round(rate, 1)} tokens/s decode, "
                  f"drift mean {row['logprob_drift_mean']:.4f} max {row['logprob_drift_max']:.4f} nats over "
                  f"{len(drift)} tokens, same greedy tokens: {row['same_greedy_tokens']}", flush=True)
        del backend
        gc.collect()
    return figures


def readme_rows(figures: dict[str, Any]) -> list[dict[str, str]]:
    s = figures["settings"]
    if not all(f"{d}/{t}" in s for d, t in SETTINGS):
        return []
    rate = {k: v["decode_tokens_per_s"] or 0.0 for k, v in s.items()}
    best = max(rate, key=lambda k: rate[k])
    return [{"what": "Qwen2.5-Coder-0.5B-Instruct decode at batch 1, HF backend, greedy (tokens/s: float32 1 / 2 "
                     "threads, bfloat16 1 / 2 threads; mean |logprob drift| of bfloat16 vs float32)",
             "rollgym": " / ".join(f"{rate[f'{d}/{t}']:.1f}" for d, t in SETTINGS),
             "peer": f"float32, 1 thread: {rate['float32/1']:.1f}",
             "ratio": f"fastest {best} {rate[best] / rate['float32/1']:.2f}x; bfloat16 drift "
                      f"{s['bfloat16/1']['logprob_drift_mean']:.3f} nats/token"}]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="8 tokens, one repeat, nothing saved")
    args = parser.parse_args()
    if not model_is_pulled(MODEL):
        return
    load_before = os.getloadavg()[0]
    figures = measure(args.quick)
    if not args.quick:
        from publish import save_results

        path = save_results("dtype_threads", figures, readme_rows(figures),
                            command="python bench/bench_dtype_threads.py", load_before=load_before)
        print(f"saved {path.relative_to(Path(__file__).resolve().parent.parent)}")


if __name__ == "__main__":
    main()
