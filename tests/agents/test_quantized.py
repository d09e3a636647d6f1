"""Quantized rollouts: an int8 copy generates, the float model stays the trainer's, the copy follows the weights."""

from __future__ import annotations

import asyncio

import pytest

from tests.conftest import require_module

require_module("torch")
require_module("transformers")
import torch  # noqa: E402

from rollgym.agents.backends.base import SamplingParams  # noqa: E402
from rollgym.agents.backends.hf import TransformersBackend  # noqa: E402
from rollgym.agents.backends.quantized import Int8Linear, QuantizedRollouts, quantize_int8  # noqa: E402
from rollgym.core.errors import ConfigError  # noqa: E402

PROMPT = [5, 17, 42, 99, 7]


@pytest.fixture
def float_model(tiny_model_dir):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny_model_dir)


def _sample(backend, n=4, seed=3):
    return asyncio.run(backend.generate([PROMPT], SamplingParams(max_tokens=12, n=n, seed=seed)))


def test_int8_rollouts_come_from_int8_weights_and_leave_the_float_model_alone(float_model, tiny_backend):
    backend = TransformersBackend(float_model, tiny_backend.tokenizer, quantize="int8")
    plain = TransformersBackend(float_model, tiny_backend.tokenizer)
    gens = _sample(backend)
    assert all(g.token_ids and len(g.logprobs) == len(g.token_ids) for g in gens)
    assert backend.model is float_model and isinstance(float_model.lm_head, torch.nn.Linear)
    generating = backend._quantized.model_for(backend.policy_version)
    linears = [m for m in generating.modules() if isinstance(m, torch.nn.Linear)]
    assert not linears and sum(isinstance(m, Int8Linear) for m in generating.modules()) == 2 * 7 + 1
    worst_float = worst_int8 = 0.0
    for g in gens:
        as_int8 = backend.logprobs_of(PROMPT, g.token_ids)  # the weights that sampled them
        as_float = plain.logprobs_of(PROMPT, g.token_ids)  # what a float trainer recomputes
        worst_int8 = max(worst_int8, *(abs(a - b) for a, b in zip(g.logprobs, as_int8)))
        worst_float = max(worst_float, *(abs(a - b) for a, b in zip(g.logprobs, as_float)))
    assert worst_int8 < 1e-4 < worst_float


def test_the_int8_copy_is_refreshed_when_the_weights_or_the_version_change(float_model, tiny_backend):
    backend = TransformersBackend(float_model, tiny_backend.tokenizer, quantize="int8")
    first = _sample(backend)
    assert backend._quantized.refreshes == 1
    assert [g.token_ids for g in _sample(backend)] == [g.token_ids for g in first]
    assert backend._quantized.refreshes == 1  # same weights: the copy is reused
    with torch.no_grad():
        float_model.lm_head.weight.mul_(3.0)  # an optimiser step changes parameters in place
    changed = _sample(backend)
    assert backend._quantized.refreshes == 2
    assert [g.logprobs for g in changed] != [g.logprobs for g in first]
    backend.policy_version = 1
    _sample(backend)
    assert backend._quantized.refreshes == 3


def test_int8_linear_is_close_to_the_float_layer_and_independent_of_the_batch():
    torch.manual_seed(0)
    linear = torch.nn.Linear(64, 48)
    q = Int8Linear.from_linear(linear)
    x = torch.randn(5, 64)
    x[2] *= 100.0  # an outlier row must not coarsen the others (per-token activation scales)
    with torch.no_grad():
        out, ref = q(x), linear(x)
        alone = q(x[:1])
    assert torch.equal(out[:1], alone)
    relative = (out - ref).abs().max(dim=-1).values / ref.abs().max(dim=-1).values
    assert float(relative.max()) < 0.03 and float((out - ref).abs().max()) > 0


def test_quantizing_copies_the_tied_embedding_instead_of_sharing_it(float_model):
    quantized = quantize_int8(float_model)
    assert quantized.model.embed_tokens.weight is not float_model.model.embed_tokens.weight
    assert torch.equal(quantized.model.embed_tokens.weight, float_model.model.embed_tokens.weight)
    with torch.no_grad():
        float_model.model.embed_tokens.weight.add_(1.0)
    assert not torch.equal(quantized.model.embed_tokens.weight, float_model.model.embed_tokens.weight)


def test_unsupported_settings_are_one_sentence_errors(float_model, tiny_backend, tiny_model_dir):
    with pytest.raises(ConfigError, match=r"^quantize must be None or one of 'int8', got 'int4'\.$"):
        TransformersBackend(float_model, tiny_backend.tokenizer, quantize="int4")
    with pytest.raises(ConfigError, match="cannot be combined"):
        TransformersBackend(float_model, tiny_backend.tokenizer, quantize="int8", draft_model=float_model)
    with pytest.raises(ConfigError, match="quantize must be"):
        QuantizedRollouts(float_model, "fp4")
    loaded = TransformersBackend.from_pretrained(str(tiny_model_dir), quantize="int8")
    assert loaded._quantized is not None and _sample(loaded, n=1)[0].token_ids


def test_the_prefix_cache_over_int8_rollouts_gives_the_same_tokens(float_model, tiny_backend):
    """quantize= and prefix_cache= together: the cache holds the int8 copy's keys, and follows its refresh."""
    plain = TransformersBackend(float_model, tiny_backend.tokenizer, quantize="int8")
    cached = TransformersBackend(float_model, tiny_backend.tokenizer, quantize="int8", prefix_cache=True)
    for _ in range(2):  # the second round reuses the kept prefix
        want, got = _sample(plain), _sample(cached)
        assert [g.token_ids for g in got] == [g.token_ids for g in want]
        assert max(abs(a - b) for w, g in zip(want, got) for a, b in zip(w.logprobs, g.logprobs)) < 1e-4
    assert cached.prefix_cache_stats()["reused_tokens"] > 0
    with torch.no_grad():
        float_model.lm_head.weight.mul_(3.0)
    assert [g.token_ids for g in _sample(cached)] == [g.token_ids for g in _sample(plain)]
