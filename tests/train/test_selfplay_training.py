"""Role-conditioned advantages (SPIRAL's RAE, per-role GRPO) and training on self-play groups."""

from __future__ import annotations

import pytest

from rollgym.core.errors import ConfigError
from rollgym.envs.games.kuhn import KuhnPoker, NashKuhnBot
from rollgym.rollout.selfplay import collect_seated, split_by_role
from rollgym.rollout.types import RolloutGroup, Trajectory
from rollgym.train.adapters.trl import seated_rows
from rollgym.train.advantages import RoleBaselines, group_advantages, role_advantages


def first_mover_wins(n_games: int, group: str = "g") -> RolloutGroup:
    """A zero-sum game the first seat always wins: the case role baselines exist for."""
    trajs = []
    for e in range(n_games):
        for seat, (role, reward) in enumerate([("first", 1.0), ("second", -1.0)]):
            trajs.append(Trajectory(f"{group}e{e}s{seat}", group, 2 * e + seat, "G-v0", "t", 0, reward=reward,
                                    prompt_ids=[1], completion_ids=[2, 3], loss_mask=[1, 0], logprobs=[-1.0, 0.0],
                                    info={"role": role, "seat": seat}))
    return RolloutGroup(group, None, 2 * n_games, trajs)


def test_rae_follows_spirals_update_then_subtract_rule():
    baselines = RoleBaselines(decay=0.9)
    adv = role_advantages([first_mover_wins(2)], baselines)
    # first role: b = 0.1, then 0.19; A = 1 - b
    assert adv["ge0s0"] == pytest.approx(0.9) and adv["ge1s0"] == pytest.approx(0.81)
    assert adv["ge0s1"] == pytest.approx(-0.9) and adv["ge1s1"] == pytest.approx(-0.81)
    assert baselines.values == pytest.approx({"G-v0/first": 0.19, "G-v0/second": -0.19})
    # the baselines carry over: the first mover's edge fades out of its advantage
    for _ in range(200):
        adv = role_advantages([first_mover_wins(2)], baselines)
    assert abs(adv["ge0s0"]) < 1e-6 and abs(adv["ge0s1"]) < 1e-6


def test_the_shared_group_mean_credits_the_first_mover_and_the_role_baselines_do_not():
    group = first_mover_wins(4)
    shared = group_advantages([group], scale="none")
    per_role = group_advantages(split_by_role([group]), scale="none")
    assert shared["ge0s0"] == 1.0 and shared["ge0s1"] == -1.0
    assert set(per_role.values()) == {0.0}


def test_failed_seats_get_no_advantage_and_leave_the_baselines_alone():
    group = first_mover_wins(1)
    group.trajectories[0].status, group.trajectories[0].reward = "failed", None
    baselines = RoleBaselines()
    assert set(role_advantages([group], baselines)) == {"ge0s1"}
    assert "G-v0/first" not in baselines.values


def test_bad_settings_are_one_sentence_errors():
    pytest.importorskip("torch")
    from rollgym.train.grpo import GRPOConfig

    with pytest.raises(ConfigError, match="advantage must be one of"):
        GRPOConfig(advantage="spiral")
    with pytest.raises(ConfigError, match="rae_decay"):
        GRPOConfig(advantage="rae", rae_decay=1.0)
    with pytest.raises(ConfigError, match="decay"):
        RoleBaselines(decay=-0.1)
    with pytest.raises(ConfigError, match="advantage must be"):
        seated_rows([first_mover_wins(1)], advantage="group")


def test_seated_rows_put_each_role_together_with_its_own_advantage():
    rows = seated_rows([first_mover_wins(3)], advantage="rae", baselines=RoleBaselines(decay=0.5))
    assert rows["group_id"] == ["g/first"] * 3 + ["g/second"] * 3
    assert rows["advantage"] == pytest.approx([0.5, 0.25, 0.125, -0.5, -0.25, -0.125])
    assert rows["env_mask"][0] == [1, 0] and rows["role"][0] == "first"
    real = collect_seated(KuhnPoker, lambda: [NashKuhnBot(seed=0), NashKuhnBot(seed=1)], seeds=[0], group_size=4)
    assert seated_rows(real)["prompt_ids"] == []  # bots have no tokens: nothing to train on


def test_grpo_trainer_takes_a_self_play_step_with_rae_and_checkpoints_the_baselines(tiny_model_dir, tiny_backend,
                                                                                    tmp_path):
    from transformers import AutoModelForCausalLM

    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.chat import ChatAgent
    from rollgym.train.grpo import GRPOConfig, GRPOTrainer

    agent = ChatAgent(tiny_backend, SamplingParams(max_tokens=8))
    groups = collect_seated(lambda: KuhnPoker(max_retries=0, illegal_move_policy="random"),
                            lambda: [agent, agent.spawn()], seeds=[1, 2], group_size=2)
    assert all(t.status == "completed" and t.completion_ids for g in groups for t in g.trajectories)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    trainer = GRPOTrainer(model, tiny_backend.tokenizer, GRPOConfig(advantage="rae", learning_rate=1e-4))
    stats = trainer.step(groups)
    assert stats["rows"] == 8
    assert set(trainer.role_baselines.values) == {"KuhnPoker-v1/first", "KuhnPoker-v1/second"}
    trainer.save_checkpoint(tmp_path / "ck.pt")
    again = GRPOTrainer(AutoModelForCausalLM.from_pretrained(tiny_model_dir), tiny_backend.tokenizer,
                        GRPOConfig(advantage="rae", learning_rate=1e-4))
    again.load_checkpoint(tmp_path / "ck.pt")
    assert again.role_baselines == trainer.role_baselines
    per_role = GRPOTrainer(model, tiny_backend.tokenizer, GRPOConfig(advantage="per_role"))
    adv = per_role.advantages(groups)
    for group in split_by_role(groups):
        assert sum(adv[t.traj_id] for t in group.trajectories) == pytest.approx(0.0, abs=1e-6)
