"""Property test of the tool-call parser: it never raises on any text.

It needs hypothesis (the ``dev`` extra): without it this module skips (and fails in CI),
while the plain tests in test_toolcalls.py still run.
"""

# ruff: noqa: E402  (hypothesis is imported after the check that it is installed)
from __future__ import annotations

from tests.conftest import require_module

require_module("hypothesis")

from hypothesis import given
from hypothesis import strategies as st

from rollgym.core import parse_tool_calls


@given(st.text(max_size=500))
def test_parser_never_raises(text):
    parse_tool_calls(text)
    parse_tool_calls("<tool_call>" + text + "</tool_call>")
    parse_tool_calls("[" + text + "]")
