"""Backends are chosen by a registered prefix, and every LLM agent is built by one factory."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest

import rollgym  # noqa: F401  (registers the envs)
from rollgym.agents.backends import known_backends, make_backend, register_backend
from rollgym.agents.backends.base import Generation, Prompt, SamplingParams
from rollgym.agents.backends.registry import backend_kind, unregister_backend
from rollgym.agents.chat import ChatAgent, RemoteChatAgent
from rollgym.agents.factory import build_llm_agent, sampling_params
from rollgym.core.errors import ConfigError


class EchoBackend:
    """A chat API that answers every prompt with one fixed reply and records what it was asked."""

    policy_version = 0

    def __init__(self, reply: str, **options: Any) -> None:
        self.name = "echo"
        self.reply = reply
        self.options = options
        self.asked: list[tuple[Prompt, SamplingParams]] = []

    async def generate(self, prompts: list[Prompt], sampling: SamplingParams) -> list[Generation]:
        self.asked += [(p, sampling) for p in prompts]
        return [Generation(text=self.reply) for _ in prompts for _ in range(sampling.n)]


@pytest.fixture
def echo_prefix() -> Iterator[str]:
    register_backend("echo:", lambda spec, **options: EchoBackend(spec.removeprefix("echo:"), **options),
                     help="echo:TEXT, a backend that always answers TEXT")
    yield "echo:"
    unregister_backend("echo:")


def test_a_registered_backend_builds_agents_through_the_factory(echo_prefix: str) -> None:
    agent = build_llm_agent("echo:Final Answer: 42", sampling={"max_tokens": 8, "temperature": 0.0},
                            name="llm:echo", backend_options={"shard": 3})
    assert isinstance(agent, ChatAgent) and isinstance(agent.backend, EchoBackend)
    assert agent.name == "llm:echo" and agent.backend.options == {"shard": 3}
    env = gym.make("Countdown-v0")
    try:
        obs, info = env.reset(seed=0)
        agent.reset(seed=0)
        action = asyncio.run(agent.aact(obs, info))
        env.step(action)
    finally:
        env.close()
    assert action == "Final Answer: 42"
    assert agent.backend.asked[0][1].max_tokens == 8 and agent.backend.asked[0][1].greedy


def test_an_unknown_prefix_is_one_sentence_naming_the_known_ones() -> None:
    with pytest.raises(ConfigError) as caught:
        make_backend("nosuch:model")
    message = str(caught.value)
    assert message.startswith("Unknown backend prefix 'nosuch:'") and message.count(".") <= 2
    for kind in known_backends():
        assert kind.prefix in message
    with pytest.raises(ConfigError, match="Unknown backend prefix 'nosuch:'"):
        build_llm_agent("nosuch:model")


def test_model_strings_map_to_the_built_in_backends() -> None:
    assert backend_kind("http://127.0.0.1:8000/v1").prefix == "http://"
    assert backend_kind("https://api.example.org/v1").prefix == "https://"
    assert backend_kind("vllm:/models/qwen").prefix == "vllm:"
    for local in ("smollm2-135m-instruct", "Qwen/Qwen2.5-0.5B-Instruct", "./runs/ckpt", "hf:smollm2-135m-instruct"):
        assert backend_kind(local).local, local
    assert not backend_kind("http://127.0.0.1:8000/v1").local and not backend_kind("vllm:x").local


def test_a_bad_prefix_cannot_be_registered() -> None:
    with pytest.raises(ConfigError, match="scheme"):
        register_backend("no prefix", lambda spec: EchoBackend(spec), help="?")


def test_draft_needs_a_local_model(echo_prefix: str) -> None:
    with pytest.raises(ConfigError, match="--draft works with a local transformers model only"):
        build_llm_agent("echo:hi", draft="smollm2-135m-instruct")


def test_sampling_settings_keep_unknown_keys_as_extra() -> None:
    params = sampling_params({"max_tokens": 32, "stop": ["</answer>"], "min_p": 0.05})
    assert params == SamplingParams(max_tokens=32, stop=("</answer>",), extra={"min_p": 0.05})
    assert sampling_params(None) == SamplingParams()


def test_remote_chat_agent_builds_its_backend_through_the_registry(tiny_server: Any) -> None:
    agent = RemoteChatAgent(tiny_server.url, sampling=SamplingParams(max_tokens=4), model="tiny")()
    assert isinstance(agent, ChatAgent) and agent.backend.name == "openai"
    assert agent.sampling.max_tokens == 4 and agent.name == "llm" and agent.backend.model == "tiny"
