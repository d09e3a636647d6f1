"""ChatAgent keeps multi-turn tokens exact, and falls back to per-turn rows for history-rewriting templates."""

from __future__ import annotations

import asyncio
import copy

import pytest

from rollgym.agents.backends.base import Generation, SamplingParams
from rollgym.agents.backends.tiny import THINK_STRIPPING_TEMPLATE
from rollgym.agents.chat import ChatAgent, template_preserves_prefix

OBSERVATIONS = ["Reach 24 with 3 8 8.", "Not quite. Try again.", "Last chance."]


def play(agent, observations=OBSERVATIONS, info=None):
    agent.reset(seed=5)
    info = info or {"system_prompt": "Answer briefly."}
    return [agent.act(obs, info) for obs in observations]


def test_loss_mask_marks_exactly_the_sampled_tokens(tiny_backend):
    agent = ChatAgent(tiny_backend, SamplingParams(max_tokens=10))
    play(agent)
    record = agent.token_record()
    assert not record.per_turn_rows and record.token_exact
    assert len(record.completion_ids) == len(record.loss_mask) == len(record.logprobs)
    sampled = [t for t, m in zip(record.completion_ids, record.loss_mask) if m]
    assert sampled == [t for turn in agent.turns for t in turn.output_ids]
    assert all(lp == 0.0 for lp, m in zip(record.logprobs, record.loss_mask) if not m)
    # every later turn saw exactly the earlier tokens: nothing was re-tokenized
    offset = 0
    for turn in agent.turns:
        assert turn.prompt_ids == record.prompt_ids + record.completion_ids[:offset]
        offset += len(turn.output_ids) + len(turn.obs_ids)


def test_env_tokens_are_the_template_suffix_and_decode_to_the_conversation(tiny_backend):
    agent = ChatAgent(tiny_backend, SamplingParams(max_tokens=10))
    play(agent)
    tok = tiny_backend.tokenizer
    for turn, obs in zip(agent.turns, OBSERVATIONS[1:]):
        text = tok.decode(turn.obs_ids)
        assert text.endswith(f"<|im_start|>user\n{obs}<|im_end|>\n<|im_start|>assistant\n")
        closing = "" if turn.finish_reason == "stop" else "<|im_end|>"
        assert text == f"{closing}\n<|im_start|>user\n{obs}<|im_end|>\n<|im_start|>assistant\n"
    whole = tok.decode(agent.token_record().prompt_ids + agent.token_record().completion_ids)
    assert whole.startswith("<|im_start|>system\nAnswer briefly.<|im_end|>\n<|im_start|>user\nReach 24")
    for obs in OBSERVATIONS:
        assert obs in whole


def test_logprobs_match_one_forward_pass_over_the_whole_episode(tiny_backend):
    agent = ChatAgent(tiny_backend, SamplingParams(max_tokens=10))
    play(agent)
    record = agent.token_record()
    again = tiny_backend.logprobs_of(record.prompt_ids, record.completion_ids)
    diffs = [abs(a - b) for a, b, m in zip(again, record.logprobs, record.loss_mask) if m]
    assert diffs and max(diffs) < 1e-4


def test_seeded_episodes_repeat(tiny_backend):
    a, b = ChatAgent(tiny_backend, SamplingParams(max_tokens=8)), ChatAgent(tiny_backend, SamplingParams(max_tokens=8))
    assert play(a) == play(b)
    assert a.token_record().completion_ids == b.token_record().completion_ids


class ForcedReplies:
    """Replies with fixed text, tokenized, scored by the real model: a test double for what it says only."""

    name = "forced"
    policy_version = 3

    def __init__(self, real, tokenizer, replies):
        self.real, self.tokenizer, self.replies = real, tokenizer, list(replies)

    async def generate(self, prompts, sampling):
        text = self.replies.pop(0)
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"] + [self.tokenizer.eos_token_id]
        return [Generation(text=text, token_ids=ids, logprobs=self.real.logprobs_of(list(prompts[0]), ids),
                           finish_reason="stop", policy_version=3, prompt_ids=list(prompts[0]))]


def test_prefix_breaking_template_falls_back_to_one_row_per_turn(tiny_backend):
    tokenizer = copy.deepcopy(tiny_backend.tokenizer)
    tokenizer.chat_template = THINK_STRIPPING_TEMPLATE
    assert template_preserves_prefix(tiny_backend.tokenizer)
    assert not template_preserves_prefix(tokenizer)
    replies = ["<think>\nadd them\n</think>\n(8/(3-8/3))", "<think>\nagain\n</think>\n3*8", "done"]
    agent = ChatAgent(ForcedReplies(tiny_backend, tokenizer, replies), tokenizer=tokenizer)
    play(agent)
    record = agent.token_record()
    assert record.per_turn_rows
    rows = record.training_rows()
    assert len(rows) == 3
    second_prompt = tokenizer.decode(rows[1]["prompt_ids"])
    assert "<think>" not in second_prompt and "(8/(3-8/3))" in second_prompt  # history re-rendered, think stripped
    for row in rows:
        again = tiny_backend.logprobs_of(row["prompt_ids"], row["completion_ids"])
        assert max(abs(a - b) for a, b in zip(again, row["logprobs"])) < 1e-4
        assert row["loss_mask"] == [1] * len(row["completion_ids"])
    assert {t.policy_version for t in agent.turns} == {3}


