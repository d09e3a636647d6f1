import json

from rollgym.core import ToolCall, format_tool_response, parse_tool_calls


def test_hermes_blocks_parse_with_surrounding_text():
    text = 'Let me look.\n<tool_call>{"name": "search", "arguments": {"q": "x"}}</tool_call>\n' \
           '<tool_call>{"name": "open", "arguments": {"id": 3}}</tool_call>'
    parsed = parse_tool_calls(text)
    assert [c.name for c in parsed.calls] == ["search", "open"]
    assert parsed.calls[1].arguments == {"id": 3}
    assert parsed.text == "Let me look."
    assert not parsed.errors


def test_openai_style_list_with_string_arguments():
    text = json.dumps([{"type": "function", "id": "c1", "function": {"name": "f", "arguments": '{"a": 1}'}},
                       {"name": "g", "arguments": {}}])
    parsed = parse_tool_calls(text)
    assert parsed.calls == [ToolCall("f", {"a": 1}, "c1"), ToolCall("g", {}, "")]


def test_malformed_calls_become_errors_not_exceptions():
    parsed = parse_tool_calls('<tool_call>{"name": "f", "arguments": [1]}</tool_call><tool_call>nope</tool_call>'
                              '<tool_call>{"arguments": {}}</tool_call>')
    messages = [e.message for e in parsed.errors]
    assert "must be a JSON object" in messages[0]
    assert "not valid JSON" in messages[1]
    assert "missing the tool 'name'" in messages[2]
    assert parsed.found and not parsed.calls


def test_unclosed_block_is_reported():
    assert "not closed" in parse_tool_calls('<tool_call>{"name": "f"}').errors[0].message


def test_plain_text_has_no_calls():
    parsed = parse_tool_calls("The answer is 4.")
    assert not parsed.found and parsed.text == "The answer is 4."
    assert not parse_tool_calls("[1, 2, 3]").found


def test_round_trip_through_hermes_form():
    call = ToolCall("pay", {"to": "dana", "amount": 12.5})
    assert parse_tool_calls(call.to_hermes()).calls[0] == call


def test_format_tool_response():
    assert format_tool_response("f", {"ok": True}) == '<tool_response name="f">\n{"ok": true}\n</tool_response>'


def test_deeply_nested_json_is_an_error_not_a_recursion_error():
    deep = "[" * 100_000 + "]" * 100_000
    for text in (f'<tool_call>{{"name": "f", "arguments": {{"q": {deep}}}}}</tool_call>',
                 f'<tool_call>{{"name": "f", "arguments": "{{\\"q\\": {deep}}}"}}</tool_call>', deep):
        parsed = parse_tool_calls(text)  # must not raise
        assert not parsed.calls
