"""A small, readable GRPO trainer over transformers models, consuming :class:`RolloutGroup`\\ s.

One :meth:`GRPOTrainer.step` takes a batch of groups, computes group-relative
advantages, turns every usable rollout into training rows (one row for a
prefix-preserving episode, one per turn otherwise), and makes one optimiser
update with PPO-style clipping against the behaviour logprobs the rollout
recorded, an optional KL penalty to a frozen reference model, token loss masks
(env tokens never get gradient) and gradient accumulation over micro-batches.
The micro-batch losses are scaled so that accumulation gives exactly the
full-batch loss. Rollouts carried over from earlier steps (partial rollouts,
:mod:`rollgym.rollout.partial`) train against the logprobs of the version that
really sampled each token; the step's statistics report how stale they were
(``stale_token_fraction``, ``max_token_staleness``).
Every step also reports the train-inference mismatch on the trained tokens
(``mismatch_kl``, ``mismatch_max_ratio``, ``mismatch_min_ratio``, ``mismatch_abs_diff``,
:mod:`rollgym.train.mismatch`), and ``GRPOConfig(tis_cap=C)`` corrects for it with
truncated importance weights (:mod:`rollgym.train.loss`).

Checkpoints hold the model, the optimiser, the step counter and the RNG state,
so a run resumed from a checkpoint continues exactly as if never stopped. Logs
are JSONL, one line per step; :func:`plot_log` draws PNG learning curves.

Token-level credit: ``step(groups, token_advantages=...)`` or a ``credit=`` producer
(:mod:`rollgym.train.credit`: turn-level, per-criterion, broadcast) gives every token its
own advantage. With a ``teacher=`` (:mod:`rollgym.train.teacher`: another model, or the
student with privileged context), ``GRPOConfig(distill_reverse_kl=...)`` adds the
sampled-token reverse KL to the teacher, ``distill_forward_kl=...`` the forward KL over the
teacher's top-``distill_top_k`` tokens (Search-E1; CriPO's localized variant with a
``Teacher(locate=...)``), and ``teacher_credit="add" | "reweight"`` reshapes the token
advantages by the teacher-minus-student logprob difference.

Self-play groups (:mod:`rollgym.rollout.selfplay`, every seat's trajectory with its
``info["role"]``): ``GRPOConfig(advantage="per_role")`` centres each role on its own
members of the group, ``advantage="rae"`` uses SPIRAL's role-conditioned advantages
(:func:`rollgym.train.advantages.role_advantages`, one running baseline per game and
role, kept in the checkpoint).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rollgym.core.agent import Agent
from rollgym.core.config import check_choice, check_int, check_number
from rollgym.core.deprecation import renamed
from rollgym.core.errors import ConfigError
from rollgym.core.io import atomic_path
from rollgym.rollout.selfplay import split_by_role
from rollgym.rollout.types import RolloutGroup, Trajectory
from rollgym.train.advantages import RoleBaselines, Scale, group_advantages, role_advantages, zero_variance
from rollgym.train.credit import TokenAdvantages, layout, teacher_credit_tensor
from rollgym.train.echo import confidence_clip_high
from rollgym.train.figures import save_figure
from rollgym.train.loss import Aggregation, TopK, forward_kl_top_k, grpo_loss, top_k
from rollgym.train.mismatch import Mismatch
from rollgym.train.rollouts import collect_groups
from rollgym.train.sequences import Row, sequence_distributions, sequence_logprobs

if TYPE_CHECKING:
    from rollgym.rollout.distributed import RayWorkers
    from rollgym.train.teacher import Teacher

#: The advantage estimators of :class:`GRPOConfig`.
ADVANTAGES: tuple[str, ...] = ("group", "per_role", "rae")
TEACHER_CREDITS: tuple[str, ...] = ("none", "add", "reweight")
SCALES: tuple[str, ...] = ("group", "batch", "none")
AGGREGATIONS: tuple[str, ...] = ("token", "sequence")

CreditFn = Callable[[Sequence[RolloutGroup], dict[str, float]], TokenAdvantages]


@dataclass(frozen=True)
class GRPOConfig:
    """Settings of :class:`GRPOTrainer`.

    Attributes:
        learning_rate: AdamW learning rate.
        scale: Advantage scaling: ``"group"`` (GRPO), ``"batch"``, or ``"none"`` (Dr. GRPO, mean only).
        by_source: Normalise on-policy and external rollouts separately within a group.
        clip_low, clip_high: PPO clip range ``[1 - clip_low, 1 + clip_high]``.
        beta: KL weight to the reference model (0 disables it and the reference model).
        aggregation: ``"token"`` or ``"sequence"`` loss averaging.
        micro_batch_size: Rows per forward pass; gradients accumulate over micro-batches.
        max_grad_norm: Gradient clipping norm (0 disables).
        drop_zero_variance: Skip groups whose rewards are all equal (dynamic sampling).
        skip_idle_steps: Skip the optimiser update of a step with no learning signal: every advantage 0 and no
            KL, distillation or teacher-credit term. Off by default (the committed experiments ran without it).
            With it off, AdamW still steps on a zero gradient, and its momentum from earlier steps keeps
            moving the weights (``tests/train/test_grpo_idle_steps.py`` shows both).
        weight_decay: AdamW weight decay.
        seed: Seeds torch for the trainer's own randomness.
        distill_reverse_kl: Weight of the sampled-token reverse KL(student || teacher) term
            (on-policy distillation with the reverse KL; needs a ``teacher``; 0 disables it).
        distill_forward_kl: Weight of the forward KL(teacher || student) over the teacher's top-k
            tokens plus a bucket for the rest (Search-E1; localized by ``Teacher(locate=...)``, CriPO).
        distill_top_k: The ``k`` of the forward KL (the vocabulary size makes it exact).
        distill_coef: Deprecated name of ``distill_reverse_kl``.
        teacher_credit: ``"none"``, ``"add"`` or ``"reweight"``: reshape token advantages by the
            teacher-minus-student logprob difference (:func:`rollgym.train.credit.teacher_credit_tensor`).
        teacher_credit_coef, teacher_credit_bound: Its scale and (for ``"reweight"``) clip.
        advantage: ``"group"`` (every member of a group against the group), ``"per_role"`` (self-play:
            each ``info["role"]`` against its own members of the group) or ``"rae"`` (SPIRAL's
            role-conditioned advantage estimation: a running baseline per game and role; ``scale``
            and ``by_source`` do not apply).
        rae_decay: The decay (SPIRAL's alpha) of the ``"rae"`` baselines, in [0, 1).
        tis_cap: Truncated importance sampling for rollouts sampled by other weights than the trainer's
            (int8 rollouts, another engine): each token's policy-gradient term is weighted by
            ``min(exp(logp_train - logp_behaviour), tis_cap)`` (detached) and the PPO ratio is taken against
            the trainer's own logprobs (:mod:`rollgym.train.loss`); ``None`` (default) disables it; 2.0 is
            a common choice.
        confidence_clip: ECHO's confidence-adaptive clipping, ``kappa`` in [0, 1): each row's upper clip
            becomes ``clip_high * (1 - kappa * c)``, ``c`` the row's confidence (the geometric-mean
            behaviour probability of its tokens; :func:`rollgym.train.echo.confidence_clip_high`). 0 is off.
    """

    learning_rate: float = 1e-5
    scale: Scale = "group"
    by_source: bool = False
    clip_low: float = 0.2
    clip_high: float = 0.2
    beta: float = 0.0
    aggregation: Aggregation = "token"
    micro_batch_size: int = 8
    max_grad_norm: float = 1.0
    drop_zero_variance: bool = False
    weight_decay: float = 0.0
    seed: int = 0
    distill_reverse_kl: float = 0.0
    distill_forward_kl: float = 0.0
    distill_top_k: int = 32
    teacher_credit: str = "none"
    teacher_credit_coef: float = 1.0
    teacher_credit_bound: float = 0.5
    distill_coef: float | None = None
    advantage: str = "group"
    rae_decay: float = 0.95
    tis_cap: float | None = None
    confidence_clip: float = 0.0
    skip_idle_steps: bool = False

    def __post_init__(self) -> None:
        check_number("tis_cap", self.tis_cap, above=0, allow_none=True)
        check_choice("advantage", self.advantage, ADVANTAGES)
        check_number("rae_decay", self.rae_decay, 0, below=1)
        if self.distill_coef is not None:
            renamed("GRPOConfig", "distill_coef", "distill_reverse_kl", stacklevel=4)
            if self.distill_reverse_kl not in (0.0, self.distill_coef):
                raise ConfigError("Pass distill_reverse_kl only (distill_coef is its old name).")
            object.__setattr__(self, "distill_reverse_kl", self.distill_coef)
            object.__setattr__(self, "distill_coef", None)
        check_number("distill_reverse_kl", self.distill_reverse_kl, 0)
        check_number("distill_forward_kl", self.distill_forward_kl, 0)
        check_int("distill_top_k", self.distill_top_k, 1)
        check_choice("teacher_credit", self.teacher_credit, TEACHER_CREDITS)
        check_number("confidence_clip", self.confidence_clip, 0, below=1)
        check_number("learning_rate", self.learning_rate, above=0)
        check_int("micro_batch_size", self.micro_batch_size, 1)
        check_number("clip_low", self.clip_low, 0, below=1)
        check_number("clip_high", self.clip_high, 0)
        check_choice("scale", self.scale, SCALES)
        check_choice("aggregation", self.aggregation, AGGREGATIONS)


def rows_from_groups(groups: Sequence[RolloutGroup], advantages: dict[str, float],
                     token_advantages: TokenAdvantages | None = None, teacher: Teacher | None = None) -> list[Row]:
    """Training rows of every rollout that has an advantage and tokens.

    ``token_advantages`` (per rollout, in :func:`rollgym.train.credit.layout`) are sliced onto the rows;
    with a ``teacher``, each row records the token ids its teacher sees before the prompt and the
    tokens the teacher applies to.
    """
    rows: list[Row] = []
    for group in groups:
        for traj in group.usable():
            if traj.traj_id not in advantages:
                continue
            prefix = teacher.prefix(traj, group) if teacher is not None else None
            where = teacher.mask(traj, group) if teacher is not None and prefix is not None else None
            tokens = token_advantages.get(traj.traj_id) if token_advantages is not None else None
            rows.extend(_rows_of(traj, advantages[traj.traj_id], tokens, prefix, where))
    return rows


def _rows_of(traj: Trajectory, advantage: float, tokens: list[float] | None = None,
             prefix: list[int] | None = None, where: list[float] | None = None) -> list[Row]:
    if traj.metrics.get("per_turn_rows"):
        rows = []
        # a branch's shared turns are trained in its parent, and so is the prefix it kept of the next one
        shared, kept = int(traj.metrics.get("shared_turns", 0)), int(traj.metrics.get("shared_prefix", 0))
        for i, (t, (start, n, _)) in enumerate(zip(traj.turns, layout(traj))):
            if not t.output_ids or i < shared:
                continue
            mask = [0] * min(kept, n) + [1] * max(0, n - kept) if i == shared and kept else [1] * n
            rows.append(Row(list(t.prompt_ids), list(t.output_ids), mask,
                            list(t.output_logprobs) or [0.0] * n, advantage, traj.source,
                            None if tokens is None else _fit(tokens[start : start + n], n), prefix, traj.traj_id,
                            None if where is None else _fit(where[start : start + n], n)))
        return rows
    if not traj.completion_ids:
        return []
    n = len(traj.completion_ids)
    return [Row(list(traj.prompt_ids), list(traj.completion_ids), list(traj.loss_mask), list(traj.logprobs),
                advantage, traj.source, None if tokens is None else _fit(tokens, n), prefix, traj.traj_id,
                None if where is None else _fit(where, n))]


def _fit(values: Sequence[float], n: int) -> list[float]:
    return list(values[:n]) + [0.0] * max(0, n - len(values))


def token_staleness(groups: Sequence[RolloutGroup], current: int) -> dict[str, Any]:
    """How far behind ``current`` the sampled tokens of usable rollouts are (partial rollouts carry old ones).

    Returns ``stale_token_fraction`` (sampled tokens from a version before ``current``) and
    ``max_token_staleness`` (versions behind, at worst); tokens of unknown version are left out.

    Example:
        >>> from rollgym.rollout.types import Turn
        >>> traj = Trajectory("t", "g", 0, "E-v0", "t", 0, turns=[Turn(output_ids=[1, 2, 3, 4], policy_version=3,
        ...                                                        output_versions=[3, 3, 4, 4])])
        >>> token_staleness([RolloutGroup("g", None, 1, [traj])], current=4)
        {'stale_token_fraction': 0.5, 'max_token_staleness': 1}
    """
    stale = counted = worst = 0
    for group in groups:
        for traj in group.usable():
            for turn in traj.turns:
                versions = turn.token_versions()
                counted += len(versions)
                stale += sum(1 for v in versions if v < current)
                worst = max([worst, *(current - v for v in versions)])
    return {"stale_token_fraction": stale / counted if counted else 0.0, "max_token_staleness": worst}


class GRPOTrainer:
    """Train ``model`` with GRPO on rollout groups; see the module docstring.

    Args:
        model: A transformers causal LM (it may be shared with a :class:`TransformersBackend`,
            which then samples from the updated weights).
        tokenizer: Its tokenizer (for the pad id).
        config: :class:`GRPOConfig`.
        ref_model: A frozen reference model for the KL term (needed when ``config.beta > 0``).
        log_path: JSONL file that receives one line per step.
        teacher: A :class:`~rollgym.train.teacher.Teacher` for ``distill_coef`` and ``teacher_credit``.
        credit: A token-credit producer ``credit(groups, advantages) -> TokenAdvantages``
            (e.g. ``lambda g, a: turn_advantages(g)``); ``step(token_advantages=...)`` overrides it.
    """

    def __init__(self, model: Any, tokenizer: Any, config: GRPOConfig | None = None, *, ref_model: Any = None,
                 log_path: str | Path | None = None, teacher: Teacher | None = None,
                 credit: CreditFn | None = None) -> None:
        import torch

        self.config = config or GRPOConfig()
        if self.config.beta > 0 and ref_model is None:
            raise ConfigError("beta > 0 needs a ref_model (a frozen copy of the starting model).")
        cfg = self.config
        if (cfg.distill_reverse_kl > 0 or cfg.distill_forward_kl > 0 or cfg.teacher_credit != "none") \
                and teacher is None:
            raise ConfigError("distill_reverse_kl, distill_forward_kl and teacher_credit need a teacher=Teacher(...) "
                              "(another model, or the student with privileged context).")
        self.teacher = teacher
        self.credit = credit
        torch.manual_seed(self.config.seed)
        self.model = model
        self.ref_model = ref_model.eval() if ref_model is not None else None
        self.tokenizer = tokenizer
        pad = tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else (tokenizer.eos_token_id or 0))
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=self.config.learning_rate,
                                           weight_decay=self.config.weight_decay)
        self.global_step = 0
        self.log_path = Path(log_path) if log_path else None
        self.role_baselines = RoleBaselines(decay=self.config.rae_decay)

    def advantages(self, groups: Sequence[RolloutGroup]) -> dict[str, float]:
        """The scalar advantage of every usable rollout, by ``config.advantage`` (``"rae"`` updates its baselines)."""
        cfg = self.config
        if cfg.advantage == "rae":
            return role_advantages(groups, self.role_baselines)
        if cfg.advantage == "per_role":
            groups = split_by_role(groups)
        return group_advantages(groups, scale=cfg.scale, by_source=cfg.by_source)

    @property
    def policy_version(self) -> int:
        """How many updates the weights have had."""
        return self.global_step

    def rollout_step(self, agent_factory: Callable[[], Agent], env_id: str, n_tasks: int, group_size: int, *,
                     seed: int = 0, ray: bool | str | RayWorkers = False, **collect_kwargs: Any
                     ) -> tuple[list[RolloutGroup], dict[str, Any]]:
        """Collect groups with :func:`collect_groups` (here, or on Ray with ``ray=True``, a cluster address, or
        a :class:`~rollgym.rollout.distributed.RayWorkers` kept for the whole loop), then make one :meth:`step`
        on them; returns the groups and the step's statistics.

        Example:
            >>> groups, stats = trainer.rollout_step(agent_factory, "Countdown-v0", 8, 4, seed=step,
            ...                                      ray="10.0.0.1:6379")  # doctest: +SKIP
        """
        groups = collect_groups(agent_factory, env_id, n_tasks, group_size, seed=seed, ray=ray, **collect_kwargs)
        return groups, self.step(groups)

    def step(self, groups: Sequence[RolloutGroup], *, token_advantages: TokenAdvantages | None = None
             ) -> dict[str, Any]:
        """One optimiser update on ``groups``; returns the step's statistics.

        ``token_advantages`` (per rollout, see :mod:`rollgym.train.credit`) replace the broadcast
        scalar advantages; rollouts missing from it keep their scalar advantage.
        """
        import torch

        started = time.perf_counter()
        kept = [g for g in groups if not (self.config.drop_zero_variance and zero_variance(g))]
        advantages = self.advantages(kept)
        if token_advantages is None and self.credit is not None:
            token_advantages = self.credit(kept, advantages)
        rows = [r for r in rows_from_groups(kept, advantages, token_advantages, self.teacher) if any(r.loss_mask)]
        rewards = [t.reward for g in groups for t in g.usable() if t.reward is not None]
        stats: dict[str, Any] = {
            "step": self.global_step, "groups": len(groups), "groups_kept": len(kept), "rows": len(rows),
            "reward_mean": float(sum(rewards) / len(rewards)) if rewards else None,
            **token_staleness(kept, self.global_step),
        }
        if rows and self.idle(rows):
            stats["skipped"] = "no signal"
            rows = []
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        total_tokens = sum(sum(r.loss_mask) for r in rows)
        totals = {"loss": 0.0, "clip_fraction": 0.0, "kl": 0.0, "distill": 0.0, "reverse_kl": 0.0, "forward_kl": 0.0,
                  "tis_weight": 0.0, "tis_truncated": 0.0}
        mismatch = Mismatch()
        size = self.config.micro_batch_size
        cfg = self.config
        for start in range(0, len(rows), size):
            chunk = rows[start : start + size]
            forward = cfg.distill_forward_kl > 0
            if forward:
                dists, new, old, mask = sequence_distributions(self.model, chunk, self.pad_id)
            else:
                new, old, mask = sequence_logprobs(self.model, chunk, self.pad_id)
            mismatch.add(new, old, mask)  # before the update: the trainer's logprobs at the rollouts' weights
            ref = None
            if self.ref_model is not None and cfg.beta > 0:
                with torch.no_grad():
                    ref, _, _ = sequence_logprobs(self.ref_model, chunk, self.pad_id)
            adv = self._advantages(chunk, new.shape[1])
            teacher_lp = where = forward_kl = None
            if self.teacher is not None:
                teacher_lp, where, teacher_top = self._teacher_logprobs(chunk, new.shape[1], forward)
                if teacher_top is not None:
                    forward_kl = forward_kl_top_k(dists, teacher_top)
                if cfg.teacher_credit != "none":
                    adv = teacher_credit_tensor(adv, old, teacher_lp, mask * where,
                                                mode=cfg.teacher_credit, coef=cfg.teacher_credit_coef,
                                                bound=cfg.teacher_credit_bound)
            clip_high: Any = cfg.clip_high
            if cfg.confidence_clip > 0:
                clip_high = confidence_clip_high(old, mask, cfg.clip_high, cfg.confidence_clip)
            loss, part = grpo_loss(new, old, adv, mask, ref_logprobs=ref, clip_low=cfg.clip_low,
                                   clip_high=clip_high, beta=cfg.beta, aggregation=cfg.aggregation,
                                   teacher_logprobs=teacher_lp, distill_reverse_kl=cfg.distill_reverse_kl,
                                   distill_mask=where, forward_kl=forward_kl,
                                   distill_forward_kl=cfg.distill_forward_kl, tis_cap=cfg.tis_cap)
            weight = (part.tokens / max(total_tokens, 1)) if self.config.aggregation == "token" else (
                len(chunk) / len(rows))
            (loss * weight).backward()
            for key in totals:
                totals[key] += getattr(part, key) * weight
        if rows:
            if self.config.max_grad_norm > 0:
                stats["grad_norm"] = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(),
                                                                           self.config.max_grad_norm))
            self.optimizer.step()
        self.global_step += 1
        self.model.eval()
        if cfg.tis_cap is None:
            del totals["tis_weight"], totals["tis_truncated"]
        stats.update(totals, **mismatch.stats(), tokens=total_tokens, seconds=time.perf_counter() - started)
        self.log(stats)
        return stats

    def idle(self, rows: Sequence[Row]) -> bool:
        """Whether ``skip_idle_steps`` skips an update on ``rows``: no advantage and no term that learns without one."""
        cfg = self.config
        if not cfg.skip_idle_steps or cfg.beta > 0 or cfg.distill_reverse_kl > 0 or cfg.distill_forward_kl > 0:
            return False
        if self.teacher is not None and cfg.teacher_credit != "none":
            return False
        return all(r.advantage == 0 and not any(r.token_advantages or ()) for r in rows)

    def _advantages(self, chunk: Sequence[Row], width: int) -> Any:
        """``[B]`` scalar advantages, or ``[B, T]`` when any row carries token advantages."""
        import torch

        if all(r.token_advantages is None for r in chunk):
            return torch.tensor([r.advantage for r in chunk], dtype=torch.float32)
        out = torch.zeros((len(chunk), width), dtype=torch.float32)
        for i, r in enumerate(chunk):
            values = r.token_advantages if r.token_advantages is not None else [r.advantage] * len(r.completion_ids)
            out[i, : len(values)] = torch.tensor(values, dtype=torch.float32)
        return out

    def _teacher_logprobs(self, chunk: Sequence[Row], width: int, forward: bool) -> tuple[Any, Any, TopK | None]:
        """Teacher logprobs ``[B, T]`` of the rows' tokens, where the teacher applies ``[B, T]`` (0 on rows
        without a teacher and outside a ``locate`` span), and (with ``forward``) its top-k at every position."""
        import torch

        assert self.teacher is not None
        where = torch.zeros((len(chunk), width), dtype=torch.float32)
        for i, r in enumerate(chunk):
            if r.teacher_prefix is not None:
                marked = r.teacher_mask if r.teacher_mask is not None else [1.0] * len(r.completion_ids)
                where[i, : len(marked)] = torch.tensor(marked, dtype=torch.float32)
        shifted = [dataclasses.replace(r, prompt_ids=list(r.teacher_prefix or []) + r.prompt_ids) for r in chunk]
        was_training = self.teacher.model.training
        self.teacher.model.eval()
        top = None
        with torch.no_grad():
            if forward:
                dists, lp, _, _ = sequence_distributions(self.teacher.model, shifted, self.pad_id)
                top = top_k(dists, self.config.distill_top_k)
            else:
                lp, _, _ = sequence_logprobs(self.teacher.model, shifted, self.pad_id)
        if was_training:
            self.teacher.model.train()
        out = torch.zeros((len(chunk), width), dtype=torch.float32)
        out[:, : lp.shape[1]] = lp
        return out, where, top

    def log(self, record: dict[str, Any]) -> None:
        """Append one JSON line to the log file, if there is one."""
        if self.log_path is None:
            return
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")

    # -- checkpoints ------------------------------------------------------------
    def save_checkpoint(self, path: str | Path, extra: dict[str, Any] | None = None) -> Path:
        """Write model, optimiser, step and RNG state to ``path`` (atomically)."""
        import torch

        path = Path(path)
        state = {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "global_step": self.global_step,
            "torch_rng": torch.get_rng_state(),
            "config": dataclasses.asdict(self.config),
            "role_baselines": self.role_baselines.to_dict(),
            "extra": extra or {},
        }
        with atomic_path(path) as tmp:
            torch.save(state, tmp)
        return path

    def load_checkpoint(self, path: str | Path) -> dict[str, Any]:
        """Restore a checkpoint written by :meth:`save_checkpoint`; returns its ``extra`` dict."""
        import torch

        state = torch.load(path, map_location="cpu", weights_only=False)
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.global_step = int(state["global_step"])
        torch.set_rng_state(state["torch_rng"])
        if "role_baselines" in state:
            self.role_baselines = RoleBaselines.from_dict(state["role_baselines"])
        return dict(state.get("extra") or {})


def read_log(path: str | Path) -> list[dict[str, Any]]:
    """The records of a JSONL training log."""
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def plot_log(records: Sequence[dict[str, Any]], path: str | Path, keys: Sequence[str] = ("reward_mean", "loss"),
             x: str = "step", title: str = "GRPO") -> Path:
    """Draw learning curves of ``keys`` against ``x`` into a PNG (needs matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the install
        from rollgym.core.errors import MissingDependencyError

        raise MissingDependencyError("Plotting needs matplotlib: pip install 'rollgym[train]'.") from exc
    fig, axes = plt.subplots(1, len(keys), figsize=(4.5 * len(keys), 3.2), squeeze=False)
    for ax, key in zip(axes[0], keys):
        points = [(r[x], r[key]) for r in records if r.get(key) is not None]
        if points:
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", markersize=3)
        ax.set_title(key)
        ax.set_xlabel(x)
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    return save_figure(fig, path, dpi=110)


CollectFn = Callable[[int], Sequence[RolloutGroup]]
