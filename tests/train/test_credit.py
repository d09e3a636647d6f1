"""Token-level credit and on-policy distillation, on real multi-turn episodes and the tiny local model."""

from __future__ import annotations

import asyncio
import math
import sys
from pathlib import Path

import pytest

TOY_DIR = str(Path(__file__).resolve().parents[1] / "rollout")  # rollgym_toyenv: the multi-turn ToyGuess-v0
if TOY_DIR not in sys.path:
    sys.path.insert(0, TOY_DIR)

torch = pytest.importorskip("torch")

from rollgym.agents.backends.base import Generation, SamplingParams  # noqa: E402
from rollgym.agents.chat import ChatAgent  # noqa: E402
from rollgym.core.registration import make  # noqa: E402
from rollgym.rollout.collector import run_episode  # noqa: E402
from rollgym.rollout.types import RolloutGroup, Trajectory, Turn  # noqa: E402
from rollgym.train.advantages import group_advantages  # noqa: E402
from rollgym.train.credit import (  # noqa: E402
    broadcast,
    criterion_advantages,
    layout,
    rollout_tensor,
    teacher_credit,
    teacher_credit_tensor,
    turn_advantages,
)
from rollgym.train.grpo import GRPOConfig, GRPOTrainer  # noqa: E402
from rollgym.train.loss import grpo_loss  # noqa: E402
from rollgym.train.teacher import Teacher, answer_context, context_ids, sibling_context, teacher_logprobs  # noqa: E402
from tests.conftest import task_at  # noqa: E402


class ScriptedBackend:
    """Emits fixed texts, tokenized by the tiny tokenizer, with logprob -1 per token."""

    name = "scripted"

    def __init__(self, tokenizer, texts):
        self.tokenizer = tokenizer
        self.texts = list(texts)
        self.policy_version = 0

    async def generate(self, prompts, sampling):
        text = self.texts.pop(0)
        ids = [*self.tokenizer(text, add_special_tokens=False)["input_ids"], self.tokenizer.eos_token_id]
        return [Generation(text, ids, [-1.0] * len(ids), "stop", 0, list(p)) for p in prompts]


@pytest.fixture(scope="module")
def guess_group(tiny_backend):
    """Three real ToyGuess-v0 episodes in tokens: right at turn 2, right at turn 1, wrong three times."""
    import rollgym_toyenv  # noqa: F401  (registers the toy envs)

    task = task_at("ToyGuess-v0", 0, max_guesses=3)
    secret = task.answer
    wrong = [str(g) for g in range(1, 9) if g != secret]
    scripts = [[wrong[0], str(secret)], [str(secret)], wrong[:3]]
    trajs = []
    from rollgym.train.adapters.episodes import FixedTask

    for i, texts in enumerate(scripts):
        agent = ChatAgent(ScriptedBackend(tiny_backend.tokenizer, texts), SamplingParams(max_tokens=8))
        traj, _ = run_episode(FixedTask(make("ToyGuess-v0", max_guesses=3), task), agent, seed=0,
                              traj_id=f"e{i}", group_id="g", sample_idx=i, env_id="ToyGuess-v0", max_steps=5)
        trajs.append(traj)
    return RolloutGroup("g", task, 3, trajs)


def test_turn_level_advantages_follow_the_return_from_each_turn(guess_group):
    a, b, c = guess_group.trajectories
    assert [t.step_rewards for t in (a, b, c)] == [[0.0, 1.0], [1.0], [0.0, 0.0, 0.0]]
    adv = turn_advantages([guess_group], scale="none")
    # returns to go: a = [1, 1], b = [1], c = [0, 0, 0]; turn 0 mean 2/3, turn 1 mean 1/2 (a, c), turn 2 only c
    expected = {"e0": [1 / 3, 0.5], "e1": [1 / 3], "e2": [-2 / 3, -0.5, 0.0]}
    for traj in guess_group.trajectories:
        tokens = adv[traj.traj_id]
        assert len(tokens) == len(traj.completion_ids)  # aligned with the rollout's tokens
        for (start, n, m), value in zip(layout(traj), expected[traj.traj_id]):
            assert tokens[start : start + n] == pytest.approx([value] * n)
            assert tokens[start + n : start + n + m] == [0.0] * m  # env tokens carry no credit
    discounted = turn_advantages([guess_group], scale="none", gamma=0.5)
    first = layout(a)[0]
    assert discounted["e0"][first[0]] == pytest.approx(0.5 - (0.5 + 1.0 + 0.0) / 3)


