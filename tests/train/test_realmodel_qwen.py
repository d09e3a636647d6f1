"""The Qwen CodeGen experiment: its settings, the format-only control reward, the distinct held-out set, and a
one-step run on the tiny random model that writes a well-formed results file."""

from __future__ import annotations

import json

import pytest

from research import countdown, get, run_experiment
from research import realmodel_qwen as q
from rollgym.core.errors import ConfigError
from rollgym.rollout.types import Trajectory

RIGHT = "```python\ndef transform(xs):\n    return [x * 2 for x in xs]\n```"
WRONG = "```python\ndef transform(xs):\n    return xs\n```"



def test_the_full_runs_checkpoints_are_keyed_by_the_settings_alone(tmp_path):
    """A long run resumes from ``<settings hash>/<arm>-seed<s>``: the hash covers the settings, not where the
    experiment's code lives, so moving it (rollgym/train/experiments -> research/) resumes the same folders."""
    full = get("realmodel-qwen").configs["full"]
    assert q.checkpoint_dir(full, "grpo", 0, tmp_path) == tmp_path / "fe08935098af" / "grpo-seed0"
    assert q.checkpoint_dir({**full, "grpo_steps": full["grpo_steps"] + 1}, "grpo", 0, tmp_path).parent.name != \
        "fe08935098af"

def test_the_settings_validate_and_the_design_holds():
    exp = get("realmodel-qwen")
    full = exp.configs["full"]
    q.check_settings(full)
    q.check_settings(exp.configs["quick"])
    assert exp.seeds >= 5 and full["eval_tasks"] >= 100
    assert set(exp.arms) == {"base", "grpo", "format"} and ("grpo", "format") in exp.pairs()
    assert full["env_id"] == "CodeGen-v0" and full["model"] == "qwen2.5-coder-0.5b-instruct"
    for bad, said in (({"group_size": 1}, "group_size"), ({"eval_tasks": 0}, "eval_tasks"),
                      ({"dtype": "int8"}, "dtype"), ({"learning_rate": 5}, "learning_rate"),
                      ({"max_tokens": True}, "max_tokens")):
        with pytest.raises(ConfigError, match=said) as caught:
            q.check_settings({**full, **bad})
        assert "\n" not in str(caught.value)
    with pytest.raises(ConfigError, match="lack"):
        q.check_settings({"model": "x"})


def test_the_format_reward_pays_the_format_alone():
    # a right and a wrong function earn the same: the control never sees correctness
    assert q.format_reward(RIGHT, "transform") == q.format_reward(WRONG, "transform") == 1.0
    assert q.format_reward("def transform(xs):\n    return xs", "transform") == 0.0  # no fenced block
    assert q.format_reward("```python\ndef transform(xs)\n    return xs\n```", "transform") == 0.0  # syntax
    assert q.format_reward("```python\ndef other(xs):\n    return xs\n```", "transform") == 0.0  # wrong name
    assert q.format_reward("```python\n\n```", "transform") == 0.0
    assert q.format_reward(None, "transform") == 0.0  # type: ignore[arg-type]
    # through a trajectory: the env's verdict does not move the format reward, and does move the strict one
    def traj(text, reward):
        messages = [{"role": "user", "content": "task"}, {"role": "assistant", "content": text}]
        return Trajectory("t", "g", 0, "CodeGen-v0", None, None, messages=messages,
                          reward=reward, info={"task_meta": {"entry_point": "transform"}})
    assert q.train_reward(traj(RIGHT, 1.0), "format") == q.train_reward(traj(WRONG, 0.0), "format") == 1.0
    assert (q.train_reward(traj(RIGHT, 1.0), "strict"), q.train_reward(traj(WRONG, 0.0), "strict")) == (1.0, 0.0)
    assert q.train_reward(traj(RIGHT, None), "strict") == 0.0


