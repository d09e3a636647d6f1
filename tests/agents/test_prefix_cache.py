"""The transformers backend's prefix cache gives the uncached path's tokens while prefilling less.

Every test runs the same calls through a plain backend and a cached one over the *same* model
object and compares tokens (exactly) and logprobs (within 1e-4): a cache that reused the wrong
keys and values (an off-by-one in the reused length or its placement, stale weights) changes
them. The counters (``prefix_cache_stats``) show that reuse really happened.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tests.conftest import require_module

require_module("torch")
require_module("transformers")

import torch  # noqa: E402

from rollgym.agents.backends.base import SamplingParams  # noqa: E402
from rollgym.agents.backends.hf import TransformersBackend  # noqa: E402
from rollgym.agents.backends.prefix_cache import PrefixStore, kv_bytes_per_token, refusal  # noqa: E402
from rollgym.agents.chat import ChatAgent  # noqa: E402
from rollgym.core.errors import ConfigError  # noqa: E402

REAL = "smollm2-135m-instruct"
GREEDY = SamplingParams(max_tokens=12, temperature=0.0)
SAMPLED = SamplingParams(max_tokens=12, temperature=1.0, seed=11)


def pair(folder: Path, **kwargs) -> tuple[TransformersBackend, TransformersBackend]:
    """A plain and a cached backend over one freshly loaded model (its own copy: tests may change it)."""
    plain = TransformersBackend.from_pretrained(str(folder))
    cached = TransformersBackend(plain.model, plain.tokenizer, prefix_cache=True, **kwargs)
    return plain, cached


def same(a, b) -> None:
    """Same tokens, same finish, logprobs within float tolerance."""
    assert [g.token_ids for g in a] == [g.token_ids for g in b]
    assert [g.finish_reason for g in a] == [g.finish_reason for g in b]
    diffs = [abs(x - y) for g, h in zip(a, b) for x, y in zip(g.logprobs, h.logprobs)]
    assert diffs and max(diffs) < 1e-4


def both(plain, cached, prompts, sampling):
    a = asyncio.run(plain.generate(prompts, sampling))
    b = asyncio.run(cached.generate(prompts, sampling))
    same(a, b)
    return b


def prompt_of(first: int, length: int, vocab: int = 390) -> list[int]:
    return [(first + 7 * i) % vocab + 5 for i in range(length)]


@pytest.mark.parametrize("sampling", [GREEDY, SAMPLED], ids=["greedy", "sampled"])
def test_group_prefills_its_prompt_once_and_reuses_it(tiny_model_dir, sampling):
    plain, cached = pair(tiny_model_dir)
    both(plain, cached, [prompt_of(1, 40)], sampling)  # the first call checks the model's cache type
    prompt = prompt_of(3, 300)
    group = dataclass_n(sampling, 8)
    both(plain, cached, [prompt], group)
    stats = cached.prefix_cache_stats()
    assert stats["shared_rows"] == 7  # one prefill, expanded to the 8 rows
    assert stats["prefilled_tokens"] == 40 + 300
    # the group again (a second step on the same task, or its samples played one at a time): a store hit
    both(plain, cached, [prompt], group)
    stats = cached.prefix_cache_stats()
    assert stats["hits"] >= 1 and stats["reused_tokens"] >= 299
    assert stats["prefilled_tokens"] == 40 + 300 + 1  # only the last prompt token is computed again


def dataclass_n(sampling: SamplingParams, n: int) -> SamplingParams:
    import dataclasses

    return dataclasses.replace(sampling, n=n)


def test_a_batch_mixing_hits_misses_and_lengths_matches_the_uncached_path(tiny_model_dir):
    plain, cached = pair(tiny_model_dir)
    base = prompt_of(2, 120)
    first = both(plain, cached, [base], GREEDY)[0]
    continued = base + first.token_ids + prompt_of(9, 15)  # the next turn: the stored sequence, then more
    batch = [continued, prompt_of(50, 30), base[:60] + prompt_of(4, 5), prompt_of(70, 7), base]
    both(plain, cached, batch, SAMPLED)
    stats = cached.prefix_cache_stats()
    assert stats["hits"] >= 3
    assert stats["reused_tokens"] > 0


def test_turns_of_an_episode_reuse_the_conversation_so_far(tiny_model_dir):
    plain, cached = pair(tiny_model_dir)
    agents = [ChatAgent(backend, SamplingParams(max_tokens=10)) for backend in (plain, cached)]
    observations = ["Reach 24 with 3 8 8.", "Not quite. Try again.", "Closer.", "Last chance."]
    info = {"system_prompt": "Answer briefly. " * 20}
    for agent in agents:
        agent.reset(seed=5)
    reused = []
    for obs in observations:
        replies = [agent.act(obs, info) for agent in agents]
        assert replies[0] == replies[1]
        reused.append(cached.prefix_cache_stats().get("reused_tokens", 0))
    records = [agent.token_record() for agent in agents]
    assert records[0].prompt_ids == records[1].prompt_ids
    assert records[0].completion_ids == records[1].completion_ids
    assert max(abs(x - y) for x, y in zip(records[0].logprobs, records[1].logprobs)) < 1e-4
    # every later turn reused all of the previous turn's context and all but the last sampled token
    for t in range(1, len(observations)):
        turn = agents[1].turns[t - 1]
        assert reused[t] - reused[t - 1] >= len(turn.prompt_ids) + len(turn.output_ids) - 1


def test_collector_switches_the_cache_on_with_one_argument(tiny_model_dir):
    from rollgym.rollout.collector import collect
    from rollgym.rollout.stream import collect_async

    plain, cached = pair(tiny_model_dir)
    sampling = SamplingParams(max_tokens=8)
    runs = []
    for backend, flag in ((plain, None), (cached, True)):
        backend.prefix_cache = False
        agent = ChatAgent(backend, sampling)
        runs.append(collect(agent, "Countdown-v0", n_tasks=2, group_size=3, seed=1, prefix_cache=flag))
    assert cached.prefix_cache and not plain.prefix_cache
    for g, h in zip(*runs):
        for a, b in zip(g.trajectories, h.trajectories):
            assert a.completion_ids == b.completion_ids and a.reward == b.reward
    stats = cached.prefix_cache_stats()
    assert stats["hits"] >= 4  # samples 2 and 3 of each group found the prompt
    streamed = collect_async(ChatAgent(cached, sampling), "Countdown-v0", n_tasks=2, group_size=3, seed=1,
                             prefix_cache=True)
    assert [t.completion_ids for g in streamed for t in g.trajectories] == [
        t.completion_ids for g in runs[1] for t in g.trajectories]


def test_collector_refuses_the_cache_for_an_agent_without_one():
    from rollgym.agents import OracleAgent
    from rollgym.rollout.collector import collect

    with pytest.raises(ConfigError, match="prefix_cache=True needs an agent on the transformers backend"):
        collect(OracleAgent(), "Countdown-v0", n_tasks=1, group_size=1, prefix_cache=True)
    collect(OracleAgent(), "Countdown-v0", n_tasks=1, group_size=1, prefix_cache=False)  # nothing to switch off
    from rollgym.agents.backends.openai_http import OpenAIBackend

    served = ChatAgent(OpenAIBackend("http://127.0.0.1:9/v1"))  # a server caches prefixes itself
    with pytest.raises(ConfigError, match=r"openai has no prefix cache .*--enable-prefix-caching"):
        collect(served, "Countdown-v0", n_tasks=1, group_size=1, prefix_cache=True)


def test_store_evicts_least_recently_used_leaves_within_its_bytes():
    def kv(n: int, fill: float) -> list[torch.Tensor]:
        return [torch.full((2, n, 4), fill)]  # one layer: 2 heads, n tokens, dim 4: 32 bytes a token

    store = PrefixStore(max_bytes=2 * (2 * 10 * 32))  # room for two 10-token entries
    store.put(list(range(10)), kv(10, 1.0), kv(10, 1.0))
    store.put(list(range(100, 110)), kv(10, 2.0), kv(10, 2.0))
    assert len(store) == 2 and store.nbytes == 2 * 640
    store.match(list(range(10)))  # now the most recently used
    store.put(list(range(200, 210)), kv(10, 3.0), kv(10, 3.0))
    assert store.evictions == 1 and store.nbytes <= store.max_bytes
    assert store.match(list(range(100, 110))) == (None, 0)  # the least recently used went
    entry, common = store.match([*list(range(10)), 7])
    assert common == 10
    keys, _ = store.kv(entry, 6)
    assert keys[0].shape == (2, 6, 4) and float(keys[0].sum()) == 2 * 6 * 4
    store.put(list(range(1000, 1100)), kv(100, 4.0), kv(100, 4.0))  # larger than the whole budget: not kept
    assert store.match(list(range(1000, 1100))) == (None, 0)
    with pytest.raises(ConfigError, match="prefix_cache_bytes must be an integer >= 0"):
        PrefixStore(max_bytes=-1)


def test_store_shares_a_prefix_between_its_continuations_and_keeps_it_while_they_live():
    def kv(ids: list[int]) -> list[torch.Tensor]:
        return [torch.tensor(ids, dtype=torch.float32).view(1, -1, 1)]

    store = PrefixStore(max_bytes=10_000)
    prompt = list(range(1, 11))
    store.put(prompt, kv(prompt), kv(prompt))
    for tail in ([50, 51], [60, 61, 62]):
        ids = prompt + tail
        store.put(ids, kv(ids), kv(ids))
    assert store.nbytes == 2 * 4 * (10 + 2 + 3)  # the prompt's keys and values once
    entry, common = store.match([*prompt, 60, 61, 99])
    assert common == 12
    keys, _values = store.kv(entry, common)
    assert keys[0].view(-1).tolist() == [*prompt, 60, 61]
    store.max_bytes = 2 * 4 * 12  # shrink: only leaves go, the prompt stays while a continuation does
    store.put([7], kv([7]), kv([7]))
    assert store.match(prompt)[1] == 10


def test_a_small_budget_evicts_and_stays_exact(tiny_model_dir):
    plain, _ = pair(tiny_model_dir)
    per_token = kv_bytes_per_token(plain.model)
    cached = TransformersBackend(plain.model, plain.tokenizer, prefix_cache=True, prefix_cache_bytes=150 * per_token)
    for first in (1, 2, 3, 1, 2, 3):
        both(plain, cached, [prompt_of(first, 100)], GREEDY)
        assert cached.prefix_cache_stats()["bytes"] <= 150 * per_token
    assert cached.prefix_cache_stats()["evictions"] >= 3


@pytest.mark.parametrize("change", ["optimizer_step", "load_state_dict", "in_place_data"])
def test_changed_weights_empty_the_cache(tiny_model_dir, change):
    plain, cached = pair(tiny_model_dir)
    model = plain.model
    prompt = prompt_of(5, 150)
    both(plain, cached, [prompt], GREEDY)
    both(plain, cached, [prompt], GREEDY)
    assert cached.prefix_cache_stats()["hits"] == 1
    if change == "optimizer_step":
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        loss = model(input_ids=torch.tensor([prompt]), labels=torch.tensor([prompt])).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    elif change == "load_state_dict":
        generator = torch.Generator().manual_seed(1)
        model.load_state_dict({k: v + 0.05 * torch.randn(v.shape, generator=generator)
                               for k, v in model.state_dict().items()})
    else:  # bypasses autograd's version counter: the sampled values still tell
        for p in model.parameters():
            p.data.mul_(1.5)
    after = both(plain, cached, [prompt], SAMPLED)
    assert cached.prefix_cache_stats()["invalidations"] == 1
    assert cached.prefix_cache_stats()["hits"] == 1  # nothing stale was reused
    assert after[0].token_ids


def test_sliding_window_models_are_refused_and_run_uncached(tmp_path):
    from transformers import AutoTokenizer, MistralConfig, MistralForCausalLM

    from rollgym.agents.backends.tiny import build_tiny_model

    folder = build_tiny_model(tmp_path / "tiny", seed=1)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    config = MistralConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, sliding_window=16,
                           eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(0)
    model = MistralForCausalLM(config)
    assert "DynamicSlidingWindowLayer" in (refusal(model) or "")
    from types import SimpleNamespace

    from transformers import Qwen2Config, Qwen2ForCausalLM

    qwen = Qwen2Config(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2)
    assert refusal(Qwen2ForCausalLM(qwen)) is None  # Qwen2 without use_sliding_window: full attention
    assert refusal(SimpleNamespace(config=SimpleNamespace(is_encoder_decoder=True))) == "it is an encoder-decoder model"
    plain = TransformersBackend(model, tokenizer)
    cached = TransformersBackend(model, tokenizer, prefix_cache=True)
    prompt = prompt_of(1, 60)
    for _ in range(2):
        both(plain, cached, [prompt], dataclass_n(GREEDY, 2))
    stats = cached.prefix_cache_stats()
    assert "sliding-window" in stats["refused"]
    assert stats["entries"] == 0 and stats["hits"] == 0


def test_turning_the_cache_off_frees_it(tiny_model_dir):
    from rollgym.agents.backends import make_backend

    cached = make_backend(str(tiny_model_dir), prefix_cache=True)
    assert cached.prefix_cache
    asyncio.run(cached.generate([prompt_of(1, 50)], GREEDY))
    assert cached.prefix_cache_stats()["entries"] >= 1
    cached.prefix_cache = False
    assert cached.prefix_cache_stats() == {}


@pytest.fixture(scope="module")
def real_model_dir() -> Path:
    from rollgym.agents.backends import catalog

    if catalog.is_pulled(catalog.model_dir(REAL), catalog.KNOWN_MODELS[REAL]):
        return catalog.model_dir(REAL)
    if not os.environ.get("ROLLGYM_REAL_MODEL"):
        pytest.skip(f"{REAL} is not cached and ROLLGYM_REAL_MODEL is unset (rollgym models pull {REAL})")
    return catalog.pull_model(REAL)


def test_real_model_group_and_next_turn_match_the_uncached_path(real_model_dir):
    plain, cached = pair(real_model_dir)
    tok = plain.tokenizer
    text = "Solve the puzzle step by step and put the result in <answer></answer>. " * 12
    prompt = plain.encode([{"role": "user", "content": text}])
    short = SamplingParams(max_tokens=8, temperature=0.0)
    first = both(plain, cached, [prompt], short)[0]
    both(plain, cached, [prompt], SamplingParams(max_tokens=8, temperature=0.8, seed=3, n=4))
    turn = prompt + first.token_ids + tok("\n<|im_start|>user\nTry again.<|im_end|>\n<|im_start|>assistant\n",
                                          add_special_tokens=False)["input_ids"]
    both(plain, cached, [turn], short)
    stats = cached.prefix_cache_stats()
    assert stats["shared_rows"] == 3 and stats["reused_tokens"] >= 2 * len(prompt) - 2
