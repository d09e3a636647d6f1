"""Teachers for distillation: another model, or the same model with privileged context.

A :class:`Teacher` scores the student's sampled rollouts. What it gives feeds three things
in :class:`~rollgym.train.grpo.GRPOTrainer` (:mod:`rollgym.train.loss` has the formulas):

- ``distill_reverse_kl``: the sampled-token reverse KL(student || teacher), from the teacher's
  logprob of each sampled token (on-policy distillation with the reverse KL, as in GKD);
- ``distill_forward_kl``: the token-level forward KL(teacher || student) over the teacher's
  top-k tokens plus one bucket for the rest (Search-E1's on-policy self-distillation objective);
  with a ``locate`` function it applies only to the tokens that function marks (CriPO's
  localized forward KL);
- ``teacher_credit``: the teacher-minus-student token credit of :mod:`rollgym.train.credit`.

Two kinds of teacher:

- another model (a larger or better-trained one with the same tokenizer):
  ``Teacher(big_model)``;
- the student itself given privileged context that the deployed policy never sees
  (Search-E1's self-distillation from a sibling trajectory, CriPO's criterion-injection
  teacher): ``Teacher(student, tokenizer, context=answer_context)`` or
  ``context=sibling_context``. The context is rendered as a system message with the
  tokenizer's chat template and put *before* the student's prompt, so the student's
  tokens are scored unchanged. Rows whose context function returns ``None`` get no
  teacher (their distillation terms are masked out).

``locate(traj, group)`` returns ``[start, end)`` token spans in the rollout's layout
(:func:`rollgym.train.credit.layout`) where the teacher applies, e.g. the tokens that
serve the criterion the context injected (CriPO); ``None`` means every token.

:func:`teacher_logprobs` and :func:`teacher_top_k` are the same computations on plain lists
and tensors, for a TRL or verl loss.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rollgym.rollout.types import RolloutGroup, Trajectory
from rollgym.train.credit import Span, layout_length
from rollgym.train.loss import TopK, top_k
from rollgym.train.sequences import Row, sequence_distributions, sequence_logprobs

ContextFn = Callable[[Trajectory, RolloutGroup], "str | None"]
LocateFn = Callable[[Trajectory, RolloutGroup], "Sequence[Span] | None"]


def answer_context(traj: Trajectory, group: RolloutGroup) -> str | None:
    """Privileged context: the task's reference answer (training only; the student never sees it)."""
    task = group.task
    if task is None or task.answer is None:
        return None
    answer = task.answer.get("text", task.answer) if isinstance(task.answer, dict) else task.answer
    return f"Privileged hint for this task (not shown to the student): a correct final answer is {answer}."


def _assistant_text(traj: Trajectory) -> str:
    return "\n".join(m["content"] for m in traj.messages if m.get("role") == "assistant")


def sibling_context(traj: Trajectory, group: RolloutGroup) -> str | None:
    """Privileged context: the shortest successful *other* rollout of the group (Search-E1's sibling trajectory)."""
    good = [t for t in group.usable() if t.traj_id != traj.traj_id and t.correct and _assistant_text(t)]
    if not good:
        return None
    best = min(good, key=lambda t: (len(t.completion_ids) or len(_assistant_text(t)), t.sample_idx))
    return f"Privileged reference (not shown to the student): a successful attempt at this task was:\n" \
           f"{_assistant_text(best)}"


class Teacher:
    """Teacher logprobs of the student's sampled tokens.

    Args:
        model: The teacher network (a transformers causal LM); may be the student itself.
        tokenizer: Needed with ``context`` (to render it); must be the student's tokenizer.
        context: ``context(traj, group) -> str | None``: privileged text for the teacher
            (:func:`answer_context`, :func:`sibling_context`, or your own).
        locate: ``locate(traj, group) -> spans | None``: the ``[start, end)`` token spans (in the
            rollout's layout) where the teacher applies; ``None`` (the function, or its answer)
            means every token. CriPO's localized forward KL: the spans of the injected criterion.
    """

    def __init__(self, model: Any, tokenizer: Any = None, *, context: ContextFn | None = None,
                 locate: LocateFn | None = None) -> None:
        if context is not None and tokenizer is None:
            from rollgym.core.errors import ConfigError

            raise ConfigError("A teacher with privileged context needs the tokenizer to render it.")
        self.model = model
        self.tokenizer = tokenizer
        self.context = context
        self.locate = locate

    def prefix(self, traj: Trajectory, group: RolloutGroup) -> list[int] | None:
        """Token ids put before the student's prompt for the teacher (``[]`` without context; ``None``: no teacher)."""
        if self.context is None:
            return []
        text = self.context(traj, group)
        if not text:
            return None
        return context_ids(self.tokenizer, text)

    def mask(self, traj: Trajectory, group: RolloutGroup) -> list[float] | None:
        """1.0 on the tokens (in the rollout's layout) where the teacher applies; ``None``: all of them."""
        spans = self.locate(traj, group) if self.locate is not None else None
        if spans is None:
            return None
        out = [0.0] * layout_length(traj)
        for start, end in spans:
            for i in range(max(0, start), min(end, len(out))):
                out[i] = 1.0
        return out


def context_ids(tokenizer: Any, text: str) -> list[int]:
    """``text`` as a system message of the tokenizer's chat template (plain tokens when it has none)."""
    if getattr(tokenizer, "chat_template", None):
        from rollgym.agents.backends.hf import render_chat_ids

        return render_chat_ids(tokenizer, [{"role": "system", "content": text}], add_generation_prompt=False)
    return list(tokenizer(text + "\n", add_special_tokens=False)["input_ids"])


def teacher_logprobs(model: Any, prompts: Sequence[Sequence[int]], completions: Sequence[Sequence[int]],
                     prefixes: Sequence[Sequence[int]] | None = None, pad_id: int = 0) -> Any:
    """``[batch, max completion]`` logprobs of each completion under ``model``, after ``prefix + prompt``.

    The plain-tensor form of :class:`Teacher` for other trainers: pass the student's prompt and
    completion ids (and, for a privileged teacher, :func:`context_ids` of the context as the prefix).
    Computed without gradients; positions past a completion's end are 0.
    """
    import torch

    with torch.no_grad():
        out, _, _ = sequence_logprobs(model, _rows(prompts, completions, prefixes), pad_id)
    return out


def teacher_top_k(model: Any, prompts: Sequence[Sequence[int]], completions: Sequence[Sequence[int]], k: int,
                  prefixes: Sequence[Sequence[int]] | None = None, pad_id: int = 0) -> TopK:
    """The teacher's ``k`` most likely next tokens at each completion position, for :func:`forward_kl_top_k`.

    Same arguments as :func:`teacher_logprobs`; computed without gradients. Pass the result with the
    student's ``[batch, tokens, vocab]`` log-probabilities (:func:`rollgym.train.sequences.sequence_distributions`)
    to :func:`rollgym.train.loss.forward_kl_top_k`.
    """
    import torch

    with torch.no_grad():
        dists, _, _, _ = sequence_distributions(model, _rows(prompts, completions, prefixes), pad_id)
    return top_k(dists, k)


def _rows(prompts: Sequence[Sequence[int]], completions: Sequence[Sequence[int]],
          prefixes: Sequence[Sequence[int]] | None) -> list[Row]:
    prefixes = prefixes or [[] for _ in prompts]
    return [Row(list(pre) + list(p), list(c), [1] * len(c), [0.0] * len(c), 0.0)
            for pre, p, c in zip(prefixes, prompts, completions)]
