"""A training-free, per-token distillation diagnostic: where would each teacher's signal help or hurt?

Given a student's sampled rollouts (a rollgym results file, with exact tokens) and candidate
teachers (another model with the student's tokenizer, or the student itself with privileged
context such as the reference answer, :mod:`rollgym.train.teacher`), it scores every sampled
token ``y_t`` under the student ``S`` and each teacher ``T`` and reports, per token:

- ``delta_t = log p_T(y_t) - log p_S(y_t)``: the teacher-minus-student logprob of the sampled
  token. On-policy distillation with the reverse KL (``GRPOConfig(distill_reverse_kl=c)``) has the
  on-policy gradient ``c * delta_t * grad log p_S(y_t)``: it pushes the token up when
  ``delta_t > 0`` and down when ``delta_t < 0``; ``teacher_credit="add"`` adds ``delta_t`` to the
  token's advantage;
- ``reverse_kl_t = KL(p_S || p_T)`` and ``forward_kl_t = KL(p_T || p_S)`` at that position, exact
  sums over the whole vocabulary.

Help or hurt. The verifier says which rollouts are correct; the ideal update pushes up the tokens
of a correct rollout and pushes down those of a wrong one. So with ``d = +1`` for a correct rollout
and ``-1`` for a wrong one, a token's signal **helps** when ``d * delta_t > 0``, **hurts** when
``d * delta_t < 0`` (and is neutral within ``tol``). The report aggregates ``d * delta_t`` (the
*aligned signal*) and the help and hurt fractions per question and per teacher, split by correct
and wrong rollouts. This is a sign test of the distillation direction against the outcome, not the
gradient-alignment score of the paper that motivates it (which needs an estimate of the ideal
gradient from targeted rollouts); it costs one forward pass per rollout and teacher.

Example:
    >>> report = diagnose(student, tokenizer, groups, {"self+answer": Teacher(student, tokenizer,
    ...                   context=answer_context)})  # doctest: +SKIP
    >>> print(report.to_markdown())  # doctest: +SKIP

The diagnostic compares logprobs of the same token ids, so a teacher must share the student's
tokenizer: :func:`require_shared_tokenizer` refuses one that does not, in one sentence. The CLI is
``rollgym distill-diagnostic`` (:mod:`rollgym.commands.distill_diagnostic`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rollgym.core.errors import ConfigError
from rollgym.core.io import write_bytes_atomic
from rollgym.rollout.types import RolloutGroup
from rollgym.train.teacher import Teacher

#: |d * delta| at or below this is neutral (neither helps nor hurts).
TOLERANCE = 1e-6


@dataclass
class TrajectorySignal:
    """One rollout under one teacher: its per-token values over the tokens the student sampled.

    ``tokens`` are the sampled token ids; ``student``/``teacher`` their logprobs; ``delta`` is
    ``teacher - student``; ``reverse_kl``/``forward_kl`` the full-vocabulary KLs at each of them.
    ``has_teacher`` is False when the teacher's context gave nothing for this rollout (e.g. no
    successful sibling); its lists are then empty.
    """

    traj_id: str
    task_id: str
    correct: bool
    reward: float | None
    has_teacher: bool = True
    tokens: list[int] = field(default_factory=list)
    student: list[float] = field(default_factory=list)
    teacher: list[float] = field(default_factory=list)
    delta: list[float] = field(default_factory=list)
    reverse_kl: list[float] = field(default_factory=list)
    forward_kl: list[float] = field(default_factory=list)

    @property
    def direction(self) -> int:
        """+1 for a correct rollout (its tokens should go up), -1 for a wrong one."""
        return 1 if self.correct else -1

    def aligned(self) -> list[float]:
        """``d * delta_t`` per token: positive where the teacher's push agrees with the outcome."""
        return [self.direction * v for v in self.delta]


