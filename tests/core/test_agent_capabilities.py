"""Agent capabilities are declared by protocols and read once (``capabilities``), never probed one by one."""

from __future__ import annotations

from typing import Any

from rollgym.agents import OracleAgent, RandomAgent
from rollgym.agents.backends.base import SamplingParams
from rollgym.agents.chat import ChatAgent
from rollgym.core.agent import AsyncAgent, Capabilities, capabilities


class _SyncOnly:
    name = "sync"

    def reset(self, seed: int | None = None) -> None: ...

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return "x"


class _FakeAsync(_SyncOnly):
    def aact(self, observation: str, info: dict[str, Any]) -> str:  # a plain method named aact is not async
        return "x"


def test_a_plain_agent_declares_nothing() -> None:
    assert capabilities(_SyncOnly()) == Capabilities(False, False, False, False, False, False)


def test_an_aact_that_is_not_a_coroutine_does_not_make_an_agent_asynchronous() -> None:
    assert isinstance(_FakeAsync(), AsyncAgent)  # the protocol only sees the name
    assert not capabilities(_FakeAsync()).asynchronous


def test_reference_agents_declare_what_they_have() -> None:
    assert capabilities(OracleAgent()).checks_env
    assert not capabilities(RandomAgent()).asynchronous


def test_the_chat_agent_declares_every_capability(tiny_backend) -> None:
    caps = capabilities(ChatAgent(tiny_backend, SamplingParams(max_tokens=4)))
    assert caps == Capabilities(True, True, True, True, False, True)
