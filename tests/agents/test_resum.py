"""ReSum's summarize-and-continue: the summary replaces the context, exact token records, summary branch points."""

from __future__ import annotations

import asyncio
from typing import Any

import gymnasium as gym
import pytest

from rollgym.agents.backends.base import SamplingParams
from rollgym.agents.chat import ChatAgent
from rollgym.agents.resum import SUMMARY_PROMPT, SummarizingAgent
from rollgym.core.errors import ConfigError
from rollgym.rollout.branching import Branch
from rollgym.rollout.resum import grow_resum_tree, summary_points
from rollgym.rollout.types import RolloutGroup
from rollgym.train.grpo import rows_from_groups

TASK = "Remember every number I give you, then add them up. Number 1 is 47."


class Numbers(gym.Env):  # type: ignore[type-arg]
    """Five observations of one number each; the episode ends after the fifth reply (reward 1 if it holds the sum)."""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self.step_count = 0
        return TASK, {"system_prompt": "You keep track of numbers."}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self.step_count += 1
        done = self.step_count >= 5
        observation = "" if done else f"Number {self.step_count + 1} is {10 + 7 * self.step_count}. Noted?"
        return observation, float(done and "117" in action), done, False, {}


def _play(agent: Any, seed: int = 0) -> Any:
    root = Branch.start(Numbers(), agent, seed=seed, agent_seed=seed, traj_id="t", group_id="g")
    return asyncio.run(root.aplay())


def _agent(backend: Any, window: int) -> SummarizingAgent:
    return SummarizingAgent(backend, SamplingParams(max_tokens=10), window=window, summary_tokens=12)


def test_the_summary_replaces_the_context(tiny_backend: Any) -> None:
    agent = _agent(tiny_backend, window=90)
    traj = _play(agent)
    assert agent.summary_turns, "the context should have outgrown the window"
    decode = tiny_backend.tokenizer.decode
    first = agent.summary_turns[0]
    request = decode(agent.turns[first].prompt_ids)
    assert SUMMARY_PROMPT in request and "Number 1 is 47" in request  # the whole conversation, then the request
    after = decode(agent.turns[first + 1].prompt_ids)  # the reply right after the summary
    assert TASK in after and agent.summaries[0] in after  # the task and the summary ...
    assert SUMMARY_PROMPT not in after and "Noted?" not in after  # ... and nothing of the cleared conversation
    assert len(agent.turns[first + 1].prompt_ids) < len(agent.turns[first].prompt_ids)
    assert traj.metrics["per_turn_rows"] and traj.status == "completed"
    assert len(traj.turns) == traj.metrics["num_turns"] + len(agent.summary_turns)  # the summary is not an action


def test_the_token_record_stays_exact(tiny_backend: Any) -> None:
    agent = _agent(tiny_backend, window=90)
    traj = _play(agent, seed=1)
    rows = rows_from_groups([RolloutGroup("g", None, 1, [traj])], {traj.traj_id: 1.0})
    assert len(rows) == len(traj.turns)  # every reply and every summary is a row, each with its own context
    request_ids = tiny_backend.tokenizer.encode(SUMMARY_PROMPT, add_special_tokens=False)
    for row, turn in zip(rows, traj.turns):
        assert row.prompt_ids == turn.prompt_ids and row.completion_ids == turn.output_ids
        assert row.loss_mask == [1] * len(turn.output_ids)  # summaries and replies: model tokens, trained
        again = tiny_backend.logprobs_of(row.prompt_ids, row.completion_ids)
        assert max(abs(a - b) for a, b in zip(again, row.old_logprobs)) < 1e-4  # sampled from exactly that context
    summary_rows = [rows[i] for i in agent.summary_turns]
    # the injected request is in the summary's prompt, never in a completion
    assert all(_contains(r.prompt_ids, request_ids[:8]) for r in summary_rows)
    assert not any(_contains(r.completion_ids, request_ids[:8]) for r in rows)


def _contains(ids: list[int], part: list[int]) -> bool:
    return any(ids[i:i + len(part)] == part for i in range(len(ids) - len(part) + 1))


def test_a_window_never_reached_is_the_plain_chat_agent(tiny_backend: Any) -> None:
    plain = _play(ChatAgent(tiny_backend, SamplingParams(max_tokens=10)), seed=2)
    never = _play(_agent(tiny_backend, window=10**6), seed=2)
    assert (never.prompt_ids, never.completion_ids, never.loss_mask, never.logprobs) == \
        (plain.prompt_ids, plain.completion_ids, plain.loss_mask, plain.logprobs)
    assert not never.metrics.get("per_turn_rows")


def test_summary_points_are_branch_points(tiny_backend: Any) -> None:
    trajs = grow_resum_tree(Numbers(), _agent(tiny_backend, window=90), seed=0, roots=1, redraws=1,
                            agent_seed=3, group_id="g")
    root, branches = trajs[0], trajs[1:]
    assert root.metrics["summaries"] >= 1
    kinds = [b.metrics["resum_branch"] for b in branches]
    assert kinds.count("redraw") == kinds.count("masked") == root.metrics["summaries"]
    for b in branches:
        shared = b.metrics["shared_turns"]
        assert b.parent_id == root.traj_id
        assert [(t.prompt_ids, t.output_ids, t.output_logprobs) for t in b.turns[:shared]] == \
            [(t.prompt_ids, t.output_ids, t.output_logprobs) for t in root.turns[:shared]]  # the parent's turns
        rows = rows_from_groups([RolloutGroup("g", None, 1, [b])], {b.traj_id: 1.0})
        assert len(rows) == len(b.turns) - shared  # the shared turns are trained once, in the parent
        assert [r.completion_ids for r in rows] == [t.output_ids for t in b.turns[shared:]]
    masked = next(b for b in branches if b.metrics["resum_branch"] == "masked")
    k = masked.metrics["shared_turns"]
    # at the summary point the masked branch replies from its whole context instead of summarizing
    context = tiny_backend.tokenizer.decode(masked.turns[k].prompt_ids)
    assert SUMMARY_PROMPT not in context and "Noted?" in context  # no request, the latest observation kept
    assert k in [i for i in range(len(root.turns)) if SUMMARY_PROMPT in tiny_backend.tokenizer.decode(
        root.turns[i].prompt_ids)]  # where the root summarized
    assert summary_points(type("A", (), {"summary_turns": [2, 5]})()) == [2, 4]


def test_bad_settings_say_which() -> None:
    class NoTokenizer:
        tokenizer = None

    with pytest.raises(ConfigError, match="tokenizer"):
        SummarizingAgent(NoTokenizer(), window=10)  # type: ignore[arg-type]


def test_the_experiment_counts_answers_only_while_replies_and_summaries_fit_the_budget() -> None:
    from types import SimpleNamespace

    from research.resum import solved_within

    turns = [SimpleNamespace(output_ids=[1] * n) for n in (5, 6, 5)]  # an answer, a summary, an answer
    traj = SimpleNamespace(step_rewards=[0.0, 1.0], metrics={"summary_turns": [1]})
    assert solved_within(traj, turns, 16) == (True, 2, 1)  # 5 + 6 + 5: the second answer fits, and is right
    assert solved_within(traj, turns, 15) == (False, 1, 1)  # the summary's tokens count: the right answer does not
    assert solved_within(traj, turns, 10) == (False, 1, 0)  # fit, nor the summary with 10
