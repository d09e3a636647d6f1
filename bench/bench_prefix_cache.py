"""The transformers backend's prefix cache against the same backend without it: same tokens, less prefill.

SmolLM2-135M-Instruct (``rollgym models pull smollm2-135m-instruct``), float32, one torch thread by
default (CPU seconds of one thread are what a quiet core would do on a shared machine).

a. ``group``: one group of 8 samples (``n=8``, temperature 1.0, seed 0, 16 new tokens at most) on a
   ~1,550-token prompt (a ToolWorld-Calendar-v1 task with ten of its tools written into the system prompt).
   Uncached, the batch prefills the prompt 8 times; cached, once, expanded to the 8 rows.
b. ``episode``: a 10-turn ToolWorld-like episode played by a ``ChatAgent`` (greedy, 24 new tokens a
   turn): the same task with four tools in the prompt, then each turn's observation is a real ToolWorld
   tool response, cut to 400 characters (the env's answers to a fixed sequence of calendar calls, so both
   runs see the same text whatever the model writes). Uncached, every turn prefills the whole
   conversation; cached, only what the last turn added.

Both runs must give the same tokens (asserted); the figure is their CPU seconds, and the ratio.
Each backend makes one short call first (imports, the cache's one-time check), not timed.

Run: ``python bench/bench_prefix_cache.py`` (about 4 minutes on 2 cores; ``--quick``: small sizes,
nothing saved). Without the pulled model it prints how to pull it and exits 0. Writes
``bench/results/prefixcache.json``.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from model_runs import model_is_pulled, quick_and_threads, timed

MODEL = "smollm2-135m-instruct"
ENV = "ToolWorld-Calendar-v1"
#: The fixed tool calls whose responses are the episode's observations.
CALLS = [("calendar_search", {"query": "Haircut"}), ("calendar_get", {"event_id": 24}),
         ("calendar_free", {"day": "2025-02-11"}), ("calendar_search", {"query": "Dentist"}),
         ("calendar_get", {"event_id": 5}), ("calendar_search", {"query": "Lunch"}),
         ("calendar_get", {"event_id": 12}), ("calendar_free", {"day": "2025-02-12"}),
         ("calendar_search", {"query": "Meeting"}), ("calendar_get", {"event_id": 30})]


#: Tool schemas written into the system prompt: ~1,550 prompt tokens for the group, ~750 for the episode's start.
GROUP_TOOLS, EPISODE_TOOLS = 10, 4


def task_messages(tools_in_prompt: int) -> tuple[str, str, Any]:
    """The system prompt (the first ``tools_in_prompt`` tool schemas written in), the first observation, the env."""
    import rollgym

    env = rollgym.make(ENV, split="test")
    observation, info = env.reset(seed=0)
    tools = "\n".join(json.dumps(t, separators=(",", ":")) for t in info["tools"][:tools_in_prompt])
    system = f"{info['system_prompt']}\n\n# Tools\n<tools>\n{tools}\n</tools>"
    return system, observation, env


def tool_responses(env: Any, turns: int, max_chars: int) -> list[str]:
    """The env's responses to the fixed calls (each cut to ``max_chars``)."""
    out = []
    for name, arguments in CALLS[:turns]:
        action = f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"
        observation = env.step(action)[0]
        out.append(observation[:max_chars])
    return out


def section_group(plain: Any, cached: Any, system: str, observation: str, quick: bool) -> dict[str, Any]:
    from rollgym.agents.backends.base import SamplingParams

    prompt = plain.encode([{"role": "system", "content": system}, {"role": "user", "content": observation}])
    group = 2 if quick else 8
    sampling = SamplingParams(max_tokens=8 if quick else 16, temperature=1.0, seed=0, n=group)
    results = {}
    for name, backend in (("uncached", plain), ("cached", cached)):
        wall, cpu, gens = timed(lambda backend=backend: asyncio.run(backend.generate([prompt], sampling)))
        results[name] = {"wall_s": wall, "cpu_s": cpu, "tokens": [g.token_ids for g in gens],
                         "logprobs": [g.logprobs for g in gens]}
        print(f"group {name}: {cpu:.1f} CPU s ({wall:.1f} s)", flush=True)
    same = results["uncached"]["tokens"] == results["cached"]["tokens"]
    assert same, "the prefix cache changed the group's tokens"
    drift = max((abs(a - b) for u, c in zip(results["uncached"]["logprobs"], results["cached"]["logprobs"])
                 for a, b in zip(u, c)), default=0.0)
    return {"prompt_tokens": len(prompt), "group": group, "max_new_tokens": sampling.max_tokens,
            "new_tokens": sum(len(t) for t in results["cached"]["tokens"]), "same_tokens": same,
            "max_logprob_diff": drift,
            "uncached": {k: results["uncached"][k] for k in ("wall_s", "cpu_s")},
            "cached": {k: results["cached"][k] for k in ("wall_s", "cpu_s")},
            "speedup_cpu": results["uncached"]["cpu_s"] / results["cached"]["cpu_s"]}