def test_the_held_out_tasks_are_distinct_by_content_and_never_trained_on():
    config = q.BASE
    tasks = q.held_out_tasks(config)
    assert len(tasks) == config["eval_tasks"] >= 100
    keys = [q.content_key(t) for t in tasks]
    assert len(set(keys)) == len(keys)  # distinct functions, not only distinct indices or examples
    assert len({t.prompt for t in tasks}) == len(tasks)
    assert len({t.meta["family"] for t in tasks}) >= 4  # not one family's
    trained = {q.content_key(t) for step in range(2) for t in countdown.train_tasks(config, step, 0)}
    assert not trained & set(keys)
    with pytest.raises(ConfigError, match="distinct tasks"):
        q.held_out_tasks({**config, "env_kwargs": {"steps": 1, "input_size": 10, "tricky": False,
                                                   "families": "list"}, "eval_tasks": 20})


def test_mixed_precision_trains_the_top_blocks_in_float32(tmp_path):
    import torch

    from research.realmodel import freeze_all_but_top
    from rollgym.agents.backends.hf import TransformersBackend
    from rollgym.agents.backends.tiny import build_tiny_model

    backend = TransformersBackend.from_pretrained(str(build_tiny_model(tmp_path / "tiny", seed=0)), dtype="bfloat16")
    model = backend.model
    q.mixed_precision(model, 1)
    names = freeze_all_but_top(model, 1)
    params = dict(model.named_parameters())
    assert names and all(params[n].dtype == torch.float32 for n in names)
    assert model.model.layers[0].self_attn.q_proj.weight.dtype == torch.bfloat16
    ids = torch.tensor([[1, 2, 3, 4]])
    loss = model(input_ids=ids).logits.float().logsumexp(-1).mean()
    loss.backward()
    assert all(params[n].grad is not None for n in names)


def test_a_one_step_tiny_run_writes_a_well_formed_results_file(tmp_path):
    exp = get("realmodel-qwen")
    data = run_experiment(exp, tmp_path, quick=True, progress=False)
    saved = json.loads((tmp_path / "realmodel-qwen.json").read_text())
    assert saved["experiment"] == "realmodel-qwen" and saved["mode"] == "quick"
    start = saved["starting_point"]
    assert start and len(start["warm_state_sha256"]) == 64 and start["tokenizer_sha256"]
    assert {(r["arm"], r["seed"]) for r in saved["runs"]} == {("base", 0), ("format", 0), ("grpo", 0)}
    for r in saved["runs"]:
        assert r["starting_point"]["warm_state_sha256"] == start["warm_state_sha256"]
        assert r["extras"]["held_out_tasks"] == r["extras"]["held_out_distinct"] == 4
        assert abs(sum(r["extras"]["labels"].values()) - 1.0) < 1e-9 and r["extras"]["labels_before"]
    trained = [r for r in saved["runs"] if r["arm"] != "base"]
    assert all(r["cost"]["grpo_steps"] == 1.0 and len(r["extras"]["reward_curve"]) == 1 for r in trained)
    assert [(c["a"], c["b"]) for c in saved["comparisons"] if c["metric"] == saved["metric"]] == list(exp.pairs())
    assert not any(c.get("refused") for c in data["comparisons"])
    assert "distinct by reference solution" in q.render_extra(saved)


def _committed_results() -> dict:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "docs" / "experiments"
    final = root / "realmodel-qwen.json"
    return json.loads((final if final.exists() else root / "landing" / "realmodel-qwen.json").read_text())


def test_readme_states_what_the_committed_results_show():
    """README's first screen carries the sentence rendered from the committed results, so its figures (the base
    score's interval, every seed, the paired differences and their readings) cannot drift from the data."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    claim = q.readme_claim(_committed_results())
    assert claim in " ".join(readme.split()), f"README.md should carry, on its first screen:\n{claim}"
    assert readme.index("Qwen2.5-Coder-0.5B") < readme.index("## Use")


def test_the_readme_claim_follows_the_verdict():
    data = _committed_results()
    gain = next(c for c in data["comparisons"] if (c["a"], c["b"], c["metric"]) == ("grpo", "format", data["metric"]))
    shown = {**data, "comparisons": [{**c, "verdict": "higher"} if c is gain else c for c in data["comparisons"]]}
    assert "gain beyond format is shown" in q.readme_claim(shown)
    assert "gain beyond format is not shown" in q.readme_claim(
        {**data, "comparisons": [{**c, "verdict": "no detectable difference"} if c is gain else c
                                 for c in data["comparisons"]]})
