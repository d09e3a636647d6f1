"""The action allowlist: calls are parsed, never run; unsafe targets are refused."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rollgym.envs.web.actions import Action, ActionError, parse_action, tool_schemas


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("click(12)", Action("click", (12,))),
        ('fill(3, "blue kettle")', Action("fill", (3, "blue kettle"))),
        ("fill('[3]', 'x')", Action("fill", (3, "x"))),
        ('select(9, "Price: low to high")', Action("select", (9, "Price: low to high"))),
        ("check(4)", Action("check", (4,))),
        ('press("Enter")', Action("press", ("Enter",))),
        ('scroll("down")', Action("scroll", ("down",))),
        ('goto("/search?q=lamp")', Action("goto", ("/search?q=lamp",))),
        ("go_back()", Action("go_back", ())),
        ('I think it is done.\nanswer("Acme Pro Kettle")', Action("answer", ("Acme Pro Kettle",))),
        ('answer("I used click(3) to get here")', Action("answer", ("I used click(3) to get here",))),
        ('<tool_call>{"name": "fill", "arguments": {"id": 7, "text": "hi"}}</tool_call>', Action("fill", (7, "hi"))),
    ],
)
def test_allowed_actions_parse(text: str, expected: Action) -> None:
    assert parse_action(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        'goto("javascript:alert(document.cookie)")',
        'goto("JavaScript:void(0)")',
        'goto("http://example.com/")',
        'goto("//example.com/x")',
        'goto("/\\\\example.com")',
        'goto("data:text/html,<script>1</script>")',
        'goto("file:///etc/passwd")',
        'goto("/%2F%2Fexample.com")',
        "click(__import__('os').system('id'))",
        "click(1+1)",
        'evaluate("document.body.innerHTML = 1")',
        'press("F12")',
        'scroll("left")',
        "click(0)",
        "click()",
        "nothing to do",
        'fill(3, "unterminated)',
    ],
)
def test_unsafe_or_malformed_actions_are_refused(text: str) -> None:
    with pytest.raises(ActionError) as info:
        parse_action(text)
    message = str(info.value)
    assert message.endswith(".") and len(message) < 300


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_parser_never_crashes(text: str) -> None:
    try:
        action = parse_action(text)
    except ActionError:
        return
    assert action.verb in {"click", "fill", "select", "check", "press", "scroll", "goto", "go_back", "answer"}


def test_tool_schemas_cover_every_verb() -> None:
    names = [t["function"]["name"] for t in tool_schemas()]
    assert names == ["click", "fill", "select", "check", "press", "scroll", "goto", "go_back", "answer"]