@dataclass(frozen=True)
class Aggregate:
    """Token-pooled statistics of a set of rollouts under one teacher.

    ``aligned`` is the mean of ``d * delta_t`` (positive: on balance the teacher pushes the way the
    outcome says); ``helps``/``hurts`` the fractions of tokens with ``d * delta_t`` above ``tol`` or
    below ``-tol``; ``delta_correct``/``delta_wrong`` the mean ``delta_t`` on correct and on wrong
    rollouts (``None`` where there are none); ``helps_correct``/``helps_wrong`` the help fractions
    there.
    """

    rollouts: int
    correct: int
    tokens: int
    aligned: float
    helps: float
    hurts: float
    delta: float
    reverse_kl: float
    forward_kl: float
    delta_correct: float | None
    delta_wrong: float | None
    helps_correct: float | None
    helps_wrong: float | None

    @property
    def verdict(self) -> str:
        """``"helps"``, ``"hurts"`` or ``"neutral"``: the sign of :attr:`aligned`."""
        if self.tokens == 0 or abs(self.aligned) <= TOLERANCE:
            return "neutral"
        return "helps" if self.aligned > 0 else "hurts"


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def aggregate(signals: Sequence[TrajectorySignal], tol: float = TOLERANCE) -> Aggregate:
    """Pool the tokens of ``signals`` (rollouts without a teacher are left out).

    Example:
        >>> good = TrajectorySignal("a", "q", True, 1.0, delta=[0.5, -0.1], reverse_kl=[0.1, 0.1], forward_kl=[0, 0])
        >>> bad = TrajectorySignal("b", "q", False, 0.0, delta=[-0.2], reverse_kl=[0.3], forward_kl=[0])
        >>> agg = aggregate([good, bad])
        >>> round(agg.aligned, 4), round(agg.helps, 4), agg.verdict
        (0.2, 0.6667, 'helps')
    """
    scored = [s for s in signals if s.has_teacher]
    aligned = [v for s in scored for v in s.aligned()]
    right = [v for s in scored if s.correct for v in s.delta]
    wrong = [v for s in scored if not s.correct for v in s.delta]

    def frac(values: Sequence[float], sign: int) -> float | None:
        return sum(1 for v in values if sign * v > tol) / len(values) if values else None

    return Aggregate(
        rollouts=len(scored),
        correct=sum(s.correct for s in scored),
        tokens=len(aligned),
        aligned=_mean(aligned) or 0.0,
        helps=frac(aligned, 1) or 0.0,
        hurts=frac(aligned, -1) or 0.0,
        delta=_mean([v for s in scored for v in s.delta]) or 0.0,
        reverse_kl=_mean([v for s in scored for v in s.reverse_kl]) or 0.0,
        forward_kl=_mean([v for s in scored for v in s.forward_kl]) or 0.0,
        delta_correct=_mean(right),
        delta_wrong=_mean(wrong),
        helps_correct=frac(right, 1),
        helps_wrong=frac(wrong, -1),
    )


