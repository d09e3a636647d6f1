"""The distillation terms: forward KL over the teacher's top-k against the exact full-vocabulary KL,
CriPO's localization masks, and the reverse-KL term's old name."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from rollgym.train.grpo import GRPOConfig, GRPOTrainer, rows_from_groups  # noqa: E402
from rollgym.train.loss import forward_kl_top_k, grpo_loss, top_k  # noqa: E402
from rollgym.train.sequences import Row, sequence_distributions  # noqa: E402
from rollgym.train.teacher import Teacher, teacher_top_k  # noqa: E402
from tests.train.test_credit import sample_groups  # noqa: E402


def exact_forward_kl(student, teacher):
    """KL(teacher || student) per position, summed over the whole vocabulary."""
    p = teacher.exp()
    return (p * (teacher - student)).sum(-1)


def rows_for(prompt, completions):
    return [Row(list(prompt), list(c), [1] * len(c), [0.0] * len(c), 0.0) for c in completions]


@pytest.fixture(scope="module")
def models(tiny_model_dir):
    from transformers import AutoModelForCausalLM

    student = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    torch.manual_seed(5)
    teacher = AutoModelForCausalLM.from_config(student.config).eval()  # another model, same vocabulary
    with torch.no_grad():
        teacher.lm_head.weight.mul_(10.0)  # sharper than a fresh model's near-uniform next-token distributions
    return student, teacher


def test_k_equal_to_the_vocabulary_is_the_exact_forward_kl_and_its_gradient(models):
    student, teacher = models
    rows = rows_for([5, 17, 42], [[8, 9, 10, 11], [12, 13]])
    with torch.no_grad():
        t_dists, _, _, _ = sequence_distributions(teacher, rows, 0)
    vocab = t_dists.shape[-1]
    params = [p for p in student.parameters() if p.requires_grad]
    real = torch.tensor([[1.0] * 4, [1.0, 1.0, 0.0, 0.0]])  # the second row is padded

    def loss_and_grads(kl_fn):
        s_dists, _, _, _ = sequence_distributions(student, rows, 0)
        loss = (kl_fn(s_dists) * real).sum()
        return loss, torch.autograd.grad(loss, params)

    exact, exact_grads = loss_and_grads(lambda s: exact_forward_kl(s, t_dists))
    ours, our_grads = loss_and_grads(lambda s: forward_kl_top_k(s, top_k(t_dists, vocab)))
    assert float(exact.detach()) > 0.1
    assert float(ours.detach()) == pytest.approx(float(exact.detach()), rel=1e-5)
    for g_exact, g_ours in zip(exact_grads, our_grads):
        assert torch.allclose(g_exact, g_ours, rtol=1e-4, atol=1e-7)
    # the plain-tensor form for other trainers gives the same top-k
    top = teacher_top_k(teacher, [[5, 17, 42]] * 2, [[8, 9, 10, 11], [12, 13]], vocab)
    assert torch.equal(top.ids[0], top_k(t_dists, vocab).ids[0])


@pytest.mark.parametrize("k", [1, 3, 10, 40])
def test_a_small_k_is_a_lower_bound_short_by_the_rest_and_its_gradient_is_close(k):
    gen = torch.Generator().manual_seed(k)
    vocab = 64
    teacher = torch.log_softmax(3.0 * torch.randn(2, 5, vocab, generator=gen), -1)
    logits = (2.0 * torch.randn(2, 5, vocab, generator=gen)).requires_grad_()
    cut = top_k(teacher, k)

    approx = forward_kl_top_k(torch.log_softmax(logits, -1), cut)
    (g_approx,) = torch.autograd.grad(approx.sum(), logits)
    exact = exact_forward_kl(torch.log_softmax(logits, -1), teacher)
    (g_exact,) = torch.autograd.grad(exact.sum(), logits)

    rest_mass = cut.rest.exp()
    assert torch.all(approx <= exact + 1e-5)
    # the chain rule of KL: the gap is the teacher's rest mass times the KL of the two distributions within the rest
    inside = torch.zeros_like(teacher, dtype=torch.bool).scatter(-1, cut.ids, True)
    t_rest = torch.log_softmax(teacher.masked_fill(inside, float("-inf")), -1)
    s_rest = torch.log_softmax(logits.detach().masked_fill(inside, float("-inf")), -1)
    within = torch.where(inside, 0.0, t_rest.exp() * (t_rest - s_rest)).sum(-1)
    assert torch.allclose(exact - approx, rest_mass * within, atol=1e-4)
    # the gradient with respect to the logits is off by at most twice the rest mass (L1, per position)
    gap = (g_approx - g_exact).abs().sum(-1)
    assert torch.all(gap <= 2 * rest_mass + 1e-5)
    if k == 1:
        assert float(gap.max()) > 0.01  # the bound is not vacuous: a small k does differ


def test_the_forward_term_is_weighted_and_masked_in_the_loss():
    forward = torch.tensor([[0.5, 0.25, 1.0], [2.0, 2.0, 2.0]], requires_grad=True)
    zeros = torch.zeros(2, 3)
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    where = torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0]])  # row 2 has no teacher
    loss, stats = grpo_loss(zeros, zeros, torch.zeros(2), mask, forward_kl=forward, distill_forward_kl=2.0,
                            distill_mask=where)
    assert stats.forward_kl == pytest.approx((0.5 + 1.0) / 5) and stats.reverse_kl == 0.0
    assert float(loss.detach()) == pytest.approx(2.0 * 1.5 / 5)
    loss.backward()
    assert forward.grad.tolist() == [[pytest.approx(0.4), 0.0, pytest.approx(0.4)], [0.0, 0.0, 0.0]]
    with pytest.raises(ValueError, match="forward_kl"):
        grpo_loss(zeros, zeros, torch.zeros(2), mask, distill_forward_kl=1.0)


def test_cripo_localization_limits_the_forward_kl_to_the_marked_tokens(tiny_model_dir, tiny_backend, models):
    from transformers import AutoModelForCausalLM

    _, teacher_model = models
    groups = sample_groups(tiny_backend, [5, 17, 42, 99, 7], n=2)
    first = groups[0].trajectories[0]
    assert len(first.completion_ids) >= 3

    def locate(traj, group):
        return [(1, 3)] if traj.traj_id == "s0" else []  # s0: its tokens 1 and 2; s1: nothing

    teacher = Teacher(teacher_model, locate=locate)
    rows = rows_from_groups(groups, {"s0": 0.0, "s1": 0.0}, teacher=teacher)
    assert rows[0].teacher_mask == [0.0, 1.0, 1.0] + [0.0] * (len(first.completion_ids) - 3)
    assert set(rows[1].teacher_mask) <= {0.0}

    def train(locate_fn):
        student = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
        before = [p.detach().clone() for p in student.parameters()]
        cfg = GRPOConfig(learning_rate=1e-2, distill_forward_kl=1.0, distill_top_k=8, max_grad_norm=0.0)
        stats = GRPOTrainer(student, tiny_backend.tokenizer, cfg, teacher=Teacher(teacher_model, locate=locate_fn)
                            ).step(groups)  # all rewards 0: the forward KL is the only signal
        moved = any(not torch.equal(a, b) for a, b in zip(before, student.parameters()))
        return stats, moved

    stats, moved = train(lambda traj, group: [])  # the criterion marks no token: no signal at all
    assert stats["forward_kl"] == 0.0 and not moved
    stats, moved = train(locate)
    assert stats["forward_kl"] > 0.0 and stats["distill"] == pytest.approx(stats["forward_kl"]) and moved
    whole, _ = train(None)  # no locate: every token
    assert whole["forward_kl"] > stats["forward_kl"]


def test_forward_kl_training_pulls_the_student_to_the_teacher(tiny_model_dir, tiny_backend, models):
    from transformers import AutoModelForCausalLM

    _, teacher_model = models
    student = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    groups = sample_groups(tiny_backend, [5, 17, 42, 99, 7], n=4)
    rows = rows_for(groups[0].trajectories[0].prompt_ids, [t.completion_ids for t in groups[0].trajectories])

    def kl() -> float:
        with torch.no_grad():
            t, _, _, mask = sequence_distributions(teacher_model, rows, 0)
            s, _, _, _ = sequence_distributions(student, rows, 0)
        return float((exact_forward_kl(s, t) * mask).sum() / mask.sum())

    before = kl()
    trainer = GRPOTrainer(student, tiny_backend.tokenizer, GRPOConfig(learning_rate=1e-2, distill_forward_kl=1.0,
                                                                      distill_top_k=16), teacher=Teacher(teacher_model))
    for _ in range(8):
        trainer.step(groups)
    assert kl() < 0.7 * before


def test_the_reverse_kl_terms_old_name_still_works_with_a_warning():
    with pytest.warns(DeprecationWarning, match="distill_reverse_kl") as caught:
        cfg = GRPOConfig(distill_coef=0.5)
    assert cfg.distill_reverse_kl == 0.5 and cfg.distill_coef is None
    assert caught[0].filename == __file__  # the warning points at the line that used the old name
    new = torch.zeros(1, 2)
    teacher = torch.full((1, 2), -1.0)
    with pytest.warns(DeprecationWarning, match="distill_reverse_kl"):
        _, old_stats = grpo_loss(new, new, torch.zeros(1), torch.ones(1, 2), teacher_logprobs=teacher, distill_coef=0.5)
    _, stats = grpo_loss(new, new, torch.zeros(1), torch.ones(1, 2), teacher_logprobs=teacher, distill_reverse_kl=0.5)
    assert old_stats == stats
    with pytest.raises(Exception, match="distill_reverse_kl only"), pytest.warns(DeprecationWarning):
        GRPOConfig(distill_coef=0.5, distill_reverse_kl=0.25)
    with pytest.raises(Exception, match="distill_top_k"):
        GRPOConfig(distill_top_k=0)
