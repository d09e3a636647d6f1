"""A real model on this machine: generation throughput, and the collector's share of an episode beside it.

SmolLM2-135M-Instruct (``rollgym models pull smollm2-135m-instruct``; float32, torch's default
threads or ``--threads``), greedy, prompts rendered with its chat template from Countdown-v0's first observations.

a. ``throughput``: new tokens per second of one ``TransformersBackend.generate`` call for batch sizes
   1, 2, 4, 8, 16 and 32 (the first B prompts), 32 new tokens at most (greedy may stop earlier; the
   tokens actually generated are counted), prefill included; best of the repeats, with its CPU time:
   with one thread, new tokens per CPU-second is what a quiet core would do on a shared machine,
   and the README row reports that.
b. ``overhead``: 32 Countdown episodes at 48 new tokens: the bare backend (one batched ``generate``
   over the same pre-rendered prompts) against ``collect_async`` with a ``ChatAgent`` (envs built
   and reset, chat template, tokenization, verification, trajectories), interleaved repeats. Greedy
   decoding makes both sample the very same tokens (checked). The collector's share of an episode is
   its extra CPU time over the collected run's CPU time.

Run: ``python bench/bench_real_model.py`` (about 10 minutes on 2 cores; ``--quick`` saves nothing;
``--threads 1`` when another job holds a core: torch's threads then wait on each other, and batch 1 and
2 ran 3-4 times slower with 2 threads than with 1 beside a training run).
Without the pulled model it prints how to pull it and exits 0. Writes ``bench/results/realmodel.json``.
"""

from __future__ import annotations

import asyncio
import statistics
from pathlib import Path
from typing import Any

from model_runs import model_is_pulled, quick_and_threads, timed

MODEL = "smollm2-135m-instruct"
BATCHES = (1, 2, 4, 8, 16, 32)


def countdown_prompts(tokenizer: Any, n: int) -> list[list[int]]:
    """The first prompts of the first ``n`` Countdown-v0 test tasks of run seed 0, as ChatAgent renders them."""
    import rollgym
    from rollgym.agents.backends.hf import render_chat_ids
    from rollgym.rollout import episode_seed

    env = rollgym.make("Countdown-v0", split="test")
    prompts = []
    for i in range(n):
        observation, info = env.reset(seed=episode_seed(0, i))
        prompts.append(render_chat_ids(tokenizer, [{"role": "system", "content": info["system_prompt"]},
                                                   {"role": "user", "content": observation}]))
    env.close()
    return prompts


def section_throughput(backend: Any, prompts: list[list[int]], quick: bool) -> dict[str, Any]:
    from rollgym.agents.backends.base import SamplingParams

    sampling = SamplingParams(max_tokens=8 if quick else 32, temperature=0.0)
    out: dict[str, Any] = {}
    for batch in BATCHES[:3] if quick else BATCHES:
        chosen = prompts[:batch]
        runs = []
        for _ in range(1 if quick else 2):
            wall, cpu, gens = timed(lambda chosen=chosen: asyncio.run(backend.generate(chosen, sampling)))
            runs.append((wall, cpu, sum(len(g.token_ids) for g in gens)))
        wall, cpu, tokens = min(runs)
        out[str(batch)] = {"best_s": wall, "cpu_s": cpu, "new_tokens": tokens,
                           "prompt_tokens": sum(len(p) for p in chosen), "tokens_per_s": tokens / wall}
        print(f"batch {batch:>2}: {tokens / wall:7.1f} new tokens/s ({tokens} tokens in {wall:.2f} s)", flush=True)
    return out


