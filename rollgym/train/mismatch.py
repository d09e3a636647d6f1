"""The train-inference mismatch: how far the rollout's logprobs are from the trainer's, on the sampled tokens.

A rollout records the logprob of every token it sampled under the weights that
sampled it (the behaviour policy); the trainer recomputes them with its own
forward pass. With the same weights, precision and kernels they agree to float
rounding; an int8 rollout model (:mod:`rollgym.agents.backends.quantized`),
another engine, or stale weights (partial rollouts) make them differ. Over the
trained tokens (loss mask 1), with ``d = logp_train - logp_behaviour``:

* ``mismatch_kl``: the mean of ``exp(d) - d - 1``, the k3 estimator of
  KL(behaviour || train) from tokens the behaviour policy sampled (unbiased when the
  tokens were drawn from the behaviour's raw distribution, i.e. temperature 1, no
  top-k/top-p; never negative);
* ``mismatch_max_ratio``: the largest ``exp(d)``, the importance ratio train / behaviour;
* ``mismatch_min_ratio``: the smallest ``exp(d)``;
* ``mismatch_abs_diff``: the mean ``|d|``.

:class:`GRPOTrainer <rollgym.train.grpo.GRPOTrainer>` reports them in every step's
statistics, measured before the update (the trainer's logprobs at the weights the
rollouts were meant to come from).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass
class Mismatch:
    """Running sums of the mismatch over micro-batches; :meth:`stats` gives the step's figures.

    Example:
        >>> import torch
        >>> m = Mismatch()
        >>> m.add(torch.log(torch.tensor([[0.5, 0.2]])), torch.log(torch.tensor([[0.5, 0.1]])), torch.ones(1, 2))
        >>> s = m.stats()
        >>> round(s["mismatch_max_ratio"], 6), round(s["mismatch_kl"], 4)   # (2 - log 2 - 1) / 2
        (2.0, 0.1534)
    """

    tokens: int = 0
    k3_sum: float = 0.0
    abs_sum: float = 0.0
    max_ratio: float = 0.0
    min_ratio: float = math.inf

    def add(self, train_logprobs: Any, behaviour_logprobs: Any, mask: Any) -> None:
        """Add ``[B, T]`` trainer and behaviour logprobs of the sampled tokens where ``mask`` is 1."""
        import torch

        with torch.no_grad():
            keep = mask.detach() > 0
            if not bool(keep.any()):
                return
            d = (train_logprobs.detach().double() - behaviour_logprobs.detach().double())[keep]
            self.tokens += int(d.numel())
            self.k3_sum += float((torch.exp(d) - d - 1.0).sum())
            self.abs_sum += float(d.abs().sum())
            self.max_ratio = max(self.max_ratio, float(torch.exp(d.max())))
            self.min_ratio = min(self.min_ratio, float(torch.exp(d.min())))

    def stats(self) -> dict[str, float | None]:
        """The step's ``mismatch_*`` figures (see the module docstring); None without tokens."""
        if not self.tokens:
            return dict.fromkeys(("mismatch_kl", "mismatch_max_ratio", "mismatch_min_ratio", "mismatch_abs_diff"))
        return {"mismatch_kl": self.k3_sum / self.tokens, "mismatch_max_ratio": self.max_ratio,
                "mismatch_min_ratio": self.min_ratio, "mismatch_abs_diff": self.abs_sum / self.tokens}