def test_broadcast_and_the_tensor_form_for_other_trainers(guess_group):
    adv = group_advantages([guess_group], scale="none")
    tokens = broadcast([guess_group], adv)
    values, mask, ids = rollout_tensor([guess_group], tokens)
    assert ids == ["e0", "e1", "e2"] and values.shape == mask.shape
    for row, traj in enumerate(guess_group.trajectories):
        n = len(traj.completion_ids)
        assert mask[row, :n].tolist() == [float(m) for m in traj.loss_mask]
        assert values[row, :n].tolist() == pytest.approx([adv[traj.traj_id] * m for m in traj.loss_mask])


def test_criterion_credit_keeps_a_suppressed_criterion_positive():
    def t(i, reward, components):
        return Trajectory(f"c{i}", "g", i, "E-v0", "x", 0, reward=reward, reward_components=components,
                          completion_ids=[1] * 6, loss_mask=[1] * 6, logprobs=[0.0] * 6)

    group = RolloutGroup("g", None, 3, [t(0, 0.0, {"found": 1.0, "booked": 0.0}),
                                        t(1, 1.0, {"found": 1.0, "booked": 1.0}),
                                        t(2, 0.0, {"found": 0.0, "booked": 0.0})])
    base = group_advantages([group], scale="none")
    spans = {"found": [(0, 3)], "booked": [(3, 6)]}
    adv = criterion_advantages([group], base, lambda traj, name: spans[name], scale="none")
    assert base["c0"] < 0
    assert adv["c0"][:3] == pytest.approx([1 / 3] * 3)  # "found" was satisfied: its tokens are not pushed down
    assert adv["c0"][3:] == pytest.approx([-1 / 3] * 3)
    assert adv["c2"] == pytest.approx([-2 / 3] * 3 + [-1 / 3] * 3)


def test_teacher_credit_by_hand():
    reweighted = teacher_credit({"a": [1.0, -1.0, 1.0]}, {"a": [-1.0, -1.0, -1.0]}, {"a": [-0.5, -0.5, -3.0]},
                                coef=1.0, bound=0.25)
    # a failed rollout (A < 0): a token the teacher likes more than the student is blamed less
    assert reweighted["a"] == pytest.approx([1.25, -0.75, 0.75])
    added = teacher_credit({"a": [0.5]}, {"a": [-2.0]}, {"a": [-1.0]}, mode="add", coef=0.1)
    assert added["a"] == pytest.approx([0.6])
    tensor = teacher_credit_tensor(torch.tensor([1.0]), torch.tensor([[-1.0, -1.0]]), torch.tensor([[-0.5, -3.0]]),
                                   torch.tensor([[1.0, 0.0]]), bound=0.25)
    assert tensor[0].tolist() == pytest.approx([1.25, 1.0])  # masked token keeps the broadcast advantage


def test_the_distillation_term_by_hand():
    new = torch.zeros(2, 2, requires_grad=True)
    old = torch.zeros(2, 2)
    teacher = torch.full((2, 2), math.log(0.5))
    mask = torch.ones(2, 2)
    loss, stats = grpo_loss(new, old, torch.zeros(2), mask, teacher_logprobs=teacher, distill_reverse_kl=0.5,
                            distill_mask=torch.tensor([1.0, 0.0]))
    assert stats.distill == stats.reverse_kl == pytest.approx(math.log(2.0) / 2)  # one of the two rows has a teacher
    loss.backward()
    assert new.grad[0].tolist() == pytest.approx([0.5 * math.log(2.0) / 4] * 2)  # coef * d / tokens
    assert new.grad[1].tolist() == [0.0, 0.0]
    with pytest.raises(ValueError, match="teacher_logprobs"):
        grpo_loss(new, old, torch.zeros(2), mask, distill_reverse_kl=0.1)


def sample_groups(backend, prompt, n=4, seed=0, max_tokens=6):
    gens = asyncio.run(backend.generate([prompt], SamplingParams(max_tokens=max_tokens, n=n, seed=seed)))
    trajs = [Trajectory(f"s{i}", "g", i, "Toy-v0", "t", 0, prompt_ids=list(prompt),
                        completion_ids=list(g.token_ids), loss_mask=[1] * len(g.token_ids),
                        logprobs=list(g.logprobs), reward=0.0,
                        turns=[Turn(list(prompt), list(g.token_ids), list(g.logprobs))]) for i, g in enumerate(gens)]
    return [RolloutGroup("g", None, n, trajs)]


