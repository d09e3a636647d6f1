"""What the rollout collector costs, measured side by side with the bare loop it replaces, in one run.

Sections (each runs in its own process, so that memory, threads and imports do not leak between them):

a. ``overhead``: the tiny local model (hidden 64, 4 layers, greedy, one torch thread) on 64
   Countdown tasks at 16, 48, 128 and 512 new tokens: the bare backend (one batched
   ``generate`` over the same 64 prompts, pre-rendered) against ``collect_async`` with a
   ``ChatAgent`` (envs built and reset, chat template, tokenization, verification,
   trajectories). Greedy decoding makes both sample the very same tokens (checked). Repeats are
   interleaved; best-of-N and the median of paired ratios are printed, with the CPU-time
   overhead (less sensitive to a shared machine). Goal: under 5% at 48 tokens and above.
b. ``instant``: an agent that costs nothing (it replays actions recorded once from the oracle,
   or from random legal moves for Connect Four) through ``collect`` and ``collect_async``
   against a bare ``env.reset``/``env.step`` loop over the same tasks and seeds, for Countdown
   (one turn), ToolWorld (tools, several turns) and Connect Four (a bot opponent). Printed:
   episodes/s, the collector's rate as a fraction of the bare loop's (goal >= 0.8) and its
   overhead per turn in microseconds.
c. ``remote``: the same episodes in other processes: through ``collect_ray`` with 2 Ray workers,
   and through ``collect_async`` against ``rollgym serve-env`` (one server process on 127.0.0.1,
   the env id as a URL, 32 episodes in flight). Start-up is included; "steady" is the rate after
   the first episode. Printed as for b, against the same bare loop in this process.
d. ``stream-file``: 20,000 Countdown episodes streamed to a results file: resident memory
   sampled every 1,000 episodes (flat), episodes/s and MB/s written, the writer alone (orjson
   and the standard library), and the time to resume from the finished file.
e. ``concurrency``: a policy with a fixed 50 ms latency per action (a remote model's round
   trip), 1 versus 32 episodes in flight.
f. ``components``: what one episode and one turn cost, piece by piece (CPU microseconds per call,
   best of 5): the env's own work, the chat template and tokenizer, the collector's bookkeeping,
   the results file. docs/llm.md's cost model is built from these.

Run: ``.venv/bin/python bench/bench_collector.py`` (about 10 minutes on 2 cores; ``--quick`` for a
smoke run that saves nothing; ``--sections a,b`` for some sections). A full run writes
``bench/results/collector.json``; ``python bench/publish.py`` renders the README table from it.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SECTIONS = {"a": "overhead", "b": "instant", "c": "remote", "d": "stream-file", "e": "concurrency", "f": "components"}
INSTANT_ENVS = (("Countdown-v0", 250, "oracle"), ("ToolWorld-v1", 40, "oracle"), ("ConnectFour-v0", 60, "random"))
GROUP = 4


# -- agents -----------------------------------------------------------------------------------------------------------
class ReplayAgent:
    """Replays the actions recorded for each task: an agent whose own cost is a dict lookup."""

    name = "replay"

    def __init__(self, scripts: dict[str, list[str]]) -> None:
        self.scripts = scripts
        self.script: list[str] = []
        self.turn = 0

    def reset(self, seed: int | None = None) -> None:
        self.script, self.turn = [], 0

    def spawn(self) -> ReplayAgent:
        """A copy for another episode in flight; the recorded scripts are shared, not copied."""
        return ReplayAgent(self.scripts)

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if not self.script:
            self.script = self.scripts[info["task_id"]]
        self.turn += 1
        return self.script[self.turn - 1]


class ConstantAgent:
    """Answers every Countdown task with the same (wrong) expression, at no cost; the verifier still runs."""

    name = "constant"

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return "<answer>(1 + 2) * 3</answer>"


class FixedLatency:
    """Answers after a fixed delay, like a remote model; always solves Countdown via the oracle's answer."""

    name = "fixed-latency"

    def __init__(self, latency: float) -> None:
        self.latency = latency

    def reset(self, seed: int | None = None) -> None:
        pass

    async def aact(self, observation: str, info: dict[str, Any]) -> str:
        from rollgym.envs.countdown.solver import countdown_oracle

        await asyncio.sleep(self.latency)
        return countdown_oracle(observation, info)


# -- helpers ----------------------------------------------------------------------------------------------------------
def timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """Wall and CPU seconds of ``fn()`` (after a garbage collection), and its result."""
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def rss_mb() -> float:
    """This process's resident memory now, in MB."""
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def summary(walls: list[float], cpus: list[float]) -> dict[str, float]:
    return {"best_s": min(walls), "median_s": statistics.median(walls), "best_cpu_s": min(cpus),
            "median_cpu_s": statistics.median(cpus)}


