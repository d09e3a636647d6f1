"""The pulled Qwen2.5-Coder-0.5B-Instruct: a checked folder that loads, decodes greedily, and shows the model its tools.

Runs when the model is in the cache (``rollgym models pull qwen2.5-coder-0.5b-instruct``) and skips otherwise
with the reason; it reads local files only (no hub, no registry).
"""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pytest

from rollgym.agents.backends import catalog

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

NAME = "qwen2.5-coder-0.5b-instruct"


@pytest.fixture(scope="module")
def qwen() -> Path:
    folder = catalog.model_dir(NAME)
    if not (folder / catalog.MANIFEST).exists():
        pytest.skip(f"{NAME} is not cached (rollgym models pull {NAME})")
    catalog.verify_pulled(folder, catalog.KNOWN_MODELS[NAME])  # a cached folder that fails its hashes is a failure
    return folder


@pytest.fixture(scope="module")
def backend(qwen: Path):
    from rollgym.agents.backends import make_backend

    return make_backend(NAME)


def test_qwen_is_a_24_layer_qwen2_with_chatml(qwen):
    config = transformers.AutoConfig.from_pretrained(qwen)
    assert config.model_type == "qwen2" and config.num_hidden_layers == 24 and config.vocab_size == 151936
    tokenizer = transformers.AutoTokenizer.from_pretrained(qwen)
    assert tokenizer.eos_token == "<|im_end|>"


def test_qwen_template_shows_the_model_every_tool_of_an_env(qwen):
    import gymnasium as gym

    import rollgym  # noqa: F401  (registers the env ids)
    from rollgym.agents.backends.hf import render_chat_text

    env = gym.make("Search-v1")
    observation, info = env.reset(seed=0)
    tools = info["tools"]
    tokenizer = transformers.AutoTokenizer.from_pretrained(qwen)
    messages = [{"role": "system", "content": info.get("system_prompt") or "Answer the question."},
                {"role": "user", "content": observation}]
    text = render_chat_text(tokenizer, messages, tools)
    assert text.startswith("<|im_start|>system\n") and text.endswith("<|im_start|>assistant\n")
    assert "<tools>" in text and "<tool_call>" in text  # Qwen's ChatML-with-tools block
    for tool in tools:
        assert f'"name": "{tool["function"]["name"]}"' in text
    assert "<tools>" not in render_chat_text(tokenizer, messages, None)


def test_qwen_decodes_a_few_tokens_greedily(backend):
    from rollgym.agents.backends import SamplingParams

    prompt = backend.encode([{"role": "user", "content": "What is 2 + 3? Reply with the number only."}])
    sampling = SamplingParams(max_tokens=4, temperature=0.0)
    first, again = (asyncio.run(backend.generate([prompt], sampling))[0] for _ in range(2))
    assert 0 < len(first.token_ids) <= 4 and first.token_ids == again.token_ids
    assert all(math.isfinite(lp) and lp <= 0 for lp in first.logprobs)
    assert "5" in first.text
