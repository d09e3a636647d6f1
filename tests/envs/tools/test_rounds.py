"""Tool envs count rounds (actions that ran tool calls) apart from the calls themselves."""

from __future__ import annotations

import json

import pytest

import rollgym


def _call(name: str, **arguments: object) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


@pytest.mark.parametrize("env_id", ["ToolWorld-v1", "ToolGen-v0"])
def test_several_calls_in_one_action_are_one_round(env_id):
    env = rollgym.make(env_id, tool_scope="all")
    try:
        _, info = env.reset(seed=0)
        assert (info["rounds"], info["tool_calls"]) == (0, 0)
        names = {t["function"]["name"] for t in info["tools"]}
        reads = sorted(n for n in names if n.endswith("_search"))[:3]  # a call with bad arguments still runs
        assert len(reads) >= 2, sorted(names)
        action = "\n".join(_call(n, query="a") for n in reads)
        observation, _, _, _, info = env.step(action)
        assert observation.count("<tool_response") == len(reads)
        assert (info["rounds"], info["tool_calls"], info["calls"], info["turn"]) == (1, len(reads), len(reads), 1)
        _, _, _, _, info = env.step("<tool_call>{oops</tool_call> no usable call")  # runs nothing: no round
        assert (info["rounds"], info["tool_calls"], info["turn"]) == (1, len(reads), 2)
        _, _, _, _, info = env.step(_call(reads[0], query="b"))
        assert (info["rounds"], info["tool_calls"], info["turn"]) == (2, len(reads) + 1, 3)
        _, info = env.reset(seed=1)
        assert (info["rounds"], info["tool_calls"]) == (0, 0)
    finally:
        env.close()
