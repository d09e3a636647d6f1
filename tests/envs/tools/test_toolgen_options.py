"""ToolGen's small-context options: ``kinds`` (only some template kinds) and ``tool_schemas="compact"``.

They are options of ``ToolGen-v0``: the default env draws the same tasks and shows the same schemas as before
(the draw for ``kinds=None`` takes the same path), and a compact schema names the same tools and parameters.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import rollgym
from rollgym.agents.base import OracleAgent
from rollgym.core.errors import ConfigError

SMALL: dict[str, Any] = {"kinds": ["create_party", "create_item"], "distractors": 0, "tool_schemas": "compact"}


def _walk(value: Any) -> list[str]:
    """Every key of a nested JSON value."""
    if isinstance(value, dict):
        return [k for k, v in value.items() for k in (k, *_walk(v))]
    if isinstance(value, list):
        return [k for v in value for k in _walk(v)]
    return []


@pytest.mark.parametrize("split", ["train", "test", "test_unseen"])
def test_kinds_restrict_the_draw_and_the_oracle_still_solves_every_task(split: str) -> None:
    env = rollgym.make("ToolGen-v0", split=split, **SMALL)
    seen = set()
    for index in range(12):
        observation, info = env.reset(options={"task_index": index})
        meta = info["task_meta"]
        seen.add(meta["kind"])
        assert meta["kind"] in SMALL["kinds"] and meta["world"] == meta["apps"]  # no distractor
        agent = OracleAgent()
        for _ in range(10):
            observation, reward, terminated, truncated, info = env.step(agent.act(observation, info))
            if terminated or truncated:
                break
        assert terminated and reward == 1.0, info
    assert seen == set(SMALL["kinds"])
    env.close()


def test_compact_schemas_keep_names_types_and_required_and_halve_the_size() -> None:
    full = rollgym.make("ToolGen-v0", split="test_unseen", distractors=0)
    compact = rollgym.make("ToolGen-v0", split="test_unseen", distractors=0, tool_schemas="compact")
    for index in range(3):
        _, big = full.reset(options={"task_index": index})
        _, small = compact.reset(options={"task_index": index})
        assert [t["function"]["name"] for t in big["tools"]] == [t["function"]["name"] for t in small["tools"]]
        for b, s in zip(big["tools"], small["tools"]):
            bp, sp = b["function"]["parameters"], s["function"]["parameters"]
            assert list(bp["properties"]) == list(sp["properties"]) and bp["required"] == sp["required"]
            for name, spec in bp["properties"].items():
                assert sp["properties"][name]["type"] == spec["type"]
                assert sp["properties"][name].get("enum") == spec.get("enum")
        assert "description" not in _walk(small["tools"]) and "default" not in _walk(small["tools"])
        assert len(json.dumps(small["tools"])) < 0.6 * len(json.dumps(big["tools"]))
    full.close()
    compact.close()


def test_the_default_draw_does_not_depend_on_the_new_options() -> None:
    plain = rollgym.make("ToolGen-v0", split="train")
    spelled = rollgym.make("ToolGen-v0", split="train", kinds=None, tool_schemas="full")
    for index in range(8):
        a, a_info = plain.reset(options={"task_index": index})
        b, b_info = spelled.reset(options={"task_index": index})
        assert plain.unwrapped.task == spelled.unwrapped.task and a == b
        assert a_info["tools"] == b_info["tools"] and a_info["task_meta"] == b_info["task_meta"]
    # the restricted draw is a different sequence of tasks, all of the allowed kinds
    edits = rollgym.make("ToolGen-Edit-v0", split="train", kinds=["delete"])
    assert {edits.reset(options={"task_index": i})[1]["task_meta"]["kind"] for i in range(6)} == {"delete"}
    for env in (plain, spelled, edits):
        env.close()


def test_kinds_narrow_the_difficulty_levels() -> None:
    env = rollgym.make("ToolGen-v0", kinds=["lookup", "create_party", "x_register"])
    assert [level.name for level in env.unwrapped.difficulty.levels] == ["lookup", "edit", "cross_app"]
    assert rollgym.make("ToolGen-v0", **SMALL).unwrapped.difficulty is None  # one group: no levels
    _, info = env.reset(options={"difficulty": 1})
    assert info["task_meta"]["kind"] == "create_party"


@pytest.mark.parametrize(("kwargs", "says"), [
    ({"kinds": ["create_pony"]}, "Unknown template kind(s) ['create_pony']"),
    ({"kinds": "create_party"}, "kinds must be a non-empty list"),
    ({"kinds": []}, "kinds must be a non-empty list"),
    ({"kinds": ["lookup"], "groups": ["edit"]}, "holds the kinds"),
    ({"tool_schemas": "tiny"}, "tool_schemas must be one of full, compact"),
])
def test_option_mistakes_get_one_clear_sentence(kwargs: dict[str, Any], says: str) -> None:
    with pytest.raises(ConfigError, match=None) as caught:
        rollgym.make("ToolGen-v0", **kwargs).reset(options={"task_index": 0})
    assert says in str(caught.value)
