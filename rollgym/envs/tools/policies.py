"""Reference policies for the tool world: the oracle, a random caller, and a direct solution runner.

The oracle plays a template's reference solution step by step from public
information only: it reads the template name and parameters from
``info["task_meta"]``, sends each call as a Hermes ``<tool_call>`` and reads
the result back from the observation, exactly as an agent would. It never
touches the hidden base world or the expectation.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Generator
from typing import Any

import numpy as np

from rollgym.core.toolcalls import ToolCall, tool_response_bodies
from rollgym.envs.tools.api import Session, call_tool
from rollgym.envs.tools.tasks import TEMPLATES

_MAX_RUNNING = 4096


def _hermes(name: str, arguments: dict[str, Any]) -> str:
    return ToolCall(name, arguments).to_hermes()


def reference_oracle(
    solve: Callable[[dict[str, Any]], Generator[Any, Any, Any]],
) -> Callable[[str, dict[str, Any]], str]:
    """An oracle policy playing ``solve(task_meta)``'s calls one per action, reading each result from the observation.

    One running solution per episode (``info["episode_id"]``), restarted on turn 0; the oldest
    are dropped beyond 4,096 live episodes. ToolWorld and ToolGen differ only in ``solve``.
    """
    running: OrderedDict[str, Generator[Any, Any, Any]] = OrderedDict()

    def policy(observation: str, info: dict[str, Any]) -> str:
        meta = info.get("task_meta") or {}
        key = str(info.get("episode_id") or info.get("task_id"))
        if key not in running or info.get("turn", 0) == 0:
            running[key] = solve(meta)
            while len(running) > _MAX_RUNNING:
                running.popitem(last=False)
            sent: Any = None
        else:
            found = tool_response_bodies(observation)
            sent = json.loads(found[-1]) if found else {}
        try:
            name, arguments = running[key].send(sent)
        except StopIteration as stop:
            running.pop(key, None)
            return _hermes("complete_task", {} if stop.value is None else {"answer": str(stop.value)})
        return _hermes(name, arguments)

    return policy


def drive_reference(solution: Generator[Any, Any, Any], run: Callable[[str, dict[str, Any]], dict[str, Any]]
                    ) -> str | None:
    """Run a reference solution to its end with ``run(name, arguments)`` (JSON round trip); return its answer."""
    sent: Any = None
    try:
        while True:
            name, arguments = solution.send(sent)
            sent = json.loads(json.dumps(run(name, arguments)))
    except StopIteration as stop:
        return None if stop.value is None else str(stop.value)


_oracle = reference_oracle(lambda meta: TEMPLATES[meta["template"]].solve(dict(meta["params"])))


def oracle_policy(observation: str, info: dict[str, Any]) -> str:
    """The next action of the reference solution for this episode (one tool call per action)."""
    return _oracle(observation, info)


def run_reference(template: str, params: dict[str, Any], session: Session) -> str | None:
    """Run a reference solution directly against a session (JSON round trip, no text parsing)."""
    return drive_reference(TEMPLATES[template].solve(dict(params)),
                           lambda name, arguments: call_tool(session, name, arguments))


_WORDS = ["Dana", "inbox", "' OR '1'='1", "2025-03-14", "%", "notes", "", "Dinner", "x" * 30, "archive"]


def _random_value(prop: dict[str, Any], rng: np.random.Generator) -> Any:
    kinds = prop["type"] if isinstance(prop["type"], list) else [prop["type"]]
    if "enum" in prop and rng.random() < 0.9:
        return prop["enum"][int(rng.integers(len(prop["enum"])))]
    kind = kinds[int(rng.integers(len(kinds)))]
    if kind == "integer":
        return int(rng.integers(-2, 200))
    if kind == "number":
        return round(float(rng.uniform(-5, 300)), 2)
    if kind == "boolean":
        return bool(rng.random() < 0.5)
    if kind == "array":
        return [_random_value(prop["items"], rng) for _ in range(int(rng.integers(0, 3)))]
    if kind == "null":
        return None
    return _WORDS[int(rng.integers(len(_WORDS)))]


def random_policy(observation: str, info: dict[str, Any], rng: np.random.Generator) -> str:
    """One to three random tool calls with random (sometimes wrong) arguments; rarely malformed or finishing."""
    tools = [t["function"] for t in info.get("tools", [])]
    roll = rng.random()
    if roll < 0.05:
        return '<tool_call>{"name": "complete_task", "arguments": {"answer": "42"}}</tool_call>'
    if roll < 0.12:
        return '<tool_call>{"name": "email_search", "arguments": {oops</tool_call>'
    calls = []
    for _ in range(int(rng.integers(1, 4))):
        fn = tools[int(rng.integers(len(tools)))]
        if fn["name"] == "complete_task":
            continue
        props = fn["parameters"]["properties"]
        args = {k: _random_value(v, rng) for k, v in props.items()
                if k in fn["parameters"]["required"] or rng.random() < 0.4}
        calls.append(_hermes(fn["name"], args))
    return "\n".join(calls) or "thinking..."
