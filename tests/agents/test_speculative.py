"""Speculative decoding: greedy output is the target's own, sampled output has the target's distribution.

The distribution tests are chi-square tests against probabilities computed exactly from
the target's logits, each beside a deliberately broken acceptance rule that the same test
must reject, so a test that cannot fail would show up as a failing power check.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from rollgym.agents.backends import speculative  # noqa: E402
from rollgym.agents.backends.base import SamplingParams  # noqa: E402
from rollgym.agents.backends.hf import TransformersBackend  # noqa: E402
from rollgym.agents.backends.speculative import SpeculativeDecoder, processed_probs, verify  # noqa: E402
from rollgym.core.errors import ConfigError  # noqa: E402


def _chi_square_p(counts: list[int], probs: list[float]) -> float:
    """p-value of Pearson's chi-square for ``counts`` against ``probs`` (cells under 5 expected merged)."""
    n = sum(counts)
    cells: list[tuple[float, float]] = []
    small_obs = small_exp = 0.0
    for c, p in zip(counts, probs, strict=True):
        if n * p < 5:
            small_obs, small_exp = small_obs + c, small_exp + n * p
        else:
            cells.append((c, n * p))
    if small_exp > 0:
        cells.append((small_obs, small_exp))
    if small_exp == 0 and small_obs > 0:
        return 0.0  # mass where the target puts none
    stat = sum((o - e) ** 2 / e for o, e in cells)
    dof = len(cells) - 1
    # the chi-square survival function is the upper regularised incomplete gamma function
    return float(torch.special.gammaincc(torch.tensor(dof / 2, dtype=torch.float64),
                                         torch.tensor(stat / 2, dtype=torch.float64)))


# -- the rejection rule on its own ----------------------------------------------------------


def _one_round_counts(p: Any, q: Any, n: int, seed: int) -> list[int]:
    """First emitted token of ``n`` rounds with one draft token from ``q`` verified against ``p``."""
    generator = torch.Generator().manual_seed(seed)
    counts = [0] * p.shape[-1]
    probs = torch.stack([p, p])  # the row after the draft token is not reached by the first emitted token
    for _ in range(n):
        x = speculative._draw(torch, q, generator)
        emitted, _ = verify(torch, probs, [x], [q], generator)
        counts[emitted[0]] += 1
    return counts


P = torch.tensor([0.50, 0.25, 0.15, 0.10, 0.0], dtype=torch.float64)
Q = torch.tensor([0.10, 0.20, 0.20, 0.30, 0.20], dtype=torch.float64)  # mass where p has none, too


def test_one_round_emits_the_targets_distribution_whatever_the_draft() -> None:
    counts = _one_round_counts(P, Q, 6000, seed=1)
    assert counts[4] == 0  # never a token the target rules out
    assert _chi_square_p(counts, P.tolist()) > 1e-3


def test_a_rule_that_keeps_every_draft_token_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(speculative, "accept", lambda p_x, q_x, u: True)
    counts = _one_round_counts(P, Q, 6000, seed=1)
    assert _chi_square_p(counts, P.tolist()) < 1e-6


def test_a_rule_that_resamples_from_p_instead_of_the_residual_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    real_draw = speculative._draw

    def draw_ignoring_residual(torch_: Any, probs: Any, generator: Any) -> int:
        # the residual max(0, p - q) is the only distribution with a zero where p is 0.5 > q... replace it by p
        return real_draw(torch_, P if probs.sum() < 0.999 else probs, generator)

    monkeypatch.setattr(speculative, "_draw", draw_ignoring_residual)
    counts = _one_round_counts(P, Q, 6000, seed=1)
    assert _chi_square_p(counts, P.tolist()) < 1e-6


def test_identical_draft_and_target_keep_every_token() -> None:
    generator = torch.Generator().manual_seed(0)
    probs = torch.stack([P, P, P])
    emitted, kept = verify(torch, probs, [0, 1], [P, P], generator)
    assert kept == 2 and emitted[:2] == [0, 1] and len(emitted) == 3


def test_processed_probs_match_greedy_top_k_and_top_p() -> None:
    logits = torch.tensor([[2.0, 1.0, 0.5, -1.0]])
    greedy = processed_probs(torch, logits, SamplingParams(temperature=0.0))
    assert greedy.tolist() == [[1.0, 0.0, 0.0, 0.0]]
    top2 = processed_probs(torch, logits, SamplingParams(temperature=1.0, top_k=2))[0]
    assert top2[2] == 0 and top2[3] == 0 and math.isclose(float(top2.sum()), 1.0)
    nucleus = processed_probs(torch, logits, SamplingParams(temperature=1.0, top_p=0.5))[0]
    assert nucleus.tolist() == [1.0, 0.0, 0.0, 0.0]  # the top token alone holds more than half the mass