def seeds(n_tasks: int) -> list[int]:
    from rollgym.rollout import episode_seed

    return [episode_seed(0, i) for i in range(n_tasks)]


def bare_loop(env_id: str, n_tasks: int, group_size: int, agent: Any) -> tuple[int, list[float]]:
    """The loop a user writes without a collector: reset, act, step; returns the turns and each episode's return."""
    import rollgym
    from rollgym.rollout import agent_seed

    env = rollgym.make(env_id, split="test")
    turns, returns = 0, []
    for i, seed in enumerate(seeds(n_tasks)):
        for j in range(group_size):
            agent.reset(seed=agent_seed(0, i, j))
            observation, info = env.reset(seed=seed)
            total, done = 0.0, False
            while not done:
                observation, reward, terminated, truncated, info = env.step(agent.act(observation, info))
                total += reward
                turns += 1
                done = terminated or truncated
            returns.append(total)
    env.close()
    return turns, returns


def record_scripts(env_id: str, n_tasks: int, policy: str) -> dict[str, list[str]]:
    """Play each task once with the oracle (or random legal moves) and keep its actions."""
    import rollgym
    from rollgym.agents import OracleAgent, RandomAgent

    env = rollgym.make(env_id, split="test")
    agent: Any = OracleAgent() if policy == "oracle" else RandomAgent(seed=0)
    scripts: dict[str, list[str]] = {}
    for seed in seeds(n_tasks):
        observation, info = env.reset(seed=seed)
        actions: list[str] = []
        done = False
        while not done:
            actions.append(agent.act(observation, info))
            observation, _, terminated, truncated, info = env.step(actions[-1])
            done = terminated or truncated
        scripts[str(info["task_id"])] = actions
    env.close()
    return scripts


def returns_of(groups: list[Any]) -> list[float]:
    return [t.reward for g in groups for t in g.trajectories]