def section_overhead(backend: Any, prompts: list[list[int]], quick: bool) -> dict[str, Any]:
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.chat import ChatAgent
    from rollgym.rollout.stream import collect_async

    n = 8 if quick else 32
    sampling = SamplingParams(max_tokens=48, temperature=0.0)
    chosen = prompts[:n]

    def bare() -> list[list[int]]:
        return [g.token_ids for g in asyncio.run(backend.generate(chosen, sampling))]

    def collected() -> list[list[int]]:
        groups = collect_async(ChatAgent(backend, sampling), "Countdown-v0", n, 1, seed=0, concurrency=n)
        return [g.trajectories[0].turns[0].output_ids for g in groups]

    collected()  # warm up: imports, the env, the prompt cache's first use
    reps = 1 if quick else 3
    walls: dict[str, list[float]] = {"bare": [], "collector": []}
    cpus: dict[str, list[float]] = {"bare": [], "collector": []}
    outputs: dict[str, list[list[int]]] = {}
    runners = {"bare": bare, "collector": collected}
    for rep in range(reps):  # interleaved, the order reversed every other repeat
        for name in ("bare", "collector") if rep % 2 == 0 else ("collector", "bare"):
            wall, cpu, outputs[name] = timed(runners[name])
            walls[name].append(wall)
            cpus[name].append(cpu)
    extra_cpu = min(cpus["collector"]) - min(cpus["bare"])
    figures = {
        "episodes": n, "max_new_tokens": 48, "repeats": reps,
        "bare": {"best_s": min(walls["bare"]), "median_s": statistics.median(walls["bare"]),
                 "best_cpu_s": min(cpus["bare"])},
        "collector": {"best_s": min(walls["collector"]), "median_s": statistics.median(walls["collector"]),
                      "best_cpu_s": min(cpus["collector"])},
        "same_tokens": outputs["bare"] == outputs["collector"],
        "mean_new_tokens": statistics.mean(len(ids) for ids in outputs["bare"]),
        "overhead_wall": min(walls["collector"]) / min(walls["bare"]) - 1,
        "collector_cpu_ms_per_episode": 1e3 * extra_cpu / n,
        "collector_cpu_share": extra_cpu / min(cpus["collector"]),
    }
    print(f"overhead: bare {figures['bare']['best_s']:.2f} s, collector {figures['collector']['best_s']:.2f} s, "
          f"{1e3 * extra_cpu / n:.1f} CPU ms per episode ({figures['collector_cpu_share']:.1%} of the collected run's "
          f"CPU), same tokens: {figures['same_tokens']}", flush=True)
    return figures


def per_cpu_second(row: dict[str, Any]) -> float:
    """New tokens per CPU-second of the generating process: with one torch thread, what a quiet core would do,
    however many other jobs share the machine."""
    return float(row["new_tokens"] / row["cpu_s"])


def readme_rows(figures: dict[str, Any]) -> list[dict[str, str]]:
    rows = []
    t = figures["throughput"]
    sizes = [b for b in ("1", "8", "32") if b in t]
    if figures.get("threads") == 1 and sizes:
        rows.append({"what": "SmolLM2-135M-Instruct generation, float32, one torch thread, greedy, at most 32 new "
                             f"tokens, prefill included (new tokens per CPU-second; batch {' / '.join(sizes)})",
                     "rollgym": " / ".join(f"{per_cpu_second(t[b]):.0f}" for b in sizes), "peer": "", "ratio": ""})
    elif "1" in t and "32" in t:
        rows.append({"what": "SmolLM2-135M-Instruct generation, float32 on this CPU, greedy, 32 new tokens "
                             "(batch 1 / batch 32)",
                     "rollgym": f"{t['1']['tokens_per_s']:.0f} / {t['32']['tokens_per_s']:.0f} tokens/s",
                     "peer": "", "ratio": ""})
    o = figures["overhead"]
    threads = "one torch thread" if figures.get("threads") == 1 else f"{figures.get('threads')} torch threads"
    bare, collector = o["bare"]["best_cpu_s"], o["collector"]["best_cpu_s"]
    extra = (f"+{o['collector_cpu_ms_per_episode']:.0f} CPU ms/episode" if collector > bare
             else "no extra CPU above the noise")
    rows.append({"what": f"Collector (`collect_async` + `ChatAgent`) vs bare backend, SmolLM2-135M-Instruct, "
                         f"{threads}, greedy, {o['max_new_tokens']} new tokens x "
                         f"{o['episodes']} Countdown episodes, identical tokens (CPU seconds, best of {o['repeats']})",
                 "rollgym": f"{collector:.1f} s", "peer": f"{bare:.1f} s",
                 "ratio": f"{collector / bare:.2f}x: {extra}; generation {bare / o['episodes']:.2f} CPU s/episode"})
    return rows


def main() -> None:
    args = quick_and_threads(__doc__.splitlines()[0], threads=0,
                             threads_help="torch threads (default: torch's own choice)")
    if not model_is_pulled(MODEL):
        return
    import torch

    from rollgym.agents.backends.hf import TransformersBackend

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    backend = TransformersBackend.from_pretrained(MODEL, max_batch=64)
    prompts = countdown_prompts(backend.tokenizer, max(BATCHES))
    figures = {"model": MODEL, "threads": torch.get_num_threads(),
               "throughput": section_throughput(backend, prompts, args.quick),
               "overhead": section_overhead(backend, prompts, args.quick)}
    if not args.quick:
        from publish import save_results

        command = "python bench/bench_real_model.py" + (f" --threads {args.threads}" if args.threads > 0 else "")
        path = save_results("realmodel", figures, readme_rows(figures), command=command)
        print(f"saved {path.relative_to(Path(__file__).resolve().parent.parent)}")


if __name__ == "__main__":
    main()