@dataclass
class DiagnosticReport:
    """Per teacher: every rollout's per-token signal, and aggregates per question and overall."""

    signals: dict[str, list[TrajectorySignal]]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def teachers(self) -> list[str]:
        """The teachers' names, in the order they were given."""
        return list(self.signals)

    @property
    def questions(self) -> list[str]:
        """Every question (task id), in the order first seen."""
        seen: dict[str, None] = {}
        for signals in self.signals.values():
            for s in signals:
                seen.setdefault(s.task_id, None)
        return list(seen)

    def per_teacher(self) -> dict[str, Aggregate]:
        """One :class:`Aggregate` per teacher over all its rollouts."""
        return {name: aggregate(signals) for name, signals in self.signals.items()}

    def per_question(self) -> dict[str, dict[str, Aggregate]]:
        """``{question: {teacher: Aggregate}}``."""
        return {q: {name: aggregate([s for s in signals if s.task_id == q]) for name, signals in self.signals.items()}
                for q in self.questions}

    def best_teacher(self) -> dict[str, str | None]:
        """Per question, the teacher with the largest positive aligned signal (``None``: none helps)."""
        out: dict[str, str | None] = {}
        for q, row in self.per_question().items():
            helping = [(agg.aligned, name) for name, agg in row.items() if agg.verdict == "helps"]
            out[q] = max(helping)[1] if helping else None
        return out

    def to_dict(self, *, tokens: bool = False) -> dict[str, Any]:
        """A JSON-ready summary; with ``tokens``, every rollout's per-token lists too."""
        out: dict[str, Any] = {
            "meta": dict(self.meta),
            "rule": "d = +1 on correct rollouts, -1 on wrong; delta = log p_teacher - log p_student of the sampled "
                    f"token; a token helps when d * delta > {TOLERANCE:g}, hurts when d * delta < -{TOLERANCE:g}",
            "teachers": {name: {**asdict(agg), "verdict": agg.verdict} for name, agg in self.per_teacher().items()},
            "questions": {q: {name: {**asdict(agg), "verdict": agg.verdict} for name, agg in row.items()}
                          for q, row in self.per_question().items()},
            "best_teacher": self.best_teacher(),
        }
        if tokens:
            out["rollouts"] = {name: [asdict(s) for s in signals] for name, signals in self.signals.items()}
        return out

    def to_markdown(self) -> str:
        """Two markdown tables: per teacher, then per question and teacher (:func:`render_markdown`)."""
        return render_markdown(self.to_dict())

    def write_json(self, path: str | Path, *, tokens: bool = False) -> Path:
        """Write :meth:`to_dict` as indented JSON, atomically; return the path."""
        path = Path(path)
        write_bytes_atomic(path, (json.dumps(self.to_dict(tokens=tokens), indent=1, sort_keys=True) + "\n").encode())
        return path

    def plot(self, path: str | Path) -> Path:
        """Draw the aligned signal per question and teacher, and the help fractions on correct and wrong rollouts.

        A ``.svg`` path, or any path when matplotlib is not installed, gets an SVG written without it;
        otherwise a PNG from matplotlib.
        """
        from rollgym.train.bar_charts import draw_bar_panels

        return draw_bar_panels(self._panels(), path)

    def _panels(self) -> list[tuple[str, str, list[str], dict[str, list[float | None]]]]:
        per_q = self.per_question()
        questions = list(per_q)
        labels = [f"q{i}" for i in range(len(questions))]
        aligned = {name: [per_q[q][name].aligned if per_q[q][name].tokens else None for q in questions]
                   for name in self.teachers}
        overall = self.per_teacher()
        helps = {"correct rollouts": [overall[n].helps_correct for n in self.teachers],
                 "wrong rollouts": [overall[n].helps_wrong for n in self.teachers]}
        return [("aligned signal d·Δ per question (> 0: helps)", "mean d·Δ (nats/token)", labels, aligned),
                ("fraction of tokens where the teacher helps", "fraction of tokens", self.teachers, helps)]


def render_markdown(data: Mapping[str, Any]) -> str:
    """The two tables of :meth:`DiagnosticReport.to_markdown` from its JSON (:meth:`~DiagnosticReport.to_dict`).

    Rows follow the order of the JSON's keys, so a report read back from a file renders the same every time.
    """
    lines = ["| teacher | rollouts (correct) | tokens | aligned d·Δ | helps | hurts | Δ on correct | Δ on wrong | "
             "reverse KL | forward KL | verdict |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, a in data["teachers"].items():
        lines.append(f"| {name} | {a['rollouts']} ({a['correct']}) | {a['tokens']} | {a['aligned']:+.3f} | "
                     f"{a['helps']:.2f} | {a['hurts']:.2f} | {_fmt(a['delta_correct'])} | {_fmt(a['delta_wrong'])} | "
                     f"{a['reverse_kl']:.3f} | {a['forward_kl']:.3f} | {a['verdict']} |")
    lines += ["", "| question | teacher | rollouts (correct) | aligned d·Δ | helps | hurts | verdict |",
              "|---|---|---|---|---|---|---|"]
    for q, row in data["questions"].items():
        for name, a in row.items():
            lines.append(f"| {q} | {name} | {a['rollouts']} ({a['correct']}) | {a['aligned']:+.3f} | "
                         f"{a['helps']:.2f} | {a['hurts']:.2f} | {a['verdict']} |")
    return "\n".join(lines) + "\n"


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.3f}"


# -- inputs --------------------------------------------------------------------------------------------------------


