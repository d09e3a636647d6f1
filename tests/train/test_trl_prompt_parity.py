"""TRL's twin samples from the very prompt ids rollgym's ChatAgent samples from (the ``<answer>`` prefill continued).

TRL renders a conversational prompt with ``add_generation_prompt=True``, which closes a final assistant
message (the prefill) as its own turn; ``run_trl_grpo`` hands TRL the agent's prompt as text instead. These
tests read the ids from TRL's own code: what ``model.generate`` receives inside ``run_trl_grpo`` (tiny model),
and what ``GRPOTrainer._tokenize_prompts`` gives for the real tokenizers (cached models only).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.conftest import require_module

require_module("torch")
require_module("trl")
import torch  # noqa: E402

from research.realmodel import BASE, trl_messages  # noqa: E402
from rollgym.agents.backends.base import Generation, SamplingParams  # noqa: E402
from rollgym.agents.chat import ChatAgent  # noqa: E402
from rollgym.core.registration import make  # noqa: E402
from rollgym.train.adapters.trl import run_trl_grpo, trl_prompt_text  # noqa: E402

REAL_MODELS = ("smollm2-135m-instruct", "qwen2.5-coder-0.5b-instruct")


class RecordingBackend:
    """A backend that records the prompt ids it is asked to continue and closes the answer block."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self.prompts: list[list[int]] = []

    async def generate(self, prompts, sampling):
        self.prompts.extend(list(p) for p in prompts)
        ids = list(self.tokenizer("1 + 2</answer>", add_special_tokens=False)["input_ids"])
        return [Generation(text="1 + 2</answer>", token_ids=ids, logprobs=[0.0] * len(ids), finish_reason="stop",
                           policy_version=0) for _ in prompts]


def countdown_prompt():
    """The realmodel experiment's env and one of its training tasks, as both arms see it."""
    env = make(BASE["env_id"], **BASE["env_kwargs"])
    observation, info = env.reset(seed=3)
    return env, observation, info


def agent_ids(tokenizer, observation, info) -> list[int]:
    """The ids rollgym's arm samples from: a ChatAgent with the experiment's reply prefix."""
    backend = RecordingBackend(tokenizer)
    agent = ChatAgent(backend, SamplingParams(max_tokens=BASE["max_tokens"]), tokenizer=tokenizer,
                      reply_prefix=BASE["reply_prefix"])
    asyncio.run(agent.aact(observation, info))
    return backend.prompts[0]


def test_trl_generates_from_the_agents_prompt_ids(tiny_model_dir: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    env, observation, info = countdown_prompt()
    task = env.unwrapped.task
    seen: list[list[int]] = []
    original = model.generate

    def recording_generate(*args, **kwargs):  # the ids TRL's sampling really starts from
        for ids, mask in zip(kwargs["input_ids"], kwargs["attention_mask"]):
            seen.append([int(t) for t, m in zip(ids.tolist(), mask.tolist()) if m])
        return original(*args, **kwargs)

    model.generate = recording_generate
    result = run_trl_grpo(model, tokenizer, step_prompts=lambda _k: [(trl_messages(observation, info, BASE), task)],
                          reward=lambda text, _task: float(len(text) % 2), steps=1, group_size=2,
                          learning_rate=1e-3, max_tokens=2, temperature=1.0, seed=0, micro_batch_size=2)
    env.close()
    expected = agent_ids(tokenizer, observation, info)
    assert seen and all(ids == expected for ids in seen)
    text = tokenizer.decode(expected)
    assert text.endswith("assistant\n" + BASE["reply_prefix"])  # the prefill is continued, not closed
    assert result["trl_version"] == __import__("trl").__version__


@pytest.mark.parametrize("name", REAL_MODELS)
def test_trl_tokenizes_the_agents_prompt_for_the_real_tokenizers(name: str, tiny_model_dir: Path, tmp_path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from rollgym.agents.backends import catalog

    folder = catalog.model_dir(name)
    if not (folder / "tokenizer.json").exists():
        pytest.skip(f"{name} is not cached (rollgym models pull {name})")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    env, observation, info = countdown_prompt()
    env.close()
    messages = trl_messages(observation, info, BASE)
    # TRL's own prompt processing, on a trainer whose processing class is the real tokenizer (the tiny model
    # only fills the trainer's model slot: nothing is generated)
    import datasets

    args = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to=[], per_device_train_batch_size=2,
                      num_generations=2, max_completion_length=4, max_steps=1, save_strategy="no",
                      disable_tqdm=True, dataloader_num_workers=0)
    trainer = GRPOTrainer(model=AutoModelForCausalLM.from_pretrained(tiny_model_dir), reward_funcs=[lambda **_: [0.0]],
                          args=args, processing_class=tokenizer,
                          train_dataset=datasets.Dataset.from_list([{"prompt": "x"}] * 2))
    expected = agent_ids(tokenizer, observation, info)
    ours, _, _ = trainer._tokenize_prompts([trl_prompt_text(tokenizer, messages)])
    assert list(ours[0]) == expected
    # the conversational form, as the twin passed it before, closes the prefill as its own turn
    closed, _, _ = trainer._tokenize_prompts([messages])
    assert list(closed[0]) != expected
    assert tokenizer.decode(closed[0]).endswith("<answer><|im_end|>\n<|im_start|>assistant\n")
