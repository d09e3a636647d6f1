"""rollgym as a verifiers (0.4.0) taskset: episodes through verifiers' own Env, harness and interception.

The player is verifiers' ``null`` harness (its chat program, launched by uv in the subprocess
runtime) talking through verifiers' interception server to an OpenAI-compatible endpoint: the
tiny model behind ``rollgym serve-model``, or the oracle agent behind a small streaming
chat-completions endpoint below (the oracle needs the task's public info, which it looks up by
the observation the harness sends).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

import rollgym
from rollgym.agents import OracleAgent
from tests.conftest import IN_CI, PostServer, require_module
from tests.serve.conftest import serve_thread

pytestmark = pytest.mark.slow


def _require_harness_runtime() -> None:
    require_module("verifiers")
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
    if shutil.which("uv") is None:  # verifiers launches its harness programs with uv
        message = "uv is not installed (pip install uv; the verifiers extra has it)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    os.environ.setdefault("PRIME_API_KEY", "unused-for-a-local-endpoint")


class OracleEndpoint(PostServer):
    """``POST /v1/chat/completions`` (streamed, as verifiers' chat program asks) answered by the oracle.

    The oracle solves from the task's public info; the endpoint finds it by the first user message,
    which ends with the env's first observation, and counts the assistant turns for ``turn``.
    """

    def __init__(self, infos: dict[str, dict]) -> None:
        self.infos = infos
        self.agent = OracleAgent()
        super().__init__(self._stream, http11=True)

    def _stream(self, body: dict) -> tuple[str, bytes]:
        text = self.answer(body["messages"])
        base = {"id": "chatcmpl-oracle", "object": "chat.completion.chunk", "created": int(time.time()),
                "model": body.get("model", "oracle")}
        chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text},
                                        "finish_reason": None}]},
                  {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                  {**base, "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}]
        return "text/event-stream", b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + \
            b"data: [DONE]\n\n"

    def answer(self, messages: list[dict]) -> str:
        def text(m: dict) -> str:
            content = m.get("content") or ""
            return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)

        users = [text(m) for m in messages if m["role"] == "user"]
        info = next(i for obs, i in self.infos.items() if users[0].endswith(obs))
        turn = sum(1 for m in messages if m["role"] == "assistant")
        return self.agent.act(users[-1], {**info, "turn": turn})


def _run(env, url: str, model: str) -> list:
    from verifiers.v1.clients import ModelContext
    from verifiers.v1.configs.client import EvalClientConfig

    async def main() -> list:
        async with env.serving():
            return [await env.run_episode(task, ModelContext(model=model, client=EvalClientConfig(base_url=url)))
                    for task in env.taskset]

    return asyncio.run(main())


def _reward(episode) -> float:
    (trace,) = episode.traces
    return float(trace.rewards["rollgym_reward"].score)


@pytest.mark.parametrize(("env_id", "remote"), [("Countdown-v0", False), ("ToolWorld-v0", True)])
def test_verifiers_plays_single_and_multi_turn_rollgym_episodes_with_the_oracle(env_id, remote):
    _require_harness_runtime()
    from rollgym.serve.adapters.verifiers_env import load_environment

    infos = {}
    for index in range(2):
        env = rollgym.make(env_id, split="test")
        observation, info = env.reset(options={"task_index": index})
        infos[observation] = info
    oracle = OracleEndpoint(infos)
    try:
        if remote:
            with serve_thread(env_id) as server:
                episodes = _run(load_environment(env_id, n=2, url=server), oracle.url, "oracle")
        else:
            episodes = _run(load_environment(env_id, n=2), oracle.url, "oracle")
    finally:
        oracle.close()
    assert [e.ok for e in episodes] == [True, True], [e.errors for e in episodes]
    assert [_reward(e) for e in episodes] == [1.0, 1.0]
    assert all(e.traces[0].metrics["correct"] == 1.0 for e in episodes)


def test_verifiers_runs_the_tiny_model_through_rollgym_serve_model(tiny_backend):
    _require_harness_runtime()
    from rollgym.agents.server import ModelServer
    from rollgym.serve.adapters.verifiers_env import load_environment

    with ModelServer(tiny_backend, model_name="tiny") as model:
        episodes = _run(load_environment("Countdown-v0", n=1), model.url, "tiny")
    assert episodes[0].ok, episodes[0].errors
    assert _reward(episodes[0]) in (0.0, 1.0)


def test_verifiers_taskset_loads_through_its_plugin_id_and_refuses_unknown_ids():
    require_module("verifiers")
    import verifiers.v1 as vf

    config = vf.resolve_env_config({"taskset": {"id": "rollgym-verifiers", "env_id": "Countdown-v0", "n": 3},
                                    "player": {"runtime": {"type": "subprocess"}}})
    env = vf.load_environment(config)
    tasks = list(env.taskset)
    assert [t.data.task_index for t in tasks] == [0, 1, 2] and type(env).__name__ == "RollgymEnv"
    with pytest.raises(Exception, match="Countdown-v0"):
        list(vf.load_environment(vf.resolve_env_config({"taskset": {"id": "rollgym-verifiers",
                                                                    "env_id": "Countdwn-v0"}})).taskset)