def load_groups(path: str | Path) -> list[RolloutGroup]:
    """Rollout groups from a results file (``rollgym eval --out``) or a JSONL of groups (``write_jsonl``).

    A name ending in ``.gz`` is read through gzip (a results file of token ids shrinks about tenfold).

    Raises:
        ConfigError: one sentence when the file is missing, empty, not JSON, of neither kind, or
            holds no rollout with sampled tokens.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"Trajectory file {path} does not exist; pass a results file written by "
                          "`rollgym eval --model ... --out FILE`.")
    if path.suffix == ".gz":
        import gzip
        import tempfile

        try:
            raw = gzip.decompress(path.read_bytes())
        except (OSError, EOFError):
            raise ConfigError(f"Trajectory file {path} is not gzip data; drop the .gz from its name if it is "
                              "plain JSONL.") from None
        with tempfile.TemporaryDirectory() as tmp:
            plain = Path(tmp) / path.stem
            plain.write_bytes(raw)
            try:
                return load_groups(plain)
            except ConfigError as exc:
                raise ConfigError(str(exc).replace(str(plain), str(path))) from None
    with open(path, "rb") as handle:
        first = handle.readline()
    if not first.strip():
        raise ConfigError(f"Trajectory file {path} is empty; pass a results file written by "
                          "`rollgym eval --model ... --out FILE`.")
    try:
        head = json.loads(first)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ConfigError(f"Trajectory file {path} is not JSONL (its first line is not JSON); pass a results file "
                          "written by `rollgym eval --model ... --out FILE`.") from None
    try:
        if isinstance(head, dict) and head.get("kind") == "header":
            from rollgym.rollout.store import load_results

            groups = load_results(path).groups()
        elif isinstance(head, dict) and "trajectories" in head:
            groups = []
            with open(path, encoding="utf-8") as handle:
                for line in handle:
                    if line.strip():
                        groups.append(RolloutGroup.from_dict(json.loads(line)))
        else:
            raise ConfigError(f"Trajectory file {path} is neither a rollgym results file nor a JSONL of rollout "
                              "groups; pass a results file written by `rollgym eval --model ... --out FILE`.")
    except ConfigError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ConfigError(f"Trajectory file {path} has a malformed rollout ({type(exc).__name__}: {exc}); "
                          "regenerate it with `rollgym eval --model ... --out FILE`.") from None
    if not any(any(t.loss_mask) for g in groups for t in g.usable()):
        raise ConfigError(f"Trajectory file {path} has no rollout with sampled token ids (a reference agent's "
                          "results carry none); evaluate a language model with `rollgym eval --model ... --out FILE`.")
    return groups


def _vocab(tokenizer: Any) -> dict[str, int]:
    return dict(tokenizer.get_vocab())


def require_shared_tokenizer(student_tokenizer: Any, teacher_tokenizer: Any, name: str = "teacher") -> None:
    """Refuse, in one sentence, a teacher whose tokenizer is not the student's (same token strings, same ids).

    Example:
        >>> require_shared_tokenizer(tok, other_tok, "qwen")  # doctest: +SKIP
        Traceback (most recent call last):
        rollgym.core.errors.ConfigError: Teacher 'qwen' uses a different tokenizer from the student ...
    """
    if teacher_tokenizer is student_tokenizer:
        return
    mine, theirs = _vocab(student_tokenizer), _vocab(teacher_tokenizer)
    if mine != theirs:
        sizes = (f"{len(theirs)} against {len(mine)} tokens" if len(theirs) != len(mine)
                 else f"{len(mine)} tokens each, with other ids")
        raise ConfigError(
            f"Teacher {name!r} uses a different tokenizer from the student ({sizes}), and the per-token diagnostic "
            "compares logprobs of the same token ids, so use a teacher with the student's tokenizer or the student "
            "itself with privileged context (self:answer).")


def _check_token_range(groups: Sequence[RolloutGroup], vocab_size: int) -> None:
    for group in groups:
        for traj in group.usable():
            ids = [*traj.prompt_ids, *traj.completion_ids, *(i for t in traj.turns for i in t.prompt_ids)]
            bad = next((i for i in ids if not 0 <= i < vocab_size), None)
            if bad is not None:
                raise ConfigError(f"Rollout {traj.traj_id} has token id {bad}, outside the student's vocabulary of "
                                  f"{vocab_size}; the trajectories were not sampled with this student's tokenizer.")


# -- scoring -------------------------------------------------------------------------------------------------------


def _completion_distributions(model: Any, row: Any, pad_id: int) -> Any:
    """``[n, V]`` next-token log-probabilities at each of ``row``'s completion positions."""
    from rollgym.train.sequences import sequence_distributions

    dists, _, _, _ = sequence_distributions(model, [row], pad_id)
    return dists[0, : len(row.completion_ids)]


def _kl(p_log: Any, q_log: Any) -> Any:
    """``KL(p || q)`` per row of ``[n, V]`` log-probabilities, exact over the vocabulary (0 log 0 = 0)."""
    import torch

    p = p_log.exp()
    terms = torch.where(p > 0, p * (p_log - q_log), torch.zeros_like(p))
    return terms.sum(-1)


