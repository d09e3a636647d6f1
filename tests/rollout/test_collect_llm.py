"""collect() with the real ChatAgent on a tiny local transformers model: token fields end to end."""

from __future__ import annotations

from pathlib import Path

import pytest
import rollgym_toyenv  # noqa: F401  (registers ToyGuess-v0)

from rollgym.rollout import collect, load_results
from tests.conftest import require_module


@pytest.mark.slow
def test_chat_agent_tokens_flow_into_trajectories_and_the_results_file(tmp_path: Path) -> None:
    require_module("torch")
    require_module("transformers")
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.backends.hf import TransformersBackend
    from rollgym.agents.backends.tiny import build_tiny_model
    from rollgym.agents.chat import ChatAgent

    backend = TransformersBackend.from_pretrained(str(build_tiny_model(tmp_path / "tiny", seed=0)))
    agent = ChatAgent(backend, SamplingParams(max_tokens=6, temperature=1.0))
    out = tmp_path / "llm.jsonl"
    groups = collect(agent, "ToyGuess-v0", n_tasks=2, group_size=2, seed=0, out=str(out), env_kwargs={"max_guesses": 2})
    assert [len(g.trajectories) for g in groups] == [2, 2]
    for traj in (t for g in groups for t in g.trajectories):
        assert traj.status in {"completed", "truncated"}, traj.info.get("failure")
        assert traj.prompt_ids and traj.completion_ids
        assert len(traj.completion_ids) == len(traj.loss_mask) == len(traj.logprobs)
        sampled = [i for i, m in zip(traj.completion_ids, traj.loss_mask) if m == 1]
        assert sampled == [i for turn in traj.turns for i in turn.output_ids]  # the policy's own ids
        assert all(lp == 0.0 for lp, m in zip(traj.logprobs, traj.loss_mask) if m == 0)
        assert any(lp < 0.0 for lp, m in zip(traj.logprobs, traj.loss_mask) if m == 1)
        assert [t.reward for t in traj.turns] == traj.step_rewards
        if len(traj.turns) > 1:
            assert 0 in traj.loss_mask  # the env's hint tokens sit between the turns
    loaded = load_results(out).groups()
    assert [t.completion_ids for g in loaded for t in g.trajectories] == [
        t.completion_ids for g in groups for t in g.trajectories
    ]
