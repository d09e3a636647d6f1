"""Every tool family shows the model its tools in the form its chat template teaches, and the easiest level fits.

The first prompt is rendered as :class:`~rollgym.agents.chat.ChatAgent` renders it, through the real tokenizers
and chat templates of Qwen2.5-Coder-0.5B-Instruct (which shows ``tools``) and SmolLM2-135M-Instruct (which
drops them: the agent lists them in the system prompt). Every tool the task needs (the tools the oracle calls,
or every tool of a family whose tasks need all of them) must appear as a tool entry, and the prompt of the
easiest level must be at most 1,500 tokens. Tokenizers only: no model is loaded.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.conftest import require_module

require_module("transformers")

from rollgym.agents.backends.base import Generation, SamplingParams  # noqa: E402
from rollgym.agents.chat import ChatAgent, template_renders_tools  # noqa: E402
from rollgym.core.errors import ConfigError  # noqa: E402
from rollgym.core.registration import make  # noqa: E402
from rollgym.core.toolcalls import parse_tool_calls  # noqa: E402

MODELS = ("qwen2.5-coder-0.5b-instruct", "smollm2-135m-instruct")
MOST_TOKENS = 1500
SEEDS = (0, 1, 2)


def _oracle(module: str):
    def policy(observation: str, info: dict[str, Any]) -> str:
        import importlib

        return str(importlib.import_module(module).oracle_policy(observation, info))

    return policy


#: (env id, the policy whose tool calls are the task's needs; ``None``: the task needs every tool it shows)
FAMILIES = {
    "ToolWorld-v1": _oracle("rollgym.envs.tools.policies"),
    "ToolGen-v1": _oracle("rollgym.envs.tools.generated.policies"),
    "UserSim-v0": _oracle("rollgym.envs.usersim.policies"),
    "Search-v1": None,
    "TerminalGen-v0": None,
    "Terminal-v0": None,
}


@pytest.fixture(scope="module", params=MODELS)
def tokenizer(request: pytest.FixtureRequest) -> Any:
    from transformers import AutoTokenizer

    from rollgym.agents.backends import catalog

    folder = catalog.model_dir(request.param)
    if not (folder / "tokenizer.json").exists():
        pytest.skip(f"{request.param} is not cached (rollgym models pull {request.param})")
    return AutoTokenizer.from_pretrained(folder)


class RecordingBackend:
    """Records the prompt ids and answers nothing useful: only the first prompt matters here."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.prompts: list[list[int]] = []

    async def generate(self, prompts, sampling):
        self.prompts.extend(list(p) for p in prompts)
        return [Generation(text="ok", token_ids=[0], logprobs=[0.0], finish_reason="stop", policy_version=0)
                for _ in prompts]


def easiest_reset(env: Any, seed: int) -> tuple[str, dict[str, Any]]:
    options = {"difficulty": 0} if env.unwrapped.difficulty is not None else None
    return env.reset(seed=seed, options=options)


def needed_tools(env_id: str, seed: int) -> set[str]:
    """The tools the task needs: those its oracle calls when it plays the episode, or every tool shown."""
    policy = FAMILIES[env_id]
    env = make(env_id)
    try:
        observation, info = easiest_reset(env, seed)
        if policy is None:
            return {t["function"]["name"] for t in info["tools"]}
        names: set[str] = set()
        for _ in range(80):
            action = policy(observation, info)
            names |= {call.name for call in parse_tool_calls(action).calls}
            observation, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                assert info["correct"], f"the {env_id} oracle did not solve its task"
                return names
        raise AssertionError(f"the {env_id} oracle did not finish in 80 actions")
    finally:
        env.close()


def first_prompt(env_id: str, seed: int, tokenizer: Any) -> tuple[str, list[int]]:
    env = make(env_id)
    try:
        observation, info = easiest_reset(env, seed)
        backend = RecordingBackend(tokenizer)
        agent = ChatAgent(backend, SamplingParams(max_tokens=8), tokenizer=tokenizer)
        asyncio.run(agent.aact(observation, info))
    finally:
        env.close()
    ids = backend.prompts[0]
    return tokenizer.decode(ids), ids