# -- a. overhead over the bare backend --------------------------------------------------------------------------------
def section_overhead(quick: bool) -> dict[str, Any]:
    import types

    import torch

    import rollgym
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.backends.hf import TransformersBackend, render_chat_ids
    from rollgym.agents.backends.tiny import build_tiny_model
    from rollgym.agents.chat import ChatAgent
    from rollgym.rollout import EnvPool
    from rollgym.rollout.stream import collect_async
    from rollgym.train.adapters.trl import make_rollout_func, task_rows

    torch.set_num_threads(1)  # the tiny model gains nothing from more; spinning threads only add noise
    folder = build_tiny_model(tempfile.mkdtemp(prefix="rollgym-bench-"), hidden_size=64, layers=4)
    n = 16 if quick else 64
    backend = TransformersBackend.from_pretrained(str(folder), max_batch=n)
    tokenizer = backend.tokenizer

    # workload 1: collect_async over the run's tasks (drawn by seed); the bare backend gets the same prompts
    env = rollgym.make("Countdown-v0", split="test")
    prompts = []
    for seed in seeds(n):
        observation, info = env.reset(seed=seed)
        prompts.append(render_chat_ids(tokenizer, [{"role": "system", "content": info["system_prompt"]},
                                                   {"role": "user", "content": observation}]))
    env.close()
    # workload 2: TRL's rollout_func over a make_dataset(...) batch
    rows = task_rows("Countdown-v0", n, split="test")
    trl_prompts = [render_chat_ids(tokenizer, row["prompt"]) for row in rows]

    def trainer(tokens: int) -> Any:  # the attributes TRL's GRPOTrainer hands a rollout_func
        return types.SimpleNamespace(model=backend.model, processing_class=tokenizer, temperature=0.0,
                                     args=types.SimpleNamespace(max_completion_length=tokens),
                                     state=types.SimpleNamespace(global_step=0))

    figures: dict[str, Any] = {"episodes": n, "lengths": {}, "pooled_lengths": {}, "trl_lengths": {}}
    pool = EnvPool()  # envs kept across runs, as a training loop keeps them across steps
    for tokens in (16, 48) if quick else (16, 48, 128, 512):
        sampling = SamplingParams(max_tokens=tokens, temperature=0.0)
        rollout = make_rollout_func("Countdown-v0", rows, max_turns=1, temperature=0.0)

        def bare(bare_prompts: list[list[int]], sampling: SamplingParams = sampling) -> list[list[int]]:
            return [g.token_ids for g in asyncio.run(backend.generate(bare_prompts, sampling))]

        def collected(sampling: SamplingParams = sampling, env_pool: Any = None) -> list[list[int]]:
            groups = collect_async(ChatAgent(backend, sampling), "Countdown-v0", n, 1, seed=0, concurrency=n,
                                   env_pool=env_pool)
            return [g.trajectories[0].turns[0].output_ids for g in groups]

        def trl(rollout: Any = rollout, tokens: int = tokens) -> list[list[int]]:
            return rollout([row["prompt"] for row in rows], trainer(tokens))["completion_ids"]  # type: ignore

        # each runner is compared with the bare backend on the very prompts it renders
        runners: dict[str, tuple[str, Callable[[], list[list[int]]]]] = {
            "lengths": ("bare", collected), "pooled_lengths": ("bare", functools.partial(collected, env_pool=pool)),
        }
        bares: dict[str, Callable[[], list[list[int]]]] = {"bare": functools.partial(bare, prompts)}
        if tokens in (48, 128) or quick:
            runners["trl_lengths"] = ("trl_bare", trl)
            bares["trl_bare"] = functools.partial(bare, trl_prompts)
        for run in [*bares.values(), *(r for _, r in runners.values())]:
            run()  # warm up every path (and fill the env pool)
        # the judged lengths (48, 128) get more repeats: one decode of the same batch varies by several
        # percent from repeat to repeat on this shared VM, as much as the overhead being measured
        reps = 2 if quick else (3 if tokens >= 512 else 11 if tokens in (48, 128) else 7)
        names = [*bares, *runners]
        walls: dict[str, list[float]] = {name: [] for name in names}
        cpus: dict[str, list[float]] = {name: [] for name in names}
        outputs: dict[str, list[list[int]]] = {}
        for rep in range(reps):  # interleaved, the order reversed every other repeat
            for name in names if rep % 2 == 0 else names[::-1]:
                wall, cpu, outputs[name] = timed(bares[name] if name in bares else runners[name][1])
                walls[name].append(wall)
                cpus[name].append(cpu)
        for key, (base, _) in runners.items():
            paired = [c / b for c, b in zip(walls[key], walls[base])]
            figures[key][str(tokens)] = {
                "bare": summary(walls[base], cpus[base]), "collector": summary(walls[key], cpus[key]),
                "repeats": reps, "overhead_best": min(walls[key]) / min(walls[base]) - 1,
                "overhead_median_paired": statistics.median(paired) - 1,
                "overhead_cpu": min(cpus[key]) / min(cpus[base]) - 1, "same_tokens": outputs[key] == outputs[base],
                "mean_new_tokens": statistics.mean(len(ids) for ids in outputs[base]),
                "overhead_ms_per_episode": 1e3 * (min(walls[key]) - min(walls[base])) / n,
            }
    pool.close()
    return figures


