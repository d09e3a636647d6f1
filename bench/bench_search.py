"""Search family: corpus build time, search latency and reset time, next to rank-bm25 as the peer ranker.

Run: ``.venv/bin/python bench/bench_search.py`` (a minute or two; ``--quick`` for a smoke run).

Measured in one run:

1. **Build**: knowledge graph, article rendering and BM25 index (bm25s), for the default 2,000-article world
   and the 10,000-article bench world.
2. **Search latency** over the 10,000-article world, for queries made of real question texts: the raw BM25
   ranking (``SearchIndex.search``), the ``search`` tool (ranking plus snippets and JSON-ready results), the
   env path an agent takes (``env.step`` with a ``<tool_call>`` for that tool: parse the call, run the tool,
   render the response, through ``gym.make``'s wrappers), and the same ranking with ``rank_bm25.BM25Okapi``
   (the peer a user would otherwise pick) on the same tokens.
3. **Reset and step**: ``Search-v1`` reset (question drawn and proved) and one ``search`` tool step.

Nothing here asserts: the figures go into docs/search.md.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

import gymnasium as gym
import numpy as np

import rollgym  # noqa: F401  (registers the ids)
from rollgym.envs.search.corpus import build_corpus
from rollgym.envs.search.index import build_index, tokenize
from rollgym.envs.search.questions import QuestionSpec, generate_question
from rollgym.envs.search.tools import SearchSession
from rollgym.envs.search.world import build_world


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def build_times(size: int) -> tuple[dict[str, float], object]:
    """Wall and CPU seconds of each build stage (CPU time is what a quiet machine would show as wall time)."""
    marks = [(time.perf_counter(), time.process_time())]
    world = build_world(size, 0)
    marks.append((time.perf_counter(), time.process_time()))
    corpus = build_corpus(world)
    marks.append((time.perf_counter(), time.process_time()))
    index = build_index(corpus)
    marks.append((time.perf_counter(), time.process_time()))
    row: dict[str, float] = {"docs": len(corpus.docs), "mb": sum(len(d.text) for d in corpus.docs) / 1e6}
    for i, stage in enumerate(("graph", "render", "index")):
        row[stage] = marks[i + 1][0] - marks[i][0]
        row[stage + "_cpu"] = marks[i + 1][1] - marks[i][1]
    row["total"], row["total_cpu"] = marks[-1][0] - marks[0][0], marks[-1][1] - marks[0][1]
    return row, index


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer queries and resets")
    parser.add_argument("--size", type=int, default=10_000, help="articles in the bench world")
    args = parser.parse_args()
    n_queries = 200 if args.quick else 2000
    n_peer = 20 if args.quick else 200
    n_resets = 20 if args.quick else 200

    bm25s_import = time.perf_counter()
    import bm25s

    bm25s_import = time.perf_counter() - bm25s_import
    small, _ = build_times(2000)
    big, index = build_times(args.size)
    print(f"bm25s import: {_ms(bm25s_import)}")
    for name, row in (("default world", small), ("bench world", big)):
        print(f"{name}: {row['docs']:.0f} articles, {row['mb']:.1f} MB text; wall (CPU): "
              + ", ".join(f"{stage} {_ms(row[stage])} ({_ms(row[stage + '_cpu'])})"
                          for stage in ("graph", "render", "index", "total")))

    corpus = index.corpus  # type: ignore[attr-defined]
    rng = random.Random(0)
    specs = [QuestionSpec("chain", 1, None), QuestionSpec("chain", 2, None), QuestionSpec("intersection", 1, None)]
    questions = [generate_question(corpus.world, corpus, specs[i % 3], rng).text for i in range(200)]
    queries = [questions[i % len(questions)] for i in range(n_queries)]
    raw, tool = [], []
    session = SearchSession(corpus, index)  # type: ignore[arg-type]
    for q in queries:
        t = time.perf_counter()
        index.search(q, 5)  # type: ignore[attr-defined]
        raw.append(time.perf_counter() - t)
        t = time.perf_counter()
        session.call("search", {"query": q, "k": 5})
        tool.append(time.perf_counter() - t)
    raw_p50, raw_p95 = percentiles(raw)
    tool_p50, tool_p95 = percentiles(tool)
    step_p50, step_p95 = percentiles(env_steps(args.size, queries))
    print(f"search over {len(corpus.docs)} articles ({n_queries} queries, k=5): BM25 ranking p50 {_ms(raw_p50)} "
          f"p95 {_ms(raw_p95)}; search tool p50 {_ms(tool_p50)} p95 {_ms(tool_p95)}; through env.step "
          f"p50 {_ms(step_p50)} p95 {_ms(step_p95)}")

    try:
        from rank_bm25 import BM25Okapi
    except ImportError:
        print("rank-bm25 is not installed (pip install rank-bm25): peer skipped")
    else:
        tokens = [tokenize(d.text) for d in corpus.docs]
        t = time.process_time()
        peer = BM25Okapi(tokens)
        peer_build = time.process_time() - t
        t = time.process_time()
        bm25s.BM25(k1=1.5, b=0.75).index(tokens, show_progress=False)
        ours_build = time.process_time() - t
        peer_times = []
        for q in queries[:n_peer]:
            t = time.perf_counter()
            scores = peer.get_scores(tokenize(q))
            np.argsort(-scores)[:5]
            peer_times.append(time.perf_counter() - t)
        peer_p50, peer_p95 = percentiles(peer_times)
        print(f"peer rank_bm25.BM25Okapi: index CPU {_ms(peer_build)} vs bm25s {_ms(ours_build)} on the same "
              f"tokens ({peer_build / ours_build:.1f}x); query p50 {_ms(peer_p50)} p95 {_ms(peer_p95)} "
              f"({n_peer} queries) -> bm25s ranking is {peer_p50 / raw_p50:.0f}x faster at p50, the search tool "
              f"through env.step {peer_p50 / step_p50:.0f}x")
        if not args.quick:
            from publish import save_results

            save_results("search", {"articles": len(corpus.docs), "queries": n_queries, "peer_queries": n_peer,
                                    "ranking_p50_s": raw_p50, "ranking_p95_s": raw_p95,
                                    "tool_p50_s": tool_p50, "tool_p95_s": tool_p95,
                                    "env_step_p50_s": step_p50, "env_step_p95_s": step_p95,
                                    "peer_p50_s": peer_p50, "peer_p95_s": peer_p95, "peer_build_cpu_s": peer_build,
                                    "build_cpu_s": ours_build}, [
                {"what": f"Search over {len(corpus.docs):,} articles (p50): BM25 ranking alone / the `search` tool "
                         "through `env.step`, the path agents take (parse, rank, snippets, response)",
                 "rollgym": f"{_ms(raw_p50)} / {_ms(step_p50)}",
                 "peer": f"rank-bm25 ranking {_ms(peer_p50)}",
                 "ratio": f"{peer_p50 / raw_p50:.0f}x / {peer_p50 / step_p50:.0f}x"},
            ], command="python bench/bench_search.py")

    for env_id, kwargs in (("Search-v1", {}), ("Search-v1", {"difficulty": "expert"}), ("SearchQA-v1", {})):
        env = gym.make(env_id, **kwargs)
        env.reset(seed=0)  # world, corpus and index are built here, once per process
        resets, steps = [], []
        call = '<tool_call>{"name": "search", "arguments": {"query": "founded press", "k": 5}}</tool_call>'
        for seed in range(1, n_resets + 1):
            t = time.perf_counter()
            env.reset(seed=seed)
            resets.append(time.perf_counter() - t)
            t = time.perf_counter()
            env.step(call)
            steps.append(time.perf_counter() - t)
        r50, r95 = percentiles(resets)
        s50, _ = percentiles(steps)
        label = env_id + (f" ({kwargs['difficulty']})" if kwargs else "")
        print(f"{label}: reset p50 {_ms(r50)} p95 {_ms(r95)}; search step p50 {_ms(s50)}")


def env_steps(size: int, queries: list[str], turns: int = 20) -> list[float]:
    """Seconds of each ``env.step`` that calls the ``search`` tool with one query, in a Search-v1 env over the
    bench world (resets, every ``turns - 1`` steps, are not timed)."""
    env = gym.make("Search-v1", world_size=size, world_seed=0, max_turns=turns)
    env.reset(seed=0)  # builds the env's own copy of the world and index, once
    times = []
    for i, q in enumerate(queries):
        if i % (turns - 1) == 0:
            env.reset(seed=i)
        call = "<tool_call>" + json.dumps({"name": "search", "arguments": {"query": q, "k": 5}}) + "</tool_call>"
        t = time.perf_counter()
        env.step(call)
        times.append(time.perf_counter() - t)
    env.close()
    return times


if __name__ == "__main__":
    main()
