"""Quantized rollouts: generate with an int8 copy of the weights while the trainer keeps its float ones.

``TransformersBackend(model, tokenizer, quantize="int8")`` (or
``TransformersBackend.from_pretrained(..., quantize="int8")``) keeps ``model``
as it is, for the trainer, and decodes with a copy in which every
``nn.Linear`` (the attention and MLP projections and the output layer) is an
:class:`Int8Linear`: weights rounded to int8 with one scale per output channel
(symmetric, ``scale = max|w| / 127``), activations rounded to int8 with one
scale per token, an int8 x int8 -> int32 matrix product (``torch._int_mm``) and
the two scales applied to its result. Embeddings, norms, rotary embeddings and
the KV cache stay in float32. Activation scales are per token, so a row's
output never depends on what else is in the batch.

Why not ``torch.ao.quantization.quantize_dynamic``: it scales activations
per tensor, so one outlier token (a chat template's first token) flattens the
whole prefill; on SmolLM2-135M it moved the next-token distribution by a mean
KL of ~1.4 nats, against ~0.05 here. Weight-only int8 kernels on this CPU
(``_weight_int8pack_mm``) were slower than float32.

The copy is refreshed when the trained weights change: when the backend's
``policy_version`` differs from the copy's, or when any parameter of ``model``
was modified in place (optimiser steps, ``load_state_dict``) since the copy
was made (torch's per-tensor version counters). Memory: the int8 weights (a
quarter of the float ones) plus a float copy of everything that is not a
``Linear`` (embeddings, norms).

The rollouts' logprobs are the int8 model's, so they differ from what the
trainer recomputes in float32: :mod:`rollgym.train.mismatch` measures that per
step and ``GRPOConfig(tis_cap=...)`` corrects for it.

Example:
    >>> backend = TransformersBackend(trainer.model, tokenizer, quantize="int8")  # doctest: +SKIP
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from rollgym.core.errors import ConfigError

#: The values ``quantize=`` accepts (``None``: generate with the model's own weights).
QUANTIZE_MODES: tuple[str, ...] = ("int8",)


def check_quantize(value: Any) -> str | None:
    """``value`` if it is a supported ``quantize=`` setting, else a :class:`ConfigError` naming the choices."""
    if value is None or value in QUANTIZE_MODES:
        return value  # type: ignore[no-any-return]
    raise ConfigError(f"quantize must be None or one of {', '.join(map(repr, QUANTIZE_MODES))}, got {value!r}.")


class Int8Linear(torch.nn.Module):
    """A ``Linear`` with int8 weights (per output channel) and int8 activations (per token); see the module doc.

    Example:
        >>> lin = torch.nn.Linear(8, 4)
        >>> q = Int8Linear.from_linear(lin)
        >>> x = torch.randn(3, 8)
        >>> bool((q(x) - lin(x)).abs().max() < 0.1)
        True
    """

    weight_t: torch.Tensor
    scale: torch.Tensor

    def __init__(self, weight_t: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor | None) -> None:
        super().__init__()
        self.register_buffer("weight_t", weight_t)  # [in, out] int8
        self.register_buffer("scale", scale)  # [out] float32
        self.bias = bias

    @classmethod
    def from_linear(cls, linear: torch.nn.Linear) -> Int8Linear:
        """The int8 form of ``linear``'s current weights."""
        weight = linear.weight.detach().float()
        scale = weight.abs().amax(dim=1).clamp(min=1e-12) / 127.0
        weight_t = torch.round(weight / scale[:, None]).clamp(-127, 127).to(torch.int8).t()
        bias = None if linear.bias is None else linear.bias.detach().float().clone()
        return cls(weight_t, scale, bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        flat = x.reshape(-1, shape[-1]).float()
        x_scale = flat.abs().amax(dim=-1, keepdim=True).clamp(min=1e-12) / 127.0
        x_int8 = torch.round(flat / x_scale).clamp(-127, 127).to(torch.int8)
        out = torch._int_mm(x_int8, self.weight_t).float() * x_scale * self.scale
        if self.bias is not None:
            out = out + self.bias
        return out.reshape(*shape[:-1], out.shape[-1]).to(x.dtype)


def quantize_int8(model: Any) -> Any:
    """A copy of ``model`` whose every ``nn.Linear`` is an :class:`Int8Linear`; ``model`` is left as it is.

    Raises:
        ConfigError: the model is not on the CPU (the int8 kernels used are the CPU's).
    """
    device = next(model.parameters()).device
    if device.type != "cpu":
        raise ConfigError(f"quantize='int8' runs on the CPU only; the model is on {device}: load it with "
                          "device='cpu' or drop quantize.")
    if not hasattr(torch, "_int_mm"):  # pragma: no cover - depends on the torch version
        raise ConfigError("quantize='int8' needs torch >= 2.2 (torch._int_mm); upgrade torch or drop quantize.")
    # Share the Linear weights with the original while copying (they are replaced right after), copy the rest.
    memo: dict[int, Any] = {}
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            memo[id(module.weight)] = module.weight
            if module.bias is not None:
                memo[id(module.bias)] = module.bias
    tied = {id(p) for m in model.modules() if not isinstance(m, torch.nn.Linear) for p in m.parameters(recurse=False)}
    for key in tied & set(memo):  # a weight tied to an embedding (SmolLM2's output layer): the embedding is copied
        del memo[key]
    quantized = copy.deepcopy(model, memo)
    with torch.no_grad():
        for module in list(quantized.modules()):
            for name, child in list(module.named_children()):
                if isinstance(child, torch.nn.Linear):
                    setattr(module, name, Int8Linear.from_linear(child))
    quantized.float().eval()
    for param in quantized.parameters():
        param.requires_grad_(False)
    return quantized


def weights_fingerprint(model: Any) -> tuple[tuple[int, int], ...]:
    """Identity and in-place version counter of every parameter: it changes whenever the weights change."""
    return tuple((id(p), int(p._version)) for p in model.parameters())


class QuantizedRollouts:
    """The quantized copy a backend generates with, kept in step with the trained model.

    Args:
        model: The trained (float) model.
        mode: A :data:`QUANTIZE_MODES` value.
    """

    def __init__(self, model: Any, mode: str) -> None:
        self.mode = check_quantize(mode)
        self.source = model
        self.refreshes = 0
        self._copy: Any = None
        self._key: tuple[int, tuple[tuple[int, int], ...]] | None = None

    def model_for(self, policy_version: int) -> Any:
        """The quantized copy of the current weights, rebuilt if they changed since it was made."""
        key = (policy_version, weights_fingerprint(self.source))
        if self._copy is None or key != self._key:
            self._copy = quantize_int8(self.source)
            self._key = key
            self.refreshes += 1
        return self._copy

    @contextmanager
    def in_use(self, backend: Any) -> Iterator[None]:
        """Let ``backend.model`` be the quantized copy for the duration (the caller holds the backend's lock)."""
        trained = backend.model
        backend.model = self.model_for(int(backend.policy_version))
        try:
            yield
        finally:
            backend.model = trained
