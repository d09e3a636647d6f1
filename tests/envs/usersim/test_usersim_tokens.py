"""UserSim-v0 through ChatAgent with the tiny test model: both channels (user replies and tool results) extend the
context token for token, and the recorded logprobs are the model's own."""

from __future__ import annotations

from rollgym.agents.backends.base import SamplingParams
from rollgym.agents.chat import ChatAgent
from rollgym.rollout import collect_async


def test_tiny_model_talks_to_the_simulated_user_with_exact_tokens(tiny_backend) -> None:
    agent = ChatAgent(tiny_backend, SamplingParams(max_tokens=12))
    # 52 tool schemas make a prompt of thousands of tokens: two short episodes are enough
    groups = collect_async(agent, "UserSim-v0", 1, 2, concurrency=2, max_steps=3)
    for traj in (t for g in groups for t in g.trajectories):
        assert traj.status in {"completed", "truncated"}, traj.info.get("failure")
        assert len(traj.completion_ids) == len(traj.loss_mask) == len(traj.logprobs) > 0
        again = tiny_backend.logprobs_of(traj.prompt_ids, traj.completion_ids)
        diffs = [abs(a - b) for a, b, m in zip(again, traj.logprobs, traj.loss_mask, strict=True) if m]
        assert diffs and max(diffs) < 1e-4
        assert all(lp == 0.0 for lp, m in zip(traj.logprobs, traj.loss_mask, strict=True) if not m)
        assert 0 in traj.loss_mask  # the env's tokens (the user's reply or a tool result) are in the sequence
        assert traj.metrics["num_turns"] >= 2
