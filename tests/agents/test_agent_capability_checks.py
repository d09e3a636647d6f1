"""Agents and bots are read through declared protocols where they are accepted, never probed attribute by attribute."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

import rollgym
from rollgym.agents import OracleAgent
from rollgym.agents.backends.base import SamplingParams
from rollgym.agents.capabilities import CAPABILITY_MEMBERS, require_capabilities
from rollgym.agents.chat import ChatAgent
from rollgym.agents.game_bots import BotAgent
from rollgym.core.agent import Capabilities
from rollgym.core.errors import ConfigError

PACKAGE = Path(rollgym.__file__).parent
#: The collection engine's files: its own part of issue 44 checks them (the engine helper's test).
ENGINE = ("rollout/", "vector.py", "train/rollouts.py", "train/adapters/episodes.py")
#: Probes allowed per file: none (the game envs read their bots through the protocols of envs/games/bots.py).
PINNED: dict[str, int] = {}
#: Names under which code holds an agent or a bot (a game opponent is a bot).
HOLDERS = {"agent", "policy", "player", "bot", "opponent"}


class _SyncOnly:
    name = "sync"

    def reset(self, seed: int | None = None) -> None: ...

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return "x"


class _Nameless:
    """Has choose() but no name: not a bot."""

    def choose(self, state: Any, rng: Any) -> Any:
        return state.legal_moves()[0]


def _holder(node: ast.expr) -> str | None:
    """The last name of ``agent``, ``self.agent``, ``self._own_opponent``, ``branch.agent``..."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
    return name.lstrip("_").removeprefix("own_") if name else None


def _probes(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
                and node.args and _holder(node.args[0]) in HOLDERS):
            found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return found


def test_no_agent_or_bot_is_probed_with_getattr_or_hasattr_outside_the_engine() -> None:
    probes = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = str(path.relative_to(PACKAGE))
        found = _probes(path)
        if not name.startswith(ENGINE) and len(found) > PINNED.get(name, 0):
            probes += found
    assert not probes, f"use the protocols of rollgym.core.agent / rollgym.envs.games.bots instead: {probes}"


def test_a_missing_capability_is_one_sentence_naming_what_the_agent_lacks() -> None:
    with pytest.raises(ConfigError) as caught:
        require_capabilities(_SyncOnly(), "asynchronous", purpose="evaluating a --model with the async collector")
    assert str(caught.value) == ("The agent 'sync' cannot be used for evaluating a --model with the async collector: "
                                 "it has no async aact(observation, info).")
    with pytest.raises(ConfigError, match="Unknown agent capability 'flies'"):
        require_capabilities(_SyncOnly(), "flies", purpose="x")


def test_present_capabilities_are_returned_once() -> None:
    chat = ChatAgent(_Backend(), SamplingParams(max_tokens=4))
    found = require_capabilities(chat, "asynchronous", "spawns", "forks", "backed", purpose="tree rollouts")
    assert isinstance(found, Capabilities) and found.asynchronous and found.forks
    assert require_capabilities(OracleAgent(), "checks_env", purpose="x").checks_env
    assert set(CAPABILITY_MEMBERS) == set(Capabilities.__dataclass_fields__)


def test_a_bot_agent_refuses_an_object_that_is_not_a_bot() -> None:
    with pytest.raises(ConfigError, match="name and choose"):
        BotAgent(_Nameless())
    assert BotAgent("greedy").name == "greedy"


class _Backend:
    name = "none"
    policy_version = 0

    async def generate(self, prompts: Any, sampling: SamplingParams) -> list[Any]:
        raise AssertionError("not called")