def diagnose(student: Any, tokenizer: Any, groups: Sequence[RolloutGroup], teachers: Mapping[str, Teacher], *,
             teacher_tokenizers: Mapping[str, Any] | None = None, limit: int | None = None,
             pad_id: int | None = None) -> DiagnosticReport:
    """Score every sampled token of the usable rollouts under the student and each teacher.

    Args:
        student: The causal LM that sampled the rollouts.
        tokenizer: Its tokenizer.
        groups: The rollouts (:func:`load_groups`), with their tasks for privileged context.
        teachers: ``{name: Teacher}``: another model (``Teacher(model)``) or the student with privileged
            context (``Teacher(student, tokenizer, context=answer_context)``). A teacher's ``locate`` is not
            used: every sampled token is scored.
        teacher_tokenizers: ``{name: tokenizer}`` of teachers that are other models; each is checked
            against the student's with :func:`require_shared_tokenizer` before any scoring.
        limit: Score at most this many rollouts (in file order).
        pad_id: Padding id (unused with one row per forward pass; default the tokenizer's).

    Returns:
        A :class:`DiagnosticReport`.
    """
    import torch

    from rollgym.train.grpo import rows_from_groups

    if not teachers:
        raise ConfigError("Name at least one teacher, e.g. self:answer or a model with the student's tokenizer.")
    for name, other in (teacher_tokenizers or {}).items():
        require_shared_tokenizer(tokenizer, other, name)
    vocab_size = int(getattr(getattr(student, "config", None), "vocab_size", 0) or len(tokenizer))
    _check_token_range(groups, vocab_size)
    pad = pad_id if pad_id is not None else int(tokenizer.pad_token_id or tokenizer.eos_token_id or 0)
    chosen = [(g, t) for g in groups for t in g.usable() if any(t.loss_mask)]
    chosen = chosen[:limit] if limit is not None else chosen
    report = DiagnosticReport({name: [] for name in teachers},
                              {"rollouts": len(chosen), "questions": len({t.task_id for _, t in chosen})})
    models = {id(student): student, **{id(t.model): t.model for t in teachers.values()}}
    modes = {k: m.training for k, m in models.items()}
    for m in models.values():
        m.eval()
    try:
        with torch.no_grad():
            for group, traj in chosen:
                rows = rows_from_groups([RolloutGroup(group.group_id, group.task, group.target_size, [traj])],
                                        {traj.traj_id: 0.0})
                students = [_completion_distributions(student, row, pad) for row in rows]
                for name, teacher in teachers.items():
                    prefix = teacher.prefix(traj, group)
                    signal = TrajectorySignal(traj.traj_id, str(traj.task_id), traj.correct, traj.reward,
                                              has_teacher=prefix is not None)
                    if prefix is not None:
                        for row, s_dist in zip(rows, students):
                            shifted = type(row)(list(prefix) + row.prompt_ids, row.completion_ids, row.loss_mask,
                                                row.old_logprobs, 0.0)
                            t_dist = _completion_distributions(teacher.model, shifted, pad)
                            if t_dist.shape[-1] != s_dist.shape[-1]:
                                raise ConfigError(
                                    f"Teacher {name!r} predicts over {t_dist.shape[-1]} tokens and the student over "
                                    f"{s_dist.shape[-1]}; the per-token diagnostic needs the student's vocabulary.")
                            _append(signal, row, s_dist, t_dist)
                    report.signals[name].append(signal)
    finally:
        for k, m in models.items():
            m.train(modes[k])
    return report


def _append(signal: TrajectorySignal, row: Any, s_dist: Any, t_dist: Any) -> None:
    import torch

    ids = torch.tensor(row.completion_ids, dtype=torch.long).unsqueeze(-1)
    s_lp = s_dist.gather(-1, ids).squeeze(-1)
    t_lp = t_dist.gather(-1, ids).squeeze(-1)
    reverse, forward = _kl(s_dist, t_dist), _kl(t_dist, s_dist)
    for j, sampled in enumerate(row.loss_mask):
        if not sampled:
            continue
        signal.tokens.append(int(row.completion_ids[j]))
        signal.student.append(float(s_lp[j]))
        signal.teacher.append(float(t_lp[j]))
        signal.delta.append(float(t_lp[j] - s_lp[j]))
        signal.reverse_kl.append(float(reverse[j]))
        signal.forward_kl.append(float(forward[j]))