# -- end to end with the tiny model -----------------------------------------------------------


def _draft_like(model_dir: Path, seed: int, noise: float | None) -> Any:
    """A draft over the same tokenizer: the target with small noise on its weights, or fresh random weights."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in model.parameters():
            fresh = torch.randn(param.shape, generator=generator) * 0.05
            if noise is None:
                param.copy_(fresh)
            else:
                param.add_(fresh * noise / 0.05)
    return model.eval()


@pytest.fixture(scope="module")
def tiny_pair(tiny_model_dir: Path) -> tuple[TransformersBackend, Any, Any]:
    """The tiny target, a near copy of it (high acceptance) and an unrelated draft (near-zero acceptance)."""
    target = TransformersBackend.from_pretrained(str(tiny_model_dir))
    return target, _draft_like(tiny_model_dir, 1, noise=0.02), _draft_like(tiny_model_dir, 2, noise=None)


def _prompt(backend: TransformersBackend) -> list[int]:
    return backend.encode([{"role": "user", "content": "Use 3 5 7 to reach 22."}])


@pytest.mark.parametrize("which", ["near", "unrelated"])
@pytest.mark.parametrize("k", [1, 3, 5])
def test_greedy_output_is_the_targets_own(tiny_pair: Any, which: str, k: int) -> None:
    target, near, unrelated = tiny_pair
    prompts = [_prompt(target), target.encode("12 + 7 =")]
    sampling = SamplingParams(temperature=0.0, max_tokens=40)
    plain = target.generate_ids(prompts, sampling)
    decoder = SpeculativeDecoder(target, near if which == "near" else unrelated, draft_tokens=k)
    with torch.inference_mode():
        fast = decoder.decode(prompts, sampling, [None, None])
    for a, b in zip(plain, fast, strict=True):
        assert b.token_ids == a.token_ids
        assert b.finish_reason == a.finish_reason
        assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs, strict=True)) < 1e-4
        assert max(abs(x - y) for x, y in zip(a.entropies, b.entropies, strict=True)) < 1e-4
    stats = decoder.stats
    assert stats.emitted == sum(len(g.token_ids) for g in fast)
    if which == "near":
        assert stats.acceptance_rate > 0.5  # the near copy agrees on most tokens, so rounds are really kept
    assert stats.rounds < stats.emitted or which == "unrelated"


def _exact_sequence_probs(target: TransformersBackend, prompt: list[int], sampling: SamplingParams,
                          length: int) -> dict[tuple[int, ...], float]:
    """Every completion of up to ``length`` tokens with its probability under the target's processed distribution."""
    eos = set(target.eos_ids)
    out: dict[tuple[int, ...], float] = {}

    def walk(prefix: tuple[int, ...], mass: float) -> None:
        if len(prefix) == length or (prefix and prefix[-1] in eos):
            out[prefix] = out.get(prefix, 0.0) + mass
            return
        with torch.inference_mode():
            logits = target.model(input_ids=torch.tensor([prompt + list(prefix)])).logits[:, -1, :].float()
        probs = processed_probs(torch, logits, sampling)[0]
        for tok in torch.nonzero(probs).view(-1).tolist():
            walk((*prefix, tok), mass * float(probs[tok]))

    walk((), 1.0)
    return out


def _sampled_counts(decoder: SpeculativeDecoder, prompt: list[int], sampling: SamplingParams,
                    n: int) -> dict[tuple[int, ...], int]:
    counts: dict[tuple[int, ...], int] = {}
    with torch.inference_mode():
        for seed in range(n):
            gen = decoder.decode([prompt], sampling, [seed])[0]
            counts[tuple(gen.token_ids)] = counts.get(tuple(gen.token_ids), 0) + 1
    return counts


def _p_value(exact: dict[tuple[int, ...], float], counts: dict[tuple[int, ...], int]) -> float:
    keys = sorted(set(exact) | set(counts))
    return _chi_square_p([counts.get(key, 0) for key in keys], [exact.get(key, 0.0) for key in keys])


