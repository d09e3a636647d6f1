"""Collector v2: many episodes in flight, honest failures (errors, hangs, garbage), retries, staleness,
token budgets and resume; the tiny model end to end with exact tokens through both backends."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import rollgym_toyenv  # noqa: F401  (registers ToyAdd-v0 and ToyGuess-v0)
from test_collector import comparable

from rollgym.agents import OracleAgent
from rollgym.core import ConfigError
from rollgym.rollout import collect, load_results
from rollgym.rollout.episode import EpisodeLimits
from rollgym.rollout.stream import collect_async, stream


def test_stream_matches_collect_for_a_deterministic_agent():
    a = collect_async(OracleAgent(), "Countdown-v0", 4, 3, seed=2, concurrency=5)
    b = collect(OracleAgent(), "Countdown-v0", 4, 3, seed=2)
    assert comparable(a) == comparable(b)
    assert not any("attempts" in t.metrics for g in a for t in g.trajectories)  # nothing was retried


class SlowAgent:
    """Waits on a fixed latency, like a remote model, and counts how many episodes overlap."""

    name = "slow"
    in_flight = 0
    peak = 0

    def __init__(self, latency=0.05):
        self.latency = latency

    def reset(self, seed=None):
        self.seed = seed

    async def aact(self, observation, info):
        cls = type(self)
        cls.in_flight += 1
        cls.peak = max(cls.peak, cls.in_flight)
        await asyncio.sleep(self.latency)
        cls.in_flight -= 1
        meta = info["task_meta"]
        return str(meta["a"] + meta["b"])

    def act(self, observation, info):  # pragma: no cover - the stream uses aact
        raise AssertionError("aact should be used")


def test_many_episodes_are_in_flight_at_once():
    SlowAgent.peak = 0
    groups = collect_async(SlowAgent(), "ToyAdd-v0", 8, 4, concurrency=16)
    assert SlowAgent.peak == 16
    assert all(t.reward == 1.0 for g in groups for t in g.trajectories)


def test_groups_arrive_as_they_complete_and_share_a_seed():
    async def run():
        return [g async for g in stream(OracleAgent(), "ToyAdd-v0", 5, 3, concurrency=4)]

    groups = asyncio.run(run())
    assert len(groups) == 5
    for g in groups:
        assert len({t.seed for t in g.trajectories}) == 1 and len({t.task_id for t in g.trajectories}) == 1


class Flaky:
    """Raises on its first attempt at each rollout, then answers."""

    name = "flaky"

    def __init__(self):
        self.seen: set[int] = set()

    def spawn(self):
        return self

    def reset(self, seed=None):
        self.seed = seed

    def act(self, observation, info):
        if self.seed not in self.seen:
            self.seen.add(self.seed)
            raise RuntimeError("transient model error")
        meta = info["task_meta"]
        return str(meta["a"] + meta["b"])


def test_failed_rollouts_are_retried_with_the_same_seeds():
    groups = collect_async(Flaky(), "ToyAdd-v0", 3, 2, concurrency=1, retries=1)
    assert all(t.status == "completed" and t.metrics["attempts"] == 2 for g in groups for t in g.trajectories)
    no_retry = collect_async(Flaky(), "ToyAdd-v0", 3, 2, concurrency=1)
    for t in (t for g in no_retry for t in g.trajectories):
        assert t.status == "failed" and t.reward is None and "attempts" not in t.metrics
        assert t.info["failure"]["message"] == "transient model error" and t.info["failure"]["stage"] == "act"


class Hangs:
    name = "hangs"

    def reset(self, seed=None):
        pass

    async def aact(self, observation, info):
        await asyncio.sleep(30)
        return "never"


def test_a_hanging_agent_fails_by_timeout_and_the_run_continues():
    started = time.monotonic()
    groups = collect_async(Hangs(), "ToyAdd-v0", 2, 2, limits=EpisodeLimits(step_timeout_s=0.2))
    assert time.monotonic() - started < 20  # a guard against a hang, not a performance assertion
    for t in (t for g in groups for t in g.trajectories):
        assert t.status == "failed" and t.info["failure"]["type"] == "StepTimeout"


def test_episode_timeout():
    groups = collect_async(Hangs(), "ToyAdd-v0", 1, 1, limits=EpisodeLimits(episode_timeout_s=0.2))
    assert groups[0].trajectories[0].info["failure"]["type"] == "EpisodeTimeout"


class OldPolicy:
    """Claims its tokens came from policy version 0."""

    name = "old"

    def reset(self, seed=None):
        pass

    def act(self, observation, info):
        return "1"

    def token_record(self):
        from rollgym.agents.chat import TokenRecord, TurnRecord

        turn = TurnRecord([1], [2], [-0.1], policy_version=0)
        return TokenRecord([1], [2], [1], [-0.1], [turn], False, True)


def test_stale_rollouts_are_refused():
    groups = collect_async(OldPolicy(), "ToyAdd-v0", 1, 2, policy_version=lambda: 5, max_staleness=2)
    for t in groups[0].trajectories:
        assert t.status == "aborted" and t.reward is None and t.info["aborted"].startswith("stale")
        assert t.metrics["policy_versions"] == [0]
    fresh = collect_async(OldPolicy(), "ToyAdd-v0", 1, 2, policy_version=lambda: 1, max_staleness=2)
    assert all(t.usable for t in fresh[0].trajectories)
    with pytest.raises(ConfigError, match="both policy_version and max_staleness"):
        collect_async(OldPolicy(), "ToyAdd-v0", 1, 1, max_staleness=2)


def test_stream_resumes_from_its_results_file(tmp_path: Path):
    out = tmp_path / "run.jsonl"

    async def first_two():
        got = []
        async for g in stream(OracleAgent(), "ToyAdd-v0", 4, 2, out=str(out), concurrency=1):
            got.append(g)
            if len(got) == 2:
                break
        return got

    partial = asyncio.run(first_two())
    assert len(partial) == 2
    resumed = collect_async(OracleAgent(), "ToyAdd-v0", 4, 2, out=str(out), concurrency=3)
    straight = collect_async(OracleAgent(), "ToyAdd-v0", 4, 2)
    assert comparable(resumed) == comparable(straight)
    assert len(load_results(out).episodes) == 8


# -- the tiny model end to end ----------------------------------------------------------------


def check_tokens(backend, traj):
    assert traj.status in {"completed", "truncated"}, traj.info.get("failure")
    assert len(traj.completion_ids) == len(traj.loss_mask) == len(traj.logprobs) > 0
    again = backend.logprobs_of(traj.prompt_ids, traj.completion_ids)
    diffs = [abs(a - b) for a, b, m in zip(again, traj.logprobs, traj.loss_mask) if m]
    assert diffs and max(diffs) < 1e-4
    assert all(lp == 0.0 for lp, m in zip(traj.logprobs, traj.loss_mask) if not m)


@pytest.mark.parametrize("env_id", ["Countdown-v0", "Sudoku4x4-v0", "ToyGuess-v0", "ConnectFour-v0", "ToolWorld-v1"])
def test_tiny_model_through_the_transformers_backend(tiny_backend, env_id):
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.chat import ChatAgent

    agent = ChatAgent(tiny_backend, SamplingParams(max_tokens=12))
    # ToolWorld's 53 tool schemas make a prompt of thousands of tokens: one short episode is enough
    size = (1, 1, 2) if env_id.startswith("ToolWorld") else (2, 2, 3)
    groups = collect_async(agent, env_id, size[0], size[1], concurrency=4, max_steps=size[2])
    for t in (t for g in groups for t in g.trajectories):
        check_tokens(tiny_backend, t)
        assert t.metrics["policy_versions"] == [0] and t.metrics["num_turns"] >= 1


@pytest.mark.parametrize("env_id", ["Countdown-v0", "Sudoku4x4-v0", "ConnectFour-v0", "ToolWorld-v1"])
def test_tiny_model_through_serve_model_over_http(tiny_backend, tiny_server, env_id):
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.backends.openai_http import OpenAIBackend
    from rollgym.agents.chat import ChatAgent

    agent = ChatAgent(OpenAIBackend(tiny_server.url), SamplingParams(max_tokens=10), tokenizer=tiny_backend.tokenizer)
    size = (1, 1, 2) if env_id.startswith("ToolWorld") else (2, 2, 3)
    groups = collect_async(agent, env_id, size[0], size[1], concurrency=4, max_steps=size[2])
    for t in (t for g in groups for t in g.trajectories):
        check_tokens(tiny_backend, t)


def test_token_budget_truncates_multi_turn_episodes(tiny_backend):
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.chat import ChatAgent

    agent = ChatAgent(tiny_backend, SamplingParams(max_tokens=10))
    groups = collect_async(agent, "ToyGuess-v0", 1, 2, limits=EpisodeLimits(max_steps=20, max_total_tokens=15))
    for t in groups[0].trajectories:
        assert t.status == "truncated" and t.info["truncated_by"] == "token_budget"
        assert len(t.turns) <= 2


class _Broken(BaseHTTPRequestHandler):
    mode = "error"

    def log_message(self, *args):
        return

    def do_GET(self):
        self._send(200, json.dumps({"data": [{"id": "m"}]}).encode())

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.mode == "hang":
            time.sleep(3)
        if self.mode == "error":
            self._send(500, b'{"error": {"message": "model crashed"}}')
        else:
            self._send(200, b'{"choices": "not a list"}')

    def _send(self, status, body):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            pass


@pytest.mark.parametrize(("mode", "message"), [("error", "HTTP 500"), ("garbage", "without 'choices'"),
                                               ("hang", "StepTimeout")])
def test_a_broken_model_server_gives_failed_rollouts_and_the_run_continues(mode, message):
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.backends.openai_http import OpenAIBackend
    from rollgym.agents.chat import ChatAgent

    _Broken.mode = mode
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Broken)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        backend = OpenAIBackend(f"http://127.0.0.1:{server.server_address[1]}", max_retries=0, timeout_s=10)
        agent = ChatAgent(backend, SamplingParams(max_tokens=4))
        groups = collect_async(agent, "ToyAdd-v0", 2, 2, limits=EpisodeLimits(step_timeout_s=1.0))
    finally:
        server.shutdown()
        server.server_close()
    trajectories = [t for g in groups for t in g.trajectories]
    assert len(trajectories) == 4
    for t in trajectories:
        assert t.status == "failed" and t.reward is None
        failure = t.info["failure"]
        assert message in failure["message"] or message == failure["type"], failure
