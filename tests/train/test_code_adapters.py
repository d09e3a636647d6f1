"""The TRL and verl adapters on the single-turn code envs (HumanEval-v0, CodeGen-v0): rewards come from the
sandboxed graders, a whole batch at a time, and TRL's GRPOTrainer trains on them with a tiny local model."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.conftest import IN_CI, SHARED_DATA, require_binary, require_module

pytestmark = pytest.mark.timeout(600)
CODEGEN = {"families": "list", "steps": 1, "n_tests": 8}


def code_env(env_id: str) -> tuple[dict[str, object], str]:
    """Env kwargs and split of ``env_id``; skips (fails in CI) without bubblewrap or the HumanEval data."""
    require_binary("bwrap")
    if env_id == "CodeGen-v0":
        return dict(CODEGEN), "train"
    path = SHARED_DATA / "humaneval.jsonl"
    if not path.exists():
        if IN_CI:
            pytest.fail(f"humaneval.jsonl not found in {SHARED_DATA}; set ROLLGYM_DATA_DIR")
        pytest.skip(f"humaneval.jsonl not found in {SHARED_DATA}; set ROLLGYM_DATA_DIR")
    return {"path": str(path), "hub": False}, "test"


def right_answer(task: dict) -> str:
    if task["env_id"].startswith("HumanEval"):
        return f"```python\n{task['meta']['code_prompt']}{task['answer']['canonical_solution']}\n```"
    return f"```python\n{task['answer']['reference']}\n```"


def wrong_answers(task: dict) -> list[str]:
    name = task["meta"]["entry_point"]
    return [f"```python\ndef {name}(*args):\n    return None\n```",  # wrong
            f"```python\nclass Any:\n    def __eq__(self, other):\n        return True\n"
            f"def {name}(*args):\n    return Any()\n```",  # a reward hack
            "no code at all"]


@pytest.fixture
def batch_only(monkeypatch):
    """Graders must be called once per batch: one-by-one ``verify`` fails these tests."""
    from rollgym.envs.code.codegen.env import CodeGenEnv
    from rollgym.envs.code.humaneval_env import HumanEvalEnv

    def one_by_one(self, task, response):
        raise AssertionError("the adapter graded one response at a time")

    monkeypatch.setattr(HumanEvalEnv, "verify", one_by_one)
    monkeypatch.setattr(CodeGenEnv, "verify", one_by_one)


@pytest.mark.parametrize("env_id", ["HumanEval-v0", "CodeGen-v0"])
def test_trl_reward_function_grades_a_batch_of_code(env_id, batch_only):
    from rollgym.train.adapters.trl import reward_function, task_rows

    kwargs, split = code_env(env_id)
    rows = task_rows(env_id, 2, split=split, env_kwargs=kwargs)
    tasks = [json.loads(r["task"]) for r in rows]
    completions, columns, expected = [], [], []
    for row, task in zip(rows, tasks):
        for text, want in [(right_answer(task), 1.0)] + [(w, 0.0) for w in wrong_answers(task)]:
            completions.append([{"role": "assistant", "content": text}])
            columns.append(row["task"])
            expected.append(want)
    reward = reward_function(env_id, env_kwargs=kwargs)
    assert reward(prompts=[None] * len(completions), completions=completions, task=columns) == expected
    assert reward(completions=["x", right_answer(tasks[0])], task=[None, rows[0]["task"]]) == [None, 1.0]


@pytest.mark.parametrize("env_id", ["HumanEval-v0", "CodeGen-v0"])
def test_verl_batch_reward_grades_code_and_rows_are_single_turn(env_id, batch_only):
    from rollgym.train.adapters.verl import compute_score_batch, verl_rows

    kwargs, split = code_env(env_id)
    rows = verl_rows(env_id, 2, split=split, env_kwargs=kwargs)
    assert all("agent_name" not in r and r["reward_model"]["style"] == "rule" for r in rows)
    tasks = [json.loads(r["reward_model"]["ground_truth"]) for r in rows]
    answers = [right_answer(tasks[0]), wrong_answers(tasks[0])[1], right_answer(tasks[1]), right_answer(tasks[0])]
    truths = [rows[0], rows[0], rows[1], rows[1]]  # the last: problem 0's solution for problem 1
    scores = compute_score_batch([env_id] * 4, answers, [r["reward_model"]["ground_truth"] for r in truths],
                                 [r["extra_info"] for r in truths])
    assert [s["score"] for s in scores] == [1.0, 0.0, 1.0, 0.0]
    assert [s["acc"] for s in scores] == [1.0, 0.0, 1.0, 0.0]


def test_verl_agent_loop_plays_a_code_task_in_tokens(tiny_backend):
    from rollgym.train.adapters.verl import BackendServerManager, RollgymAgentLoop, verl_rows

    code_env("CodeGen-v0")
    row = verl_rows("CodeGen-v0", 1, env_kwargs=CODEGEN)[0]
    answer = right_answer(json.loads(row["reward_model"]["ground_truth"]))

    class Scripted:  # a server that "samples" the reference solution, token by token
        async def generate(self, request_id, *, prompt_ids, sampling_params):
            return tiny_backend.tokenizer.encode(answer, add_special_tokens=False)

    out = asyncio.run(RollgymAgentLoop(None, Scripted(), tiny_backend.tokenizer).run({"seed": 0}, **row))
    assert out["num_turns"] == 2 and out["extra_fields"]["status"] == "completed"
    assert tiny_backend.tokenizer.decode(out["response_ids"]) == answer and out["reward_score"] == 1.0
    loop = RollgymAgentLoop(None, BackendServerManager(tiny_backend), tiny_backend.tokenizer, max_tokens_per_turn=8)
    out = asyncio.run(loop.run({"temperature": 1.0, "seed": 0}, **row))
    assert out["num_turns"] == 2 and all(m == 1 for m in out["response_mask"])
    assert out["reward_score"] == 0.0  # eight random tokens are not a program
    assert out["prompt_ids"] == tiny_backend.encode(row["prompt"])


@pytest.mark.parametrize("env_id", ["HumanEval-v0", "CodeGen-v0"])
def test_trl_grpo_trainer_trains_on_a_code_env(env_id, tiny_model_dir, tmp_path, batch_only):
    require_module("trl")
    torch = pytest.importorskip("torch")
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from rollgym.train.adapters.trl import completion_text, make_dataset, reward_function

    kwargs, split = code_env(env_id)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    dataset = make_dataset(env_id, 2, split=split, env_kwargs=kwargs)
    verifier = reward_function(env_id, env_kwargs=kwargs)
    graded: list[int] = []

    def spy(prompts, completions, **columns):
        graded.append(len(completions))
        return verifier(prompts, completions, **columns)

    spy.__name__ = verifier.__name__

    def length_bonus(completions, **kwargs):  # a signal for a random model, so that the weights move
        return [len(completion_text(c)) / 50 for c in completions]

    before = torch.cat([p.detach().flatten().clone() for p in model.parameters()])
    args = GRPOConfig(output_dir=str(tmp_path / "out"), use_cpu=True, report_to=[], per_device_train_batch_size=4,
                      num_generations=2, max_completion_length=8, max_steps=2, learning_rate=1e-2, logging_steps=1,
                      save_strategy="no", seed=0, temperature=1.0, disable_tqdm=True, dataloader_num_workers=0)
    trainer = GRPOTrainer(model=model, reward_funcs=[spy, length_bonus], args=args, train_dataset=dataset,
                          processing_class=tokenizer)
    trainer.train()
    assert trainer.state.global_step == 2
    assert graded == [4, 4]  # each step's completions graded in one call
    name = f"rewards/{verifier.__name__}/mean"
    assert [h[name] for h in trainer.state.log_history if name in h] == [0.0, 0.0]  # a random model writes no code
    assert not torch.equal(before, torch.cat([p.detach().flatten() for p in trainer.model.parameters()]))