def test_sampled_sequences_have_the_targets_distribution(tiny_pair: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three tokens, two drafted per round, so caches are cut back after rejections mid-sequence."""
    target, near, unrelated = tiny_pair
    prompt = _prompt(target)
    sampling = SamplingParams(temperature=1.0, top_k=2, max_tokens=3)
    exact = _exact_sequence_probs(target, prompt, sampling, 3)
    assert math.isclose(sum(exact.values()), 1.0, rel_tol=1e-9)
    decoder = SpeculativeDecoder(target, near, draft_tokens=2)
    assert _p_value(exact, _sampled_counts(decoder, prompt, sampling, 600)) > 1e-3
    assert 0.2 < decoder.stats.acceptance_rate < 0.8  # kept and rejected draft tokens both shaped the sample

    # a draft that never agrees: every token comes from the residual, still the target's distribution
    assert _p_value(exact, _sampled_counts(SpeculativeDecoder(target, unrelated, 2), prompt, sampling, 200)) > 1e-3

    # the same test, with a rule that keeps every draft token, sees the draft's distribution instead
    monkeypatch.setattr(speculative, "accept", lambda p_x, q_x, u: True)
    assert _p_value(exact, _sampled_counts(SpeculativeDecoder(target, unrelated, 2), prompt, sampling, 200)) < 1e-6


def test_same_seed_gives_the_same_sampled_tokens(tiny_pair: Any) -> None:
    target, near, _ = tiny_pair
    decoder = SpeculativeDecoder(target, near, draft_tokens=3)
    sampling = SamplingParams(temperature=0.8, max_tokens=24)
    with torch.inference_mode():
        first = decoder.decode([_prompt(target)] * 2, sampling, [7, 8])
        again = decoder.decode([_prompt(target)] * 2, sampling, [7, 8])
    assert [g.token_ids for g in first] == [g.token_ids for g in again]
    assert first[0].token_ids != first[1].token_ids


def test_the_backend_switch_and_its_counts(tiny_model_dir: Path) -> None:
    backend = TransformersBackend.from_pretrained(str(tiny_model_dir), draft=str(tiny_model_dir), draft_tokens=3)
    plain = TransformersBackend.from_pretrained(str(tiny_model_dir))
    assert plain.speculation is None
    sampling = SamplingParams(temperature=0.0, max_tokens=20)
    prompt = [_prompt(backend)]
    assert backend.generate_ids(prompt, sampling)[0].token_ids == plain.generate_ids(prompt, sampling)[0].token_ids
    stats = backend.speculation
    assert stats is not None and stats.acceptance_rate == 1.0  # the draft is the target itself
    assert stats.tokens_per_round > 1.0
    stats.reset()
    assert stats.rounds == 0 and stats.acceptance_rate == 0.0


def test_a_draft_with_another_tokenizer_is_refused_in_one_sentence(tiny_model_dir: Path, tmp_path: Path) -> None:
    from rollgym.agents.backends.tiny import build_tiny_model

    other = build_tiny_model(tmp_path / "other", seed=5, vocab_size=300)
    with pytest.raises(ConfigError, match="another tokenizer"):
        TransformersBackend.from_pretrained(str(tiny_model_dir), draft=str(other))
    with pytest.raises(ConfigError, match="does not exist"):
        TransformersBackend.from_pretrained(str(tiny_model_dir), draft=str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match="at least 1"):
        TransformersBackend.from_pretrained(str(tiny_model_dir), draft=str(tiny_model_dir), draft_tokens=0)


# -- the real small model ---------------------------------------------------------------------


def test_smollm2_greedy_with_a_bfloat16_draft_of_itself_is_token_identical() -> None:
    from rollgym.agents.backends import catalog

    folder = catalog.model_dir("smollm2-135m-instruct")
    if not catalog.is_pulled(folder, catalog.KNOWN_MODELS["smollm2-135m-instruct"]):
        pytest.skip("SmolLM2-135M-Instruct is not pulled; run `rollgym models pull smollm2-135m-instruct`.")
    target = TransformersBackend.from_pretrained(str(folder))
    from transformers import AutoModelForCausalLM

    draft = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16)
    prompt = target.encode([{"role": "user", "content": "Write a Python function that returns the sum of a list."}])
    sampling = SamplingParams(temperature=0.0, max_tokens=48)
    plain = target.generate_ids([prompt], sampling)[0]
    decoder = SpeculativeDecoder(target, draft, draft_tokens=4)
    with torch.inference_mode():
        fast = decoder.decode([prompt], sampling, [None])[0]
    assert fast.token_ids == plain.token_ids
    assert decoder.stats.acceptance_rate > 0.6
    assert max(decoder.stats.per_round) == 4  # whole rounds kept
