"""Partial rollouts (APRIL): over-provisioned steps return exactly the target, park the rest, and
carry them over without losing or mixing up a token; chunked generation is exact.

The tiny model tests slow some tasks down with a fixed per-call latency around the real model
(a test harness, like the fixed-latency policy in bench/), so that some groups finish first."""

from __future__ import annotations

import asyncio
import zlib

import pytest
import rollgym_toyenv  # noqa: F401  (registers ToyGuess-v0)
from test_collector import comparable

from rollgym.core import ConfigError
from rollgym.rollout import collect_async
from rollgym.rollout.episode import EpisodeLimits
from rollgym.rollout.partial import PartialRollouts


class SlowGuesser:
    """Bisects ToyGuess's hidden number; each guess takes longer for larger secrets."""

    name = "slow-guesser"

    def reset(self, seed=None):
        self.seed = seed

    async def aact(self, observation, info):
        low, high = info.get("low", 1), info.get("high", 8)
        await asyncio.sleep(0.004 * (low + high))
        return str((low + high) // 2)

    def act(self, observation, info):  # pragma: no cover - the collector awaits aact
        raise AssertionError("aact should be used")


def test_each_step_returns_the_target_and_carried_episodes_finish_unchanged():
    reference = {g.group_id: g for g in collect_async(SlowGuesser(), "ToyGuess-v0", 12, 2, split="train", seed=3)}
    seen = []
    carried = []
    with PartialRollouts(SlowGuesser(), "ToyGuess-v0", group_size=2, groups_per_step=3, over_provision=2,
                         seed=3) as rollouts:
        for _ in range(4):
            groups = rollouts.step()
            assert len(groups) == 3
            assert all(len(g.trajectories) == 2 for g in groups)
            seen += groups
            carried.append(rollouts.carried)
    assert max(carried) > 0, "over-provisioned episodes were still running when the target was met"
    ids = [g.group_id for g in seen]
    assert len(set(ids)) == len(ids), "a group was returned twice"
    for group in seen:  # a parked and resumed episode plays exactly as an uninterrupted one
        assert comparable([group]) == comparable([reference[group.group_id]])


class SlowTasks:
    """The real tiny model, with 40 ms more per call on tasks whose prompt hashes odd."""

    def __init__(self, inner):
        self.inner = inner
        self.tokenizer = inner.tokenizer
        self.name = "slow-tasks"

    @property
    def policy_version(self):
        return self.inner.policy_version

    @policy_version.setter
    def policy_version(self, value):
        self.inner.policy_version = value

    def slow(self, prompt):
        text = self.tokenizer.decode(prompt, skip_special_tokens=False)
        return zlib.crc32(text.split("<|im_start|>assistant")[0].encode()) % 2 == 1

    async def generate(self, prompts, sampling):
        if any(self.slow(p) for p in prompts):
            await asyncio.sleep(0.04)
        return await self.inner.generate(prompts, sampling)


@pytest.fixture
def versioned_backend(tiny_backend):
    backend = SlowTasks(tiny_backend)
    yield backend
    tiny_backend.policy_version = 0


def _agent(backend, max_tokens=24):
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.chat import ChatAgent

    return ChatAgent(backend, SamplingParams(max_tokens=max_tokens, temperature=1.0))


def test_chunked_generation_is_exact_under_greedy_decoding(tiny_backend):
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.backends.resumable import ResumableBackend

    prompt = tiny_backend.encode([{"role": "user", "content": "Use 3 5 7 to reach 22."}])
    greedy = SamplingParams(max_tokens=30, temperature=0.0)
    whole = asyncio.run(tiny_backend.generate([prompt], greedy))[0]
    chunked = asyncio.run(ResumableBackend(tiny_backend, 7).generate([prompt], greedy))[0]
    assert chunked.token_ids == whole.token_ids
    assert chunked.logprobs == pytest.approx(whole.logprobs, abs=1e-4)
    assert chunked.text == whole.text
    assert chunked.finish_reason == whole.finish_reason
    assert chunked.token_versions == []  # one version: nothing to record per token
    with pytest.raises(ConfigError, match="chunk_tokens"):
        ResumableBackend(tiny_backend, 0)


def test_carried_rollouts_keep_every_token_and_record_each_tokens_version(versioned_backend, tiny_backend):
    from rollgym.agents.backends.resumable import ResumableBackend

    kwargs = {"num_numbers": 3}
    seen = {}
    with PartialRollouts(_agent(versioned_backend), "Countdown-v0", group_size=2, groups_per_step=1,
                         over_provision=4, chunk_tokens=4, env_kwargs=kwargs, seed=1) as rollouts:
        for step in range(6):
            for group in rollouts.step():
                seen[group.group_id] = group
            versioned_backend.policy_version = step + 1  # an update (weights unchanged, so tokens can be compared)
    mixed = [t for g in seen.values() for t in g.trajectories if len(t.metrics.get("policy_versions", [])) > 1]
    assert mixed, "no rollout was carried across an update"
    for traj in mixed:
        turn = traj.turns[0]
        assert len(turn.output_versions) == len(turn.output_ids)
        assert turn.output_versions == sorted(turn.output_versions)
        assert turn.policy_version == turn.output_versions[0] == traj.metrics["policy_versions"][0]
        assert traj.loss_mask.count(1) == len(turn.output_ids) == len(turn.output_logprobs)

    # The same episodes played straight through the same chunked sampling: every token is the same.
    tiny_backend.policy_version = 0
    n_tasks = 1 + max(int(gid.rsplit("-", 1)[1]) for gid in seen)
    straight = collect_async(_agent(ResumableBackend(versioned_backend, 4)), "Countdown-v0", n_tasks, 2,
                             split="train", seed=1, env_kwargs=kwargs)
    by_id = {t.traj_id: t for g in straight for t in g.trajectories}
    for group in seen.values():
        for traj in group.trajectories:
            assert traj.completion_ids == by_id[traj.traj_id].completion_ids
            assert traj.logprobs == pytest.approx(by_id[traj.traj_id].logprobs, abs=1e-4)


def test_max_staleness_replays_rollouts_that_span_too_many_versions(versioned_backend):
    seen = []
    with PartialRollouts(_agent(versioned_backend), "Countdown-v0", group_size=2, groups_per_step=1,
                         over_provision=4, chunk_tokens=4, max_staleness=0, max_restarts=1,
                         env_kwargs={"num_numbers": 3}, seed=1) as rollouts:
        for step in range(10):
            seen += rollouts.step()
            versioned_backend.policy_version = step + 1
            versions = [t.metrics["policy_versions"] for t in seen[-1].usable()]
            assert all(v == [step] for v in versions), f"step {step}: a returned rollout is not on-policy: {versions}"
    trajectories = [t for g in seen for t in g.trajectories]
    replayed = [t for t in trajectories if t.metrics.get("restarts")]
    assert replayed, "no carried rollout was replayed"
    for traj in replayed:
        if not traj.usable:  # still stale after max_restarts: kept, but never scored
            assert traj.status == "aborted" and traj.reward is None and "stale" in traj.info["aborted"]


def test_bad_settings_are_one_clear_error():
    with pytest.raises(ConfigError, match="over_provision"):
        PartialRollouts(SlowGuesser(), "ToyGuess-v0", group_size=2, groups_per_step=1, over_provision=0.5)
    with pytest.raises(ConfigError, match="episode_timeout_s"):
        PartialRollouts(SlowGuesser(), "ToyGuess-v0", group_size=2, groups_per_step=1,
                        limits=EpisodeLimits(episode_timeout_s=5))
    with pytest.raises(ConfigError, match="ChatAgent"):
        PartialRollouts(SlowGuesser(), "ToyGuess-v0", group_size=2, groups_per_step=1, chunk_tokens=8)


def test_the_grpo_trainer_trains_on_partial_rollouts_and_reports_their_staleness(tiny_model_dir):
    import math

    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rollgym.agents.backends.hf import TransformersBackend
    from rollgym.train.grpo import GRPOConfig, GRPOTrainer

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    backend = SlowTasks(TransformersBackend(model, tokenizer))
    trainer = GRPOTrainer(model, tokenizer, GRPOConfig(learning_rate=1e-3))
    stats = []
    with PartialRollouts(_agent(backend, max_tokens=16), "Countdown-v0", group_size=2, groups_per_step=1,
                         over_provision=4, chunk_tokens=4, env_kwargs={"num_numbers": 3}, seed=1) as rollouts:
        for _ in range(5):
            groups = rollouts.step()
            # rewards are all 0 for a random model: give the trainer a signal to push on
            for g in groups:
                for j, t in enumerate(g.trajectories):
                    t.reward = float(j)
            stats.append(trainer.step(groups))
            backend.policy_version = trainer.policy_version
    assert all(math.isfinite(s["loss"]) and s["rows"] == 2 for s in stats)
    assert any(s["stale_token_fraction"] > 0 for s in stats), "no carried tokens reached the trainer"
    assert all(0 <= s["stale_token_fraction"] <= 1 and s["max_token_staleness"] >= 0 for s in stats)