def test_on_policy_distillation_pulls_the_student_to_another_model(tiny_model_dir, tiny_backend):
    from transformers import AutoModelForCausalLM

    student = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    torch.manual_seed(3)
    teacher_model = AutoModelForCausalLM.from_config(student.config).eval()  # another model, same vocabulary
    prompt = [5, 17, 42, 99, 7]
    groups = sample_groups(tiny_backend, prompt)
    rows_p = [t.prompt_ids for t in groups[0].trajectories]
    rows_c = [t.completion_ids for t in groups[0].trajectories]

    def gap() -> float:
        s = teacher_logprobs(student, rows_p, rows_c)
        t = teacher_logprobs(teacher_model, rows_p, rows_c)
        return float((s - t).abs().mean())

    before = gap()
    trainer = GRPOTrainer(student, tiny_backend.tokenizer, GRPOConfig(learning_rate=3e-3, distill_reverse_kl=1.0),
                          teacher=Teacher(teacher_model))
    for _ in range(8):
        stats = trainer.step(groups)  # all rewards 0: the distillation term is the only signal
    assert stats["distill"] != 0.0
    assert gap() < 0.8 * before


def test_a_privileged_teacher_is_the_student_with_the_answer_in_context(tiny_model_dir, tiny_backend):
    from transformers import AutoModelForCausalLM

    from rollgym.core import Task

    tok = tiny_backend.tokenizer
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    task = Task("t1", "E-v0", "What is 6 * 7?", "42")
    good = Trajectory("w", "g", 0, "E-v0", "t1", 0, reward=1.0, info={"correct": True},
                      messages=[{"role": "assistant", "content": "6*7 = \\boxed{42}"}], completion_ids=[1, 2],
                      loss_mask=[1, 1], logprobs=[0.0, 0.0])
    bad = Trajectory("l", "g", 1, "E-v0", "t1", 0, reward=0.0, info={"correct": False},
                     messages=[{"role": "assistant", "content": "\\boxed{41}"}], completion_ids=[1], loss_mask=[1],
                     logprobs=[0.0])
    group = RolloutGroup("g", task, 2, [good, bad])
    assert "42" in answer_context(bad, group)
    assert "\\boxed{42}" in sibling_context(bad, group) and sibling_context(good, group) is None
    teacher = Teacher(model, tok, context=answer_context)
    prefix = teacher.prefix(bad, group)
    assert prefix == context_ids(tok, answer_context(bad, group)) and "42" in tok.decode(prefix)
    assert Teacher(model).prefix(bad, group) == []
    assert Teacher(model, tok, context=sibling_context).prefix(good, group) is None  # no teacher for this row
    groups = sample_groups(tiny_backend, list(tok("What is 6 * 7?")["input_ids"]), n=2)
    groups[0].task = task
    groups[0].trajectories[0].reward = 1.0
    trainer = GRPOTrainer(model, tok, GRPOConfig(learning_rate=1e-3, distill_reverse_kl=0.5, teacher_credit="reweight"),
                          teacher=teacher)
    stats = trainer.step(groups)
    assert stats["rows"] == 2 and stats["distill"] != 0.0  # the context changes the teacher's logprobs
    with pytest.raises(Exception, match="teacher"):
        GRPOTrainer(model, tok, GRPOConfig(distill_reverse_kl=0.5))


def test_the_trainer_takes_token_advantages(tiny_model_dir, tiny_backend):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    groups = sample_groups(tiny_backend, [5, 17, 42, 99, 7])
    for i, t in enumerate(groups[0].trajectories):
        t.reward = float(i % 2)
    target = groups[0].trajectories[1]
    tokens = {target.traj_id: [0.0] * (len(target.completion_ids) - 1) + [5.0]}  # credit only on the last token
    trainer = GRPOTrainer(model, tiny_backend.tokenizer, GRPOConfig(learning_rate=1e-2))
    before = teacher_logprobs(model, [target.prompt_ids], [target.completion_ids])[0]
    trainer.step(groups, token_advantages=tokens)
    after = teacher_logprobs(model, [target.prompt_ids], [target.completion_ids])[0]
    n = len(target.completion_ids)
    assert float(after[n - 1]) > float(before[n - 1])  # the credited token became more likely
    credit_calls = []
    trainer2 = GRPOTrainer(AutoModelForCausalLM.from_pretrained(tiny_model_dir), tiny_backend.tokenizer,
                           credit=lambda g, a: credit_calls.append(len(a)) or broadcast(g, a))
    trainer2.step(groups)
    assert credit_calls == [4]
