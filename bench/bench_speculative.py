"""Speculative decoding against the target model alone: greedy, batch 1, the same tokens, on three families.

The target (default Qwen2.5-Coder-1.5B-Instruct) and the draft (default Qwen2.5-Coder-0.5B-Instruct,
the same tokenizer) both come from ``rollgym models pull``; float32, torch's threads as set by
``--threads`` (default 1, so that a quiet core's figure is what is reported). Prompts: the first
observation of the first ``--prompts`` test tasks of Countdown-v0, MATH500-v1 (the evaluation data
in ``ROLLGYM_DATA_DIR``) and CodeGen-v0, rendered with the target's chat template as ChatAgent
renders them. Each prompt is decoded greedily to ``--max-tokens`` new tokens by the target alone
and by the target with the draft, interleaved; the two must give the same tokens (checked, the
bench stops otherwise). Reported per family: new tokens per second of each arm (best of the
repeats), the ratio, the draft's acceptance rate and tokens per target pass.

The memory-bandwidth limit: at batch 1 a CPU decode reads every weight once per token, so
``bytes of the target's weights x tokens/s`` against a measured copy bandwidth (a large NumPy
copy, read plus write bytes per second) says how far the plain loop is from the physical limit.

Run: ``python bench/bench_speculative.py`` (pull both models first; about 10-20 minutes on 2 cores).
``--target``/``--draft`` take any pair of pulled names or folders. Without the models it prints how
to pull them and exits 0. Writes ``bench/results/speculative.json`` (``--quick`` saves nothing).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

from model_runs import start_cpu_run, timed

FAMILIES = ("Countdown-v0", "MATH500-v1", "CodeGen-v0")


def copy_bandwidth(megabytes: int = 512, repeats: int = 5) -> float:
    """Bytes per second moved by a large NumPy copy (each byte read once and written once), best of ``repeats``."""
    import numpy as np

    src = np.ones(megabytes * 2**20 // 8, dtype=np.float64)
    dst = np.empty_like(src)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - start)
    return 2 * src.nbytes / best


def prompts_of(env_id: str, tokenizer: Any, n: int) -> list[list[int]]:
    """First prompts of the first ``n`` test tasks of ``env_id`` (run seed 0), as ChatAgent renders them."""
    import rollgym
    from rollgym.agents.backends.hf import render_chat_ids
    from rollgym.rollout import episode_seed

    env = rollgym.make(env_id, split="test")
    out = []
    for i in range(n):
        observation, info = env.reset(seed=episode_seed(0, i))
        messages = [{"role": "system", "content": info.get("system_prompt") or ""}, {"role": "user",
                                                                                     "content": observation}]
        out.append(render_chat_ids(tokenizer, [m for m in messages if m["content"]]))
    env.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="qwen2.5-coder-1.5b-instruct")
    parser.add_argument("--draft", default="qwen2.5-coder-0.5b-instruct")
    parser.add_argument("--draft-tokens", type=int, default=4)
    parser.add_argument("--prompts", type=int, default=3, help="prompts per family (default: 3)")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"),
                        help="both models' dtype (bfloat16: a verify pass of k+1 tokens costs about one decode step "
                             "on a CPU with bfloat16 matrix units)")
    parser.add_argument("--quick", action="store_true", help="one prompt per family, 16 tokens, nothing saved")
    args = parser.parse_args()
    import torch

    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.backends.hf import TransformersBackend
    from rollgym.agents.backends.speculative import SpeculativeDecoder, load_draft
    from rollgym.core.errors import ConfigError

    load_before = start_cpu_run(args.threads)
    try:
        plain = TransformersBackend.from_pretrained(args.target, dtype=args.dtype)
        draft = load_draft(args.draft, plain.tokenizer, dtype=getattr(torch, args.dtype))
    except ConfigError as exc:
        print(f"{exc} (rollgym models pull {args.target}; rollgym models pull {args.draft})")
        return 0
    decoder = SpeculativeDecoder(plain, draft, draft_tokens=args.draft_tokens)
    n_prompts, max_tokens = (1, 16) if args.quick else (args.prompts, args.max_tokens)
    sampling = SamplingParams(temperature=0.0, max_tokens=max_tokens)
    weight_bytes = sum(p.numel() * p.element_size() for p in plain.model.parameters())
    bandwidth = copy_bandwidth()
    limit_tps = bandwidth / weight_bytes  # tokens/s if each token only had to read the weights once
    print(f"target weights {weight_bytes / 2**30:.2f} GiB; copy bandwidth {bandwidth / 2**30:.1f} GiB/s; "
          f"bandwidth limit {limit_tps:.2f} tokens/s at batch 1", flush=True)
    figures: dict[str, Any] = {"target": args.target, "draft": args.draft, "draft_tokens": args.draft_tokens,
                               "threads": args.threads, "dtype": args.dtype, "max_tokens": max_tokens,
                               "weight_bytes": weight_bytes,
                               "copy_bandwidth_bytes_per_s": bandwidth, "bandwidth_limit_tokens_per_s": limit_tps,
                               "families": {}}
    rows = []
    for env_id in FAMILIES:
        prompts = prompts_of(env_id, plain.tokenizer, n_prompts)
        plain_runs, fast_runs = [], []
        decoder.stats.reset()
        for _ in range(1 if args.quick else args.repeats):
            with torch.inference_mode():
                wall_p, cpu_p, base = timed(lambda prompts=prompts: [plain.generate_ids([p], sampling)[0]
                                                                     for p in prompts])
                wall_s, cpu_s, fast = timed(lambda prompts=prompts: decoder.decode(prompts, sampling,
                                                                                   [None] * len(prompts)))
            if [g.token_ids for g in base] != [g.token_ids for g in fast]:
                raise SystemExit(f"{env_id}: speculative greedy tokens differ from the target's; not a valid run.")
            tokens = sum(len(g.token_ids) for g in base)
            plain_runs.append((tokens / wall_p, cpu_p, wall_p))
            fast_runs.append((tokens / wall_s, cpu_s, wall_s))
        plain_tps = max(r[0] for r in plain_runs)
        fast_tps = max(r[0] for r in fast_runs)
        stats = decoder.stats
        family = {"prompt_tokens": statistics.mean(len(p) for p in prompts), "new_tokens": tokens,
                  "plain_tokens_per_s": plain_tps, "speculative_tokens_per_s": fast_tps,
                  "ratio": fast_tps / plain_tps, "acceptance_rate": stats.acceptance_rate,
                  "tokens_per_target_pass": stats.tokens_per_round,
                  "plain_fraction_of_bandwidth_limit": plain_tps / limit_tps,
                  "runs": {"plain": plain_runs, "speculative": fast_runs}}
        figures["families"][env_id] = family
        print(f"{env_id}: plain {plain_tps:.2f} tok/s, speculative {fast_tps:.2f} tok/s ({fast_tps / plain_tps:.2f}x),"
              f" acceptance {stats.acceptance_rate:.2f}, {stats.tokens_per_round:.2f} tokens per target pass; "
              f"plain at {plain_tps / limit_tps:.0%} of the bandwidth limit", flush=True)
        rows.append({"what": f"Greedy decode, batch 1, {env_id} prompts ({args.target}, draft {args.draft}, "
                             f"k={args.draft_tokens}, {args.dtype}, same tokens)",
                     "rollgym": f"{fast_tps:.2f} tok/s speculative (acceptance {stats.acceptance_rate:.2f})",
                     "peer": f"{plain_tps:.2f} tok/s target alone ({plain_tps / limit_tps:.0%} of the "
                             "memory-bandwidth limit)",
                     "ratio": f"{fast_tps / plain_tps:.2f}x"})
    if args.quick:
        return 0
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from publish import save_results

    if args.dtype == "float32":
        save_results("speculative", figures, rows, command="python bench/bench_speculative.py", load_before=load_before)
    else:
        save_results("speculative_bf16", figures, rows, command="python bench/bench_speculative.py --dtype bfloat16",
                     load_before=load_before)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