def shown_as_tool(text: str, name: str) -> bool:
    """Whether ``name`` is a tool entry of the prompt: in the template's JSON tools or the agent's listing."""
    return f'"name": "{name}"' in text or f"\n- {name}(" in text


@pytest.mark.parametrize("env_id", list(FAMILIES))
def test_the_easiest_level_shows_every_needed_tool_within_1500_tokens(env_id: str, tokenizer: Any) -> None:
    for seed in SEEDS:
        needed = needed_tools(env_id, seed)
        assert needed, env_id
        text, ids = first_prompt(env_id, seed, tokenizer)
        missing = sorted(n for n in needed if not shown_as_tool(text, n))
        assert not missing, f"{env_id} seed {seed}: the prompt does not show {missing}"
        assert len(ids) <= MOST_TOKENS, f"{env_id} seed {seed}: {len(ids)} prompt tokens"


def test_the_probe_finds_which_templates_render_tools(tokenizer: Any) -> None:
    renders = "qwen" in tokenizer.name_or_path
    assert template_renders_tools(tokenizer) is renders
    text, _ = first_prompt("ToolWorld-v1", 0, tokenizer)
    system = text.split("<|im_end|>", 1)[0]
    # the listing goes into the system prompt only where the template would drop the tools
    assert ("\n# Tools\nCall a tool by writing" in system) is not renders
    assert ("<tools>" in system) is renders


def test_tool_scope_lists_the_tasks_tools_or_every_tool() -> None:
    with make("ToolWorld-v1") as env:
        _, info = env.reset(seed=0)
        every = len(info["tools"])
        assert every > 40  # a default draw shows every tool, as before
        _, info = env.reset(seed=0, options={"difficulty": 0})
        assert 2 <= len(info["tools"]) <= 4 and info["tools"][-1]["function"]["name"] == "complete_task"
        assert all("additionalProperties" not in t["function"]["parameters"] for t in info["tools"])
        _, info = env.reset(seed=0, options={"difficulty": 1})
        assert len(info["tools"]) == every
    with make("ToolWorld-v1", tool_scope="all") as env:
        assert len(env.reset(seed=0, options={"difficulty": 0})[1]["tools"]) == every
    with make("ToolWorld-v1", tool_scope="task") as env:
        assert len(env.reset(seed=0)[1]["tools"]) < 10
    for env_id in ("ToolWorld-v1", "ToolGen-v0", "UserSim-v0"):
        with pytest.raises(ConfigError, match="tool_scope must be one of auto, all, task"):
            make(env_id, tool_scope="some")


def test_a_tool_left_out_of_the_listing_still_runs() -> None:
    with make("ToolWorld-v1", tool_scope="task") as env:
        _, info = env.reset(seed=0)
        shown = {t["function"]["name"] for t in info["tools"]}
        hidden = next(n for n in ("notes_search", "shop_search", "email_search") if n not in shown)
        observation, *_ = env.step(f'<tool_call>{{"name": "{hidden}", "arguments": {{"query": "a"}}}}</tool_call>')
        assert "unknown_tool" not in observation and '"error"' not in observation
        # and a name that is no tool at all is still refused
        observation, *_ = env.step('<tool_call>{"name": "no_such_tool", "arguments": {}}</tool_call>')
        assert "unknown_tool" in observation


def test_without_a_tokenizer_the_tools_go_into_the_system_prompt() -> None:
    class MessagesBackend:  # a chat API: it receives messages and sends no tools
        def __init__(self) -> None:
            self.prompts: list[Any] = []

        async def generate(self, prompts, sampling):
            self.prompts.extend(prompts)
            return [Generation(text="ok", token_ids=[], logprobs=[], finish_reason="stop", policy_version=0)]

    backend = MessagesBackend()
    with make("ToolWorld-v1") as env:
        observation, info = env.reset(seed=0, options={"difficulty": 0})
        ChatAgent(backend, SamplingParams(max_tokens=8)).act(observation, info)
    system = backend.prompts[0][0]
    assert system["role"] == "system" and system["content"].startswith(info["system_prompt"])
    for tool in info["tools"]:
        assert f"\n- {tool['function']['name']}(" in system["content"]