def test_tools_from_info_reach_the_prompt(tiny_backend):
    agent = ChatAgent(tiny_backend, SamplingParams(max_tokens=4))
    tools = [{"type": "function", "function": {"name": "legal_moves", "parameters": {"type": "object"}}}]
    agent.reset(seed=0)
    agent.act("Your move.", {"system_prompt": "Play chess.", "tools": tools})
    assert "legal_moves" in tiny_backend.tokenizer.decode(agent.turns[0].prompt_ids)


def test_message_mode_without_a_tokenizer(tiny_backend, tiny_server):
    from rollgym.agents.backends.openai_http import OpenAIBackend

    agent = ChatAgent(OpenAIBackend(tiny_server.url), SamplingParams(max_tokens=6))
    assert agent.tokenizer is None
    replies = play(agent, OBSERVATIONS[:2])
    assert len(replies) == 2
    record = agent.token_record()
    assert record.completion_ids  # the server returned token ids
    assert agent.messages[-1]["role"] == "assistant"


def test_http_backend_with_a_tokenizer_is_token_exact(tiny_backend, tiny_server):
    from rollgym.agents.backends.openai_http import OpenAIBackend

    agent = ChatAgent(OpenAIBackend(tiny_server.url), SamplingParams(max_tokens=8), tokenizer=tiny_backend.tokenizer)
    play(agent)
    record = agent.token_record()
    assert record.token_exact and not record.per_turn_rows
    again = tiny_backend.logprobs_of(record.prompt_ids, record.completion_ids)
    diffs = [abs(a - b) for a, b, m in zip(again, record.logprobs, record.loss_mask) if m]
    assert max(diffs) < 1e-4


@pytest.mark.parametrize("n", [3])
def test_agent_forces_one_sample_per_turn(tiny_backend, n):
    agent = ChatAgent(tiny_backend, SamplingParams(max_tokens=4, n=n))
    assert agent.sampling.n == 1
    agent.reset(seed=1)
    asyncio.run(agent.aact("hi", {}))
    assert len(agent.turns) == 1


def test_reply_prefix_is_prompt_tokens_the_model_continues_and_the_env_receives(tiny_backend):
    agent = ChatAgent(tiny_backend, SamplingParams(max_tokens=8), reply_prefix="<answer>")
    replies = play(agent)
    tok = tiny_backend.tokenizer
    prefix_ids = tok.encode("<answer>", add_special_tokens=False)
    record = agent.token_record()
    assert record.token_exact and not record.per_turn_rows
    for reply, turn in zip(replies, agent.turns):
        assert reply.startswith("<answer>")
        assert reply == "<answer>" + turn.text
        assert turn.prompt_ids[-len(prefix_ids):] == prefix_ids  # the model continued from the prefix
    assert record.prompt_ids[-len(prefix_ids):] == prefix_ids
    # later turns' prefixes are env tokens (mask 0), never sampled tokens
    for turn in agent.turns[:-1]:
        assert turn.obs_ids[-len(prefix_ids):] == prefix_ids
    sampled = [t for t, m in zip(record.completion_ids, record.loss_mask) if m]
    assert sampled == [t for turn in agent.turns for t in turn.output_ids]
    # the conversation's tokens are one rendering of it: prefix and reply appear once per turn
    whole = tok.decode(record.prompt_ids + record.completion_ids)
    assert whole.count("<|im_start|>assistant\n<answer>") == len(OBSERVATIONS)
    again = tiny_backend.logprobs_of(record.prompt_ids, record.completion_ids)
    diffs = [abs(a - b) for a, b, m in zip(again, record.logprobs, record.loss_mask) if m]
    assert diffs and max(diffs) < 1e-4


def test_reply_prefix_without_a_tokenizer_is_one_clear_error(tiny_backend, tiny_server):
    from rollgym.agents.backends.openai_http import OpenAIBackend
    from rollgym.core.errors import ConfigError

    with pytest.raises(ConfigError, match="reply_prefix needs the model's tokenizer"):
        ChatAgent(OpenAIBackend(tiny_server.url), reply_prefix="<answer>")