def section_episode(plain: Any, cached: Any, system: str, observation: str, responses: list[str],
                    quick: bool) -> dict[str, Any]:
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.chat import ChatAgent

    sampling = SamplingParams(max_tokens=24, temperature=0.0)
    info = {"system_prompt": system}
    observations = [observation, *responses][: 3 if quick else 10]

    def play(backend: Any) -> Any:
        agent = ChatAgent(backend, sampling, observation_role="user")
        agent.reset(seed=0)
        for obs in observations:
            agent.act(obs, info)
        return agent.token_record()

    results = {}
    for name, backend in (("uncached", plain), ("cached", cached)):
        before = dict(backend.prefix_cache_stats())
        wall, cpu, record = timed(lambda backend=backend: play(backend))
        after = backend.prefix_cache_stats()
        results[name] = {"wall_s": wall, "cpu_s": cpu, "record": record,
                         "reused_tokens": after.get("reused_tokens", 0) - before.get("reused_tokens", 0),
                         "prefilled_tokens": after.get("prefilled_tokens", 0) - before.get("prefilled_tokens", 0)}
        print(f"episode {name}: {cpu:.1f} CPU s ({wall:.1f} s)", flush=True)
    a, b = results["uncached"]["record"], results["cached"]["record"]
    same = a.prompt_ids == b.prompt_ids and a.completion_ids == b.completion_ids
    assert same, "the prefix cache changed the episode's tokens"
    drift = max((abs(x - y) for x, y in zip(a.logprobs, b.logprobs)), default=0.0)
    prefilled_uncached = sum(len(t.prompt_ids) for t in a.turns)
    return {"turns": len(observations), "max_new_tokens": sampling.max_tokens,
            "first_prompt_tokens": len(a.prompt_ids), "final_context_tokens": len(a.prompt_ids) + len(a.completion_ids),
            "sampled_tokens": sum(a.loss_mask), "same_tokens": same, "max_logprob_diff": drift,
            "prefilled_tokens": {"uncached": prefilled_uncached, "cached": results["cached"]["prefilled_tokens"]},
            "reused_tokens": results["cached"]["reused_tokens"],
            "uncached": {k: results["uncached"][k] for k in ("wall_s", "cpu_s")},
            "cached": {k: results["cached"][k] for k in ("wall_s", "cpu_s")},
            "speedup_cpu": results["uncached"]["cpu_s"] / results["cached"]["cpu_s"]}


def readme_rows(figures: dict[str, Any]) -> list[dict[str, str]]:
    g, e = figures["group"], figures["episode"]
    threads = "one torch thread" if figures["threads"] == 1 else f"{figures['threads']} torch threads"
    return [
        {"what": f"Prefix cache, group of {g['group']} on a {g['prompt_tokens']}-token prompt (SmolLM2-135M-Instruct, "
                 f"{threads}, sampled, seed 0, {g['max_new_tokens']} new tokens; same tokens; CPU seconds)",
         "rollgym": f"{g['cached']['cpu_s']:.1f} s", "peer": f"{g['uncached']['cpu_s']:.1f} s uncached",
         "ratio": f"{g['speedup_cpu']:.1f}x"},
        {"what": f"Prefix cache, {e['turns']}-turn ToolWorld-like episode ({e['first_prompt_tokens']} to "
                 f"{e['final_context_tokens']} context tokens, SmolLM2-135M-Instruct, {threads}, greedy, "
                 f"{e['max_new_tokens']} new tokens a turn; same tokens; CPU seconds)",
         "rollgym": f"{e['cached']['cpu_s']:.1f} s", "peer": f"{e['uncached']['cpu_s']:.1f} s uncached",
         "ratio": f"{e['speedup_cpu']:.1f}x"},
    ]


def main() -> None:
    args = quick_and_threads(__doc__.splitlines()[0], threads=1, threads_help="torch threads (default 1)")
    if not model_is_pulled(MODEL):
        return
    import torch

    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.backends.hf import TransformersBackend

    load_before = os.getloadavg()[0]
    torch.set_num_threads(args.threads)
    plain = TransformersBackend.from_pretrained(MODEL)
    cached = TransformersBackend(plain.model, plain.tokenizer, prefix_cache=True)
    for backend in (plain, cached):  # imports, and the cache's one-time check of the model's cache type
        asyncio.run(backend.generate([[1, 2, 3, 4]], SamplingParams(max_tokens=2, temperature=0.0)))
    system, observation, env = task_messages(tools_in_prompt=GROUP_TOOLS)
    env.close()
    figures: dict[str, Any] = {"model": MODEL, "threads": torch.get_num_threads(),
                               "group": section_group(plain, cached, system, observation, args.quick)}
    system, observation, env = task_messages(tools_in_prompt=EPISODE_TOOLS)
    responses = tool_responses(env, len(CALLS), max_chars=400)
    env.close()
    figures["episode"] = section_episode(plain, cached, system, observation, responses, args.quick)
    figures["cache"] = cached.prefix_cache_stats()
    print(json.dumps({k: figures[k] for k in ("group", "episode")}, indent=1))
    if not args.quick:
        from publish import save_results

        command = "python bench/bench_prefix_cache.py" + (f" --threads {args.threads}" if args.threads != 1 else "")
        path = save_results("prefixcache", figures, readme_rows(figures), command=command, load_before=load_before)
        print(f"saved {path.relative_to(Path(__file__).resolve().parent.parent)}")


if __name__ == "__main__":
    main()
