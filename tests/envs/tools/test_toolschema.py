"""Schemas from typed functions, and argument checking against them."""

from __future__ import annotations

from typing import Literal

import pytest

from rollgym.core.toolschema import check_arguments, coerce_arguments, function_schema, parse_docstring
from rollgym.envs.tools.api import REGISTRY


def sample_tool(ctx: object, query: str, limit: int = 10, tags: list[str] | None = None,
                mode: Literal["fast", "slow"] = "fast", price: float | None = None, exact: bool = False) -> dict:
    """Search things.

    A second paragraph.

    Args:
        ctx: Injected.
        query: What to look for,
            over two lines.
        limit: How many.
        tags: Only these tags.
        mode: Speed.
        price: Highest price.
        exact: Exact match only.

    Returns:
        Something.
    """
    return {}


def test_schema_comes_from_signature_and_docstring():
    schema = function_schema(sample_tool, skip=("ctx",))
    fn = schema["function"]
    assert fn["name"] == "sample_tool" and fn["description"] == "Search things. A second paragraph."
    props = fn["parameters"]["properties"]
    assert list(props) == ["query", "limit", "tags", "mode", "price", "exact"]
    assert fn["parameters"]["required"] == ["query"] and fn["parameters"]["additionalProperties"] is False
    assert props["query"] == {"type": "string", "description": "What to look for, over two lines."}
    assert props["limit"]["default"] == 10 and props["limit"]["type"] == "integer"
    assert props["tags"]["type"] == ["array", "null"] and props["tags"]["items"] == {"type": "string"}
    assert props["mode"]["enum"] == ["fast", "slow"]
    assert props["price"]["type"] == ["number", "null"] and "default" not in props["price"]


@pytest.mark.parametrize("args, problem", [
    ({}, "missing required argument(s) 'query'"),
    ({"query": 1}, "must be a string"),
    ({"query": "x", "limit": "3"}, "must be an integer"),
    ({"query": "x", "limit": True}, "must be an integer"),
    ({"query": "x", "tags": "a"}, "must be a JSON list"),
    ({"query": "x", "tags": [1]}, "argument 'tags'[0] must be a string"),
    ({"query": "x", "mode": "medium"}, "must be one of"),
    ({"query": "x", "exact": 1}, "must be true or false"),
    ({"query": "x", "bogus": 1}, "unknown argument(s) 'bogus'"),
    ({"query": None}, "must not be null"),
])
def test_bad_arguments_are_described(args, problem):
    schema = function_schema(sample_tool, skip=("ctx",))
    assert problem in (check_arguments(schema, args) or "")


def test_good_arguments_pass_and_integral_floats_become_ints():
    schema = function_schema(sample_tool, skip=("ctx",))
    args = {"query": "x", "limit": 3.0, "tags": None, "price": 2, "mode": "slow"}
    assert check_arguments(schema, args) is None
    assert coerce_arguments(schema, args)["limit"] == 3 and isinstance(coerce_arguments(schema, args)["limit"], int)


def test_undocumented_or_unannotated_parameters_are_rejected():
    def undocumented(x: int) -> None:
        """Does things."""

    def untyped(x) -> None:  # type: ignore[no-untyped-def]
        """Does things.

        Args:
            x: A thing.
        """

    def nodoc(x: int) -> None:
        pass

    for fn in (undocumented, untyped, nodoc):
        with pytest.raises(TypeError):
            function_schema(fn)


def test_docstring_parser_stops_at_other_sections():
    description, params = parse_docstring(sample_tool.__doc__)
    assert "Returns" not in description and set(params) == {"ctx", "query", "limit", "tags", "mode", "price", "exact"}


def test_every_registered_tool_has_a_schema_and_a_read_write_marking():
    apps: dict[str, int] = {}
    for name, spec in REGISTRY.items():
        assert spec.schema["function"]["name"] == name and spec.description
        assert isinstance(spec.writes, bool)
        apps[spec.app] = apps.get(spec.app, 0) + 1
    for app in ("contacts", "email", "calendar", "payments", "notes", "shopping"):
        assert 8 <= apps[app] <= 25, app
    assert REGISTRY["complete_task"].writes and not REGISTRY["email_search"].writes


def test_out_of_range_and_non_finite_numbers_are_refused():
    schema = function_schema(sample_tool, skip=("ctx",))
    assert "out of range" in check_arguments(schema, {"query": "x", "limit": 2**70})
    assert "finite" in check_arguments(schema, {"query": "x", "price": float("nan")})
    assert "finite" in check_arguments(schema, {"query": "x", "price": float("inf")})
