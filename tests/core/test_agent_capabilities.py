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


def _runtime_protocols() -> list[type]:
    """Every runtime-checkable protocol rollgym defines (the package imported module by module)."""
    import importlib
    import pkgutil

    import rollgym

    found: dict[str, type] = {}
    for module_info in pkgutil.walk_packages(rollgym.__path__, "rollgym."):
        try:
            module = importlib.import_module(module_info.name)
        except Exception:  # a module needing a missing extra has no protocol to check here
            continue
        for value in vars(module).values():
            if isinstance(value, type) and getattr(value, "_is_runtime_protocol", False) \
                    and value.__module__.startswith("rollgym."):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return [found[k] for k in sorted(found)]


def test_conforms_reads_the_members_typing_reads() -> None:
    import typing

    from rollgym.core.agent import protocol_members

    protocols = _runtime_protocols()
    assert len(protocols) >= 10
    for protocol in protocols:
        attrs = getattr(protocol, "__protocol_attrs__", None)  # Python 3.12+
        if attrs is None:
            attrs = typing._get_protocol_attrs(protocol)  # type: ignore[attr-defined]  # Python 3.11
        assert set(protocol_members(protocol)) == set(attrs), protocol


def test_conforms_agrees_with_isinstance_on_every_protocol_and_agent() -> None:
    from rollgym.agents import OracleAgent, RandomAgent
    from rollgym.core.agent import conforms

    class _Fields:
        name = "fields"
        turns: tuple[Any, ...] = ()
        backend = None

        def reset(self, seed: int | None = None) -> None: ...

        def act(self, observation: str, info: dict[str, Any]) -> str:
            return ""

        def choose_move(self, *args: Any) -> Any: ...

        def close(self) -> None: ...

    objects = [_SyncOnly(), _FakeAsync(), OracleAgent(), RandomAgent(), _Fields(), object(), "text", 3, None]
    for protocol in _runtime_protocols():
        for obj in objects:
            assert conforms(obj, protocol) == isinstance(obj, protocol), (protocol, obj)
