"""rollgym inside TRL's own GRPOTrainer: verifier rewards, a multi-turn rollout_func, environment_factory."""

from __future__ import annotations

import json

import pytest

from tests.conftest import require_module

require_module("trl")
require_module("torch")
import torch  # noqa: E402

from rollgym.train.adapters.trl import (  # noqa: E402
    completion_text,
    env_reward,
    environment_factory,
    make_dataset,
    make_rollout_func,
    reward_function,
    task_rows,
)
from tests.train.small_envs import C4, COUNTDOWN  # noqa: E402


def trl_args(tmp_path, **overrides):
    from trl import GRPOConfig

    settings = dict(output_dir=str(tmp_path / "out"), use_cpu=True, report_to=[], per_device_train_batch_size=4,
                    num_generations=2, max_completion_length=8, max_steps=2, learning_rate=1e-2, logging_steps=1,
                    save_strategy="no", seed=0, temperature=1.0, disable_tqdm=True, dataloader_num_workers=0)
    settings.update(overrides)
    return GRPOConfig(**settings)


def fresh(tiny_model_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    tokenizer.padding_side = "left"
    return AutoModelForCausalLM.from_pretrained(tiny_model_dir), tokenizer


def weights(model):
    return torch.cat([p.detach().flatten().clone() for p in model.parameters()])


def test_reward_function_scores_strings_and_messages_with_the_verifier():
    rows = task_rows("Countdown-v0", 3, env_kwargs=COUNTDOWN)
    reward = reward_function("Countdown-v0", env_kwargs=COUNTDOWN)
    meta = [json.loads(r["task"])["meta"] for r in rows]
    solutions = [f"<answer>{json.loads(r['task'])['answer']}</answer>" for r in rows]
    completions = [solutions[0], [{"role": "assistant", "content": solutions[1]}], "<answer>1 + 1</answer>"]
    assert reward(prompts=[r["prompt"] for r in rows], completions=completions, task=[r["task"] for r in rows]) == [
        1.0, 1.0, 0.0]
    assert all(m["numbers"] for m in meta)
    assert reward(completions=["x"], task=[None]) == [None]
    assert completion_text([{"role": "assistant", "content": None}]) == ""
    from rollgym.core import ConfigError

    with pytest.raises(ConfigError, match="task"):
        reward(completions=["x"])
    with pytest.raises(ConfigError, match="multi-turn"):
        reward_function("ConnectFour-v0")


def test_trl_grpo_trainer_trains_with_rollgym_rewards(tiny_model_dir, tmp_path):
    from trl import GRPOTrainer

    model, tokenizer = fresh(tiny_model_dir)
    dataset = make_dataset("Countdown-v0", 4, env_kwargs=COUNTDOWN)
    verifier = reward_function("Countdown-v0", env_kwargs=COUNTDOWN)
    seen = []

    def spy(prompts, completions, **kwargs):
        seen.extend(completions)
        return verifier(prompts, completions, **kwargs)

    spy.__name__ = verifier.__name__

    def length_bonus(completions, **kwargs):  # a signal even for a random model, so the weights must move
        return [len(completion_text(c)) / 50 for c in completions]

    before = weights(model)
    trainer = GRPOTrainer(model=model, reward_funcs=[spy, length_bonus], args=trl_args(tmp_path),
                          train_dataset=dataset, processing_class=tokenizer)
    trainer.train()
    assert trainer.state.global_step == 2
    assert seen and all(isinstance(c, list) and c[0]["role"] == "assistant" for c in seen)
    logged = [h for h in trainer.state.log_history if "rewards/Countdown_v0_reward/mean" in h]
    assert len(logged) == 2
    assert not torch.equal(before, weights(trainer.model))


def test_rollout_func_plays_multi_turn_episodes_token_exactly(tiny_model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    from trl import GRPOTrainer

    model, tokenizer = fresh(tiny_model_dir)
    dataset = make_dataset("ConnectFour-v0", 2, env_kwargs=C4, system_prompt=False)
    rollout = make_rollout_func("ConnectFour-v0", dataset, env_kwargs=C4, max_turns=3, max_tokens_per_turn=6,
                                system_prompt="")
    args = trl_args(tmp_path, max_completion_length=400, learning_rate=5e-2)

    def turns_bonus(num_turns, completion_ids, **kwargs):  # rollout_func's extra columns reach reward functions
        assert all(n >= 1 for n in num_turns)
        return [float(sum(ids) % 7) for ids in completion_ids]  # arbitrary but varying: a gradient signal

    trainer = GRPOTrainer(model=model, reward_funcs=[env_reward, turns_bonus], args=args, train_dataset=dataset,
                          processing_class=tokenizer, rollout_func=rollout)

    prompts = [dataset[0]["prompt"]] * 2 + [dataset[1]["prompt"]] * 2
    trainer.model.train()
    out = rollout(prompts, trainer)
    assert trainer.model.training, "the rollout must leave the trainer's model in training mode"
    assert len(out["completion_ids"]) == 4 and out["group_id"][0] == out["group_id"][1] != out["group_id"][2]
    for ids, mask, lps in zip(out["completion_ids"], out["env_mask"], out["logprobs"]):
        assert len(ids) == len(mask) == len(lps)
        assert all(lp == 0.0 for lp, m in zip(lps, mask) if m == 0)
    multi = [i for i, n in enumerate(out["num_turns"]) if n > 1]
    assert multi, "a random model's answers are unplayable, so the env asks again: episodes must be multi-turn"
    i = multi[0]
    assert 0 in out["env_mask"][i] and out["env_mask"][i][0] == 1
    # token-exact: the recorded logprobs of sampled tokens equal the model's own on the same ids
    prompt, completion = out["prompt_ids"][i], out["completion_ids"][i]
    with torch.no_grad():
        logits = trainer.model(input_ids=torch.tensor([prompt + completion])).logits[0].float()
    logp = torch.log_softmax(logits, -1)
    for j, (tok, m) in enumerate(zip(completion, out["env_mask"][i])):
        if m:
            assert logp[len(prompt) - 1 + j, tok].item() == pytest.approx(out["logprobs"][i][j], abs=1e-3)
    assert all(r is None or r in (0.0, 0.5, 1.0) for r in out["env_reward"])

    before = weights(trainer.model)
    trainer.train()
    assert trainer.state.global_step == 2
    assert not torch.equal(before, weights(trainer.model))
    assert len([h for h in trainer.state.log_history if "rewards/env_reward/mean" in h]) == 2


def test_environment_factory_exposes_env_tools_as_typed_methods():
    from transformers.utils import get_json_schema

    rows = task_rows("ToolWorld-v1", 1)
    tool_env_cls = environment_factory("ToolWorld-v1", max_turns=5)
    env = tool_env_cls()
    assert env.reset(**rows[0]) is None  # the dataset prompt already holds the observation
    schema = get_json_schema(env.contacts_search)["function"]
    assert schema["name"] == "contacts_search" and "query" in schema["parameters"]["properties"]
    assert schema["parameters"]["properties"]["query"]["description"]
    assert not hasattr(env, "submit")
    methods = [n for n in dir(tool_env_cls) if callable(getattr(tool_env_cls, n)) and not n.startswith("_")]
    assert len(methods) > 40 and "complete_task" in methods
    reply = env.contacts_search(query="a")
    assert "tool_response" in reply and env.get_reward() == 0.0
    env.complete_task()
    assert "over" in env.contacts_search(query="a")

    game_cls = environment_factory("ConnectFour-v0", env_kwargs=C4)
    game = game_cls()
    row = task_rows("ConnectFour-v0", 1, env_kwargs=C4, observation_in_prompt=False)[0]
    assert "Connect Four" in game.reset(**row)
    assert get_json_schema(game.submit)["function"]["parameters"]["required"] == ["answer"]
    for _ in range(30):
        if "episode over" in game.submit("Final Answer: 4"):
            break
    assert game.get_reward() in (0.0, 0.5, 1.0)
