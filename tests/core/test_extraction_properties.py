"""Property test of answer extraction: it never raises on any text.

It needs hypothesis (the ``dev`` extra): without it this module skips (and fails in CI),
while the plain tests in test_extraction.py still run.
"""

# ruff: noqa: E402  (hypothesis is imported after the check that it is installed)
from __future__ import annotations

from tests.conftest import require_module

require_module("hypothesis")

from hypothesis import given
from hypothesis import strategies as st

from rollgym.core import extract_boxed, extract_tag


@given(st.text(max_size=2000))
def test_extractors_never_raise(text):
    for value in (extract_tag(text), extract_boxed(text)):
        assert value is None or isinstance(value, str)