# -- b. instant agent against the bare loop ---------------------------------------------------------------------------
def section_instant(quick: bool) -> dict[str, Any]:
    from rollgym.rollout import collect, collect_async

    runners: dict[str, Callable[[Any, str, int], list[Any]]] = {
        "collect": lambda agent, env_id, n: collect(agent, env_id, n, GROUP, seed=0),
        "collect_async": lambda agent, env_id, n: collect_async(agent, env_id, n, GROUP, seed=0),
    }
    figures: dict[str, Any] = {}
    for env_id, n_tasks, policy in INSTANT_ENVS:
        n_tasks = max(4, n_tasks // 5) if quick else n_tasks
        agent = ReplayAgent(record_scripts(env_id, n_tasks, policy))
        bare_loop(env_id, 2, 1, agent)  # warm up imports and caches on every path
        for run in runners.values():
            run(agent, env_id, 2)
        walls: dict[str, list[float]] = {"bare": [], **{name: [] for name in runners}}
        cpus: dict[str, list[float]] = {name: [] for name in walls}
        turns, expected = 0, []
        for rep in range(2 if quick else 7):
            order = ["bare", *runners] if rep % 2 == 0 else [*runners, "bare"]
            for name in order:
                if name == "bare":
                    wall, cpu, (turns, expected) = timed(functools.partial(bare_loop, env_id, n_tasks, GROUP, agent))
                else:
                    wall, cpu, groups = timed(functools.partial(runners[name], agent, env_id, n_tasks))
                    if returns_of(groups) != expected and expected:
                        raise AssertionError(f"{name} played different episodes than the bare loop on {env_id}")
                walls[name].append(wall), cpus[name].append(cpu)
        episodes = n_tasks * GROUP
        base = min(walls["bare"])
        figures[env_id] = {
            "episodes": episodes, "turns": turns, "policy": policy,
            "bare": {**summary(walls["bare"], cpus["bare"]), "episodes_per_s": episodes / base},
        }
        for name in runners:
            best = min(walls[name])
            figures[env_id][name] = {
                **summary(walls[name], cpus[name]), "episodes_per_s": episodes / best, "ratio": base / best,
                "ratio_cpu": min(cpus["bare"]) / min(cpus[name]),
                "overhead_us_per_turn": 1e6 * (best - base) / turns,
                "overhead_us_per_episode": 1e6 * (best - base) / episodes,
                "overhead_cpu_us_per_turn": 1e6 * (min(cpus[name]) - min(cpus["bare"])) / turns,
                "overhead_cpu_us_per_episode": 1e6 * (min(cpus[name]) - min(cpus["bare"])) / episodes,
            }
    return figures


# -- c. other processes: Ray workers and the env server --------------------------------------------------------------
def _ray_runner(agent_factory: Callable[[], Any], env_id: str, n_tasks: int, stamps: list[float]) -> list[Any]:
    from rollgym.rollout.distributed import collect_ray

    return collect_ray(agent_factory, env_id, n_tasks, GROUP, seed=0, num_workers=2, episodes_per_worker=8,
                       progress=lambda done, total: stamps.append(time.perf_counter()))


def _served_runner(url: str, agent_factory: Callable[[], Any], env_id: str, n_tasks: int,
                   stamps: list[float]) -> list[Any]:
    from rollgym.rollout import collect_async

    return collect_async(agent_factory(), f"{url}/{env_id}", n_tasks, GROUP, seed=0, concurrency=32,
                         progress=lambda done, total: stamps.append(time.perf_counter()))


def _missing(*modules: str) -> str | None:
    """The first of ``modules`` that does not import, as a sentence; ``None`` when all do."""
    import importlib.util

    for module in modules:
        if importlib.util.find_spec(module) is None:
            return f"skipped: {module} is not installed"
    return None


def section_remote(quick: bool) -> dict[str, Any]:
    runners: dict[str, Callable[[Callable[[], Any], str, int, list[float]], list[Any]]] = {}
    skipped: dict[str, str] = {}
    cleanups: list[Callable[[], None]] = []
    ray_missing = _missing("ray")
    if ray_missing is None:
        import ray

        ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False, num_cpus=2)
        cleanups.append(ray.shutdown)
        runners["collect_ray (2 workers)"] = _ray_runner
    else:
        skipped["collect_ray (2 workers)"] = ray_missing
    serve_missing = _missing("starlette", "uvicorn", "websockets")
    if serve_missing is None:
        from rollgym.serve.spawn import ServeEnvProcess

        server = ServeEnvProcess(*[env_id for env_id, _, _ in INSTANT_ENVS])
        cleanups.append(server.close)
        runners["collect_async over serve-env"] = functools.partial(_served_runner, server.url)
    else:
        skipped["collect_async over serve-env"] = serve_missing
    figures: dict[str, Any] = {"skipped": skipped}
    try:
        for env_id, n_tasks, policy in INSTANT_ENVS:
            n_tasks = max(4, n_tasks // 5) if quick else n_tasks
            scripts = record_scripts(env_id, n_tasks, policy)
            factory = functools.partial(ReplayAgent, scripts)
            bare_walls: list[float] = []
            runs: dict[str, list[tuple[float, float]]] = {name: [] for name in runners}
            turns, expected = 0, []
            for run in runners.values():  # warm up: Ray's first actors pay for imports, the server for its envs
                run(factory, env_id, 2, [])
            for rep in range(1 if quick else 3):
                wall, _, (turns, expected) = timed(functools.partial(bare_loop, env_id, n_tasks, GROUP, factory()))
                bare_walls.append(wall)
                for name in runners if rep % 2 == 0 else list(runners)[::-1]:
                    stamps: list[float] = []
                    gc.collect()
                    start = time.perf_counter()
                    groups = runners[name](factory, env_id, n_tasks, stamps)
                    total = time.perf_counter() - start
                    if returns_of(groups) != expected:
                        raise AssertionError(f"{name} played different episodes than the bare loop on {env_id}")
                    finished = [s for s in stamps if s > start]
                    steady = (len(finished) - 1) / (finished[-1] - finished[0]) if len(finished) > 2 else 0.0
                    runs[name].append((total, steady))
            episodes = n_tasks * GROUP
            base = min(bare_walls)
            figures[env_id] = {"episodes": episodes, "turns": turns, "bare": {"best_s": base,
                                                                               "episodes_per_s": episodes / base}}
            for name, measured in runs.items():
                best = min(t for t, _ in measured)
                steady = max(s for _, s in measured)
                figures[env_id][name] = {
                    "best_s": best, "episodes_per_s": episodes / best, "ratio": base / best,
                    "steady_episodes_per_s": steady, "steady_ratio": steady * base / episodes,
                    "overhead_us_per_turn": 1e6 * (best - base) / turns,
                }
    finally:
        for cleanup in reversed(cleanups):
            cleanup()
    return figures


# -- d. a long run streamed to a results file ------------------------------------------------------------------------
def section_stream_file(quick: bool) -> dict[str, Any]:
    from rollgym.rollout import ResultsWriter, collect_async, load_results, store, stream

    n_tasks = 250 if quick else 5000
    episodes = n_tasks * GROUP
    folder = Path(tempfile.mkdtemp(prefix="rollgym-bench-"))
    out = folder / "run.jsonl"
    samples: list[tuple[int, float]] = []

    def progress(done: int, total: int) -> None:
        if done % 1000 == 0 or done == total:
            samples.append((done, rss_mb()))

    async def run() -> int:
        count = 0
        async for _group in stream(ConstantAgent(), "Countdown-v0", n_tasks, GROUP, out=str(out), progress=progress):
            count += 1
        return count

    collect_async(ConstantAgent(), "Countdown-v0", 2, 1)  # warm up imports outside the measurement
    start_rss = rss_mb()
    wall, cpu, groups = timed(lambda: asyncio.run(run()))
    size = out.stat().st_size
    assert groups == n_tasks
    records = load_results(out).episodes

    def write_all(path: Path) -> None:
        writer, _ = ResultsWriter.open(path, {"env_id": "bench"})
        for record in records:
            writer.append(record)
        writer.close()

    writers = {}
    for label, fast in (("orjson", True), ("json", False)):
        if fast and store._fast_json() is None:
            continue
        saved = store._orjson, store._orjson_checked
        if not fast:
            store._orjson, store._orjson_checked = None, True
        try:
            best = min(timed(functools.partial(write_all, folder / f"{label}.jsonl"))[0] for _ in range(3))
        finally:
            store._orjson, store._orjson_checked = saved
        writers[label] = {"lines_per_s": len(records) / best, "mb_per_s": size / best / 1e6}
    resume_wall = min(timed(lambda: collect_async(ConstantAgent(), "Countdown-v0", n_tasks, GROUP,
                                                  out=str(out)))[0] for _ in range(2))
    load_wall = min(timed(lambda: load_results(out))[0] for _ in range(2))
    rss = [mb for _, mb in samples]
    return {
        "episodes": episodes, "wall_s": wall, "cpu_s": cpu, "episodes_per_s": episodes / wall,
        "file_mb": size / 1e6, "write_mb_per_s": size / wall / 1e6, "rss_start_mb": start_rss,
        "rss_samples_mb": samples, "rss_peak_mb": max(rss), "rss_growth_mb": rss[-1] - rss[0],
        "rss_growth_last_quarter_mb": rss[-1] - next(mb for done, mb in samples if done >= 3 * episodes // 4),
        "writer": writers, "resume_s": resume_wall, "load_s": load_wall,
    }


# -- e. concurrency ---------------------------------------------------------------------------------------------------
def section_concurrency(quick: bool) -> dict[str, Any]:
    from rollgym.rollout.stream import collect_async

    episodes = 64 if quick else 256
    times = {}
    for in_flight in (1, 32):
        times[in_flight] = timed(functools.partial(collect_async, FixedLatency(0.05), "Countdown-v0", episodes, 1,
                                                   seed=0, concurrency=in_flight))[0]
    speedup = times[1] / times[32]
    return {"episodes": episodes, "latency_s": 0.05, "one_s": times[1], "many_s": times[32], "speedup": speedup,
            "fraction_of_ideal": speedup / 32}


# -- f. the cost of each piece ---------------------------------------------------------------------------------------
def per_call(fn: Callable[[int], Any], calls: int, repeats: int = 5) -> float:
    """CPU microseconds per call of ``fn(k)``, best of ``repeats`` passes of ``calls`` calls."""
    best = float("inf")
    for _ in range(repeats):
        gc.collect()
        start = time.process_time()
        for k in range(calls):
            fn(k)
        best = min(best, time.process_time() - start)
    return 1e6 * best / calls


def section_components(quick: bool) -> dict[str, Any]:
    import rollgym
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.backends.tiny import build_tiny_model
    from rollgym.agents.chat import ChatAgent
    from rollgym.rollout import EpisodeLimits, EpisodeRecord, ResultsWriter, collect, collect_async, run_episode, store
    from rollgym.rollout.collector import RunPlan

    calls = 60 if quick else 400
    folder = build_tiny_model(tempfile.mkdtemp(prefix="rollgym-bench-"))
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    env = rollgym.make("Countdown-v0", split="test")
    task_seeds = seeds(calls)
    figures: dict[str, float] = {}
    figures["env_make"] = per_call(lambda k: rollgym.make("Countdown-v0", split="test"), max(20, calls // 4))
    figures["env_reset"] = per_call(lambda k: env.reset(seed=task_seeds[k]), calls)

    def reset_step(k: int) -> None:
        env.reset(seed=task_seeds[k])
        env.step("<answer>(1 + 2) * 3</answer>")

    figures["env_step_verify"] = per_call(reset_step, calls) - figures["env_reset"]

    firsts = []
    for seed in task_seeds:
        observation, info = env.reset(seed=seed)
        firsts.append([{"role": "system", "content": info["system_prompt"]}, {"role": "user", "content": observation}])
    agent = ChatAgent(_Echo(tokenizer), SamplingParams(max_tokens=8))
    cache = agent.prompts
    figures["chat_template_render"] = per_call(lambda k: cache.render(firsts[k], None), calls)
    texts = [cache.render(m, None) for m in firsts]
    cache.encoder.encode(texts[0])  # the system prompt's piece is cached from here on, as in a run
    figures["tokenize_whole_prompt_uncached"] = per_call(
        lambda k: tokenizer(texts[k], add_special_tokens=False)["input_ids"], calls, repeats=3)
    figures["tokenize_new_task_prompt_encoder"] = per_call(lambda k: cache.encoder.encode(texts[k]), calls, repeats=1)
    figures["first_prompt_group_member_cached"] = per_call(lambda k: cache.first_prompt(firsts[k], None), calls)

    # one more turn of a chat: render the conversation, decode the reply's tail, tokenize the new text
    conversation = firsts[0] + [{"role": "assistant", "content": "<answer>(1 + 2) * 3</answer>"},
                                {"role": "user", "content": "Not quite: that is 9. Try again."}]
    tail = tokenizer("<answer>(1 + 2) * 3</answer>", add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]

    def next_turn(k: int) -> None:
        chat = ChatAgent(_Echo(tokenizer), SamplingParams(max_tokens=8))
        chat.messages, chat.tools, chat._prompt_cache = list(conversation), None, cache
        chat._context_text = texts[0]
        chat.turns = [_turn(tail)]
        chat._append_observation()

    figures["chat_turn_append"] = per_call(next_turn, calls)

    class Null:  # an env that costs nothing, so that only the collector's bookkeeping is timed
        def __init__(self) -> None:
            self.observation, self.info = env.reset(seed=1)
            self.result = env.step("<answer>(1 + 2) * 3</answer>")
            self.unwrapped, self.task = self, env.unwrapped.task

        def reset(self, seed: Any = None, options: Any = None) -> Any:
            return self.observation, dict(self.info)

        def step(self, action: str) -> Any:
            return (*self.result[:4], dict(self.result[4]))

    null, limits, constant = Null(), EpisodeLimits(), ConstantAgent()
    figures["episode_bookkeeping"] = per_call(lambda k: run_episode(null, constant, seed=k, limits=limits), calls * 5)
    plan = RunPlan.prepare(constant, "Countdown-v0", calls, 4, "test", 0, None, None, 100)
    figures["job_seeds_and_ids"] = per_call(lambda k: plan.job_args(k // 4, k % 4), calls)
    trajectory, task = run_episode(null, constant, seed=1, limits=limits)
    record = EpisodeRecord(0, task, trajectory)
    figures["record_keep"] = per_call(lambda k: plan.keep(k, EpisodeRecord(k, task, trajectory)), calls)
    figures["record_line_orjson"] = per_call(lambda k: record.to_line(), calls)
    saved = store._orjson, store._orjson_checked
    store._orjson, store._orjson_checked = None, True
    figures["record_line_json"] = per_call(lambda k: record.to_line(), calls)
    store._orjson, store._orjson_checked = saved
    writer, _ = ResultsWriter.open(Path(tempfile.mkdtemp(prefix="rollgym-bench-")) / "w.jsonl", {"env_id": "x"})
    figures["results_file_append"] = per_call(lambda k: writer.append(record), calls)
    writer.close()
    # a whole run divided by its episodes: everything above plus the run's fixed costs and the event loop
    replay = ConstantAgent()
    n = 50 if quick else 250
    bare = per_call(lambda k: bare_loop("Countdown-v0", n, GROUP, replay), 1, repeats=3) / (n * GROUP)
    for name, run in (("collect", lambda k: collect(replay, "Countdown-v0", n, GROUP)),
                      ("collect_async", lambda k: collect_async(replay, "Countdown-v0", n, GROUP))):
        figures[f"{name}_per_episode_over_bare"] = per_call(run, 1, repeats=3) / (n * GROUP) - bare
    figures["bare_loop_per_episode"] = bare
    env.close()
    return figures


class _Echo:
    """A backend stand-in for the micro-benchmarks above: they never call ``generate``."""

    name = "echo"
    policy_version = 0

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    async def generate(self, prompts: list[Any], sampling: Any) -> list[Any]:
        raise NotImplementedError


def _turn(output_ids: list[int]) -> Any:
    from rollgym.agents.chat import TurnRecord

    return TurnRecord(prompt_ids=[], output_ids=list(output_ids), output_logprobs=[0.0] * len(output_ids))


RUN = {"overhead": section_overhead, "instant": section_instant, "remote": section_remote,
       "stream-file": section_stream_file, "concurrency": section_concurrency, "components": section_components}


# -- report -----------------------------------------------------------------------------------------------------------
def pct(x: float) -> str:
    return f"{100 * x:+.1f}%"


def print_report(figures: dict[str, Any]) -> None:
    if "overhead" in figures:
        f = figures["overhead"]
        print(f"\na. collector overhead over the bare backend: {f['episodes']} Countdown episodes, tiny model, greedy")
        print(f"{'new tokens':>10} {'bare best s':>12} {'collector s':>12} {'overhead':>9} {'median':>8} "
              f"{'CPU':>8} {'ms/episode':>11}  same tokens")
        for label, key in (("collect_async, envs built in the run", "lengths"),
                           ("collect_async, envs kept across runs (EnvPool)", "pooled_lengths"),
                           ("TRL rollout_func (keeps its envs between calls)", "trl_lengths")):
            print(f"  {label}:")
            for tokens, row in f[key].items():
                print(f"{tokens:>10} {row['bare']['best_s']:>12.3f} {row['collector']['best_s']:>12.3f} "
                      f"{pct(row['overhead_best']):>9} {pct(row['overhead_median_paired']):>8} "
                      f"{pct(row['overhead_cpu']):>8} {row['overhead_ms_per_episode']:>11.2f}  {row['same_tokens']}")
    if "instant" in figures:
        print("\nb. instant agent: collector against the bare reset/step loop (same tasks, seeds and actions)")
        print(f"{'env':<16} {'episodes':>8} {'turns':>6} {'bare ep/s':>10} {'runner':<14} {'ep/s':>8} "
              f"{'ratio':>6} {'CPU ratio':>9} {'us/turn':>8} {'us/episode':>10} {'CPU us/turn':>11}")
        for env_id, row in figures["instant"].items():
            for name in ("collect", "collect_async"):
                r = row[name]
                print(f"{env_id:<16} {row['episodes']:>8} {row['turns']:>6} {row['bare']['episodes_per_s']:>10.0f} "
                      f"{name:<14} {r['episodes_per_s']:>8.0f} {r['ratio']:>6.2f} {r['ratio_cpu']:>9.2f} "
                      f"{r['overhead_us_per_turn']:>8.1f} {r['overhead_us_per_episode']:>10.1f} "
                      f"{r['overhead_cpu_us_per_turn']:>11.1f}")
    if "remote" in figures:
        print("\nc. the same episodes in other processes (start-up included; steady = after the first episode)")
        for name, reason in figures["remote"]["skipped"].items():
            print(f"   {name}: {reason}")
        for env_id, row in figures["remote"].items():
            if env_id == "skipped":
                continue
            for name, r in row.items():
                if name in ("episodes", "turns", "bare"):
                    continue
                print(f"{env_id:<16} {name:<30} {r['episodes_per_s']:>8.0f} ep/s (ratio {r['ratio']:.2f}, "
                      f"{r['overhead_us_per_turn']:+.0f} us/turn), steady {r['steady_episodes_per_s']:.0f} ep/s "
                      f"(ratio {r['steady_ratio']:.2f}); bare {row['bare']['episodes_per_s']:.0f} ep/s")
    if "stream-file" in figures:
        f = figures["stream-file"]
        samples = ", ".join(f"{done}: {mb:.0f}" for done, mb in f["rss_samples_mb"][:: max(1, len(f['rss_samples_mb'])
                                                                                          // 5)])
        print(f"\nd. {f['episodes']:,} Countdown episodes streamed to a results file: {f['episodes_per_s']:.0f} ep/s, "
              f"{f['file_mb']:.1f} MB at {f['write_mb_per_s']:.1f} MB/s")
        print(f"   resident memory (episodes: MB) {samples}; peak {f['rss_peak_mb']:.0f} MB, growth "
              f"{f['rss_growth_mb']:+.1f} MB over the run, {f['rss_growth_last_quarter_mb']:+.1f} MB over its last "
              "quarter (the env's and the collector's bounded caches fill first)")
        for label, w in f["writer"].items():
            print(f"   writer alone, {label}: {w['lines_per_s']:,.0f} lines/s, {w['mb_per_s']:.0f} MB/s")
        print(f"   resume from the finished file: {f['resume_s']:.2f} s (load_results alone {f['load_s']:.2f} s)")
    if "components" in figures:
        f = figures["components"]
        print("\nf. cost of each piece (CPU microseconds per call, best of several passes)")
        for name, value in f.items():
            print(f"   {name:<40} {value:>9.1f}")
    if "concurrency" in figures:
        f = figures["concurrency"]
        print(f"\ne. {f['episodes']} episodes at 50 ms latency: 1 in flight {f['one_s']:.2f} s, 32 in flight "
              f"{f['many_s']:.2f} s: {f['speedup']:.1f}x = {100 * f['fraction_of_ideal']:.0f}% of the ideal 32x")


def readme_rows(figures: dict[str, Any]) -> list[dict[str, str]]:
    """The README rows these figures stand behind."""
    rows = []
    c = figures["concurrency"]
    rows.append({"what": f"Collector, 32 episodes in flight vs 1 (50 ms policy latency, {c['episodes']} episodes)",
                 "rollgym": f"{c['many_s']:.2f} s", "peer": f"{c['one_s']:.1f} s",
                 "ratio": f"{c['speedup']:.1f}x ({100 * c['fraction_of_ideal']:.0f}% of ideal)"})
    # Section a's tiny-model overhead (a few percent) is within its decode's repeat-to-repeat noise, so it gets no
    # row; bench_real_model.py gives the collector's share beside a real model's generation (docs/llm.md has both).
    for env_id, row in figures["instant"].items():
        r = row["collect"]
        rows.append({"what": f"Collector vs bare reset/step loop, instant agent, {env_id} (episodes/s)",
                     "rollgym": f"{r['episodes_per_s']:,.0f}", "peer": f"{row['bare']['episodes_per_s']:,.0f}",
                     "ratio": f"{r['ratio']:.2f}x ({r['overhead_us_per_turn']:.0f} us/turn)"})
    remote = {env_id: row for env_id, row in figures["remote"].items() if env_id != "skipped"}
    # collect_ray's row comes from bench_ray.py, which measures it side by side with the bare loop on its own
    names = [name for name in next(iter(remote.values()))
             if name not in ("episodes", "turns", "bare") and not name.startswith("collect_ray")]
    for name in names:
        rows.append({"what": f"Instant agent through {name} vs the bare loop in one process, "
                             f"{' / '.join(remote)} (episodes/s)",
                     "rollgym": " / ".join(f"{row[name]['episodes_per_s']:,.0f}" for row in remote.values()),
                     "peer": " / ".join(f"{row['bare']['episodes_per_s']:,.0f}" for row in remote.values()),
                     "ratio": " / ".join(f"{row[name]['ratio']:.2f}x" for row in remote.values())})
    f = figures["stream-file"]
    rows.append({"what": f"{f['episodes']:,} episodes streamed to a results file: peak memory, growth over the "
                         "last quarter",
                 "rollgym": f"{f['rss_peak_mb']:.0f} MB, {f['rss_growth_last_quarter_mb']:+.1f} MB",
                 "peer": "", "ratio": f"{f['episodes_per_s']:,.0f} ep/s, resume {f['resume_s']:.1f} s"})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, nothing saved")
    parser.add_argument("--sections", default="a,b,c,d,e,f", help="comma-separated letters (default: all)")
    parser.add_argument("--section", help=argparse.SUPPRESS)  # run one section in this process, print JSON
    args = parser.parse_args()
    if args.section:
        print(json.dumps(RUN[args.section](args.quick)))
        return
    chosen = [SECTIONS[s.strip()] for s in args.sections.split(",")]
    figures: dict[str, Any] = {}
    for name in chosen:
        command = [sys.executable, __file__, "--section", name] + (["--quick"] if args.quick else [])
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            sys.stderr.write(done.stderr)
            raise SystemExit(f"section {name} failed")
        figures[name] = json.loads(done.stdout.strip().splitlines()[-1])
        print_report({name: figures[name]})
    if not args.quick and set(chosen) == set(SECTIONS.values()):
        from publish import save_results

        path = save_results("collector", figures, readme_rows(figures), command="python bench/bench_collector.py")
        print(f"\nsaved {path.relative_to(Path(__file__).resolve().parent.parent)}")


if __name__ == "__main__":
    main()
