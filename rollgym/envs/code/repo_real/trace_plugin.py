"""A pytest plugin that records which source lines each test runs (standard library and pytest only).

The validator copies this file next to a project and loads it with ``-p`` on one clean
run of the project's tests. ``ROLLGYM_TRACE_SOURCES`` (a JSON list of absolute paths)
names the files to watch and ``ROLLGYM_TRACE_OUT`` where the JSON map goes:
``{"outside": {file: [line, ...]}, "tests": {node id: {file: [line, ...]}}}``.

Lines run by a test's call phase are that test's; every other line (imports, collection,
fixture setup and teardown, which may be shared between tests) goes to ``outside``, which
the validator treats as reaching every test. The tracer is installed when the plugin is
imported, before any conftest or test module imports the project, and in new threads.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable, Generator
from types import FrameType
from typing import Any

import pytest

_WATCHED = frozenset(json.loads(os.environ.get("ROLLGYM_TRACE_SOURCES", "[]")))
_OUTSIDE: dict[str, set[int]] = {}
_TESTS: dict[str, dict[str, set[int]]] = {}
_current: dict[str, set[int]] = _OUTSIDE

Tracer = Callable[[FrameType, str, Any], Any]


def _trace(frame: FrameType, event: str, arg: Any) -> Tracer | None:
    """The global tracer: only frames of watched files get a line tracer."""
    filename = frame.f_code.co_filename
    if filename not in _WATCHED:
        return None
    lines = _current.setdefault(filename, set())
    lines.add(frame.f_lineno)
    add = lines.add

    def local(frame: FrameType, event: str, arg: Any) -> Tracer:
        if event == "line":
            add(frame.f_lineno)
        return local

    return local


if _WATCHED:
    sys.settrace(_trace)
    threading.settrace(_trace)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: Any) -> Generator[None, None, None]:
    """Attribute the lines of the call phase to the test's node id."""
    global _current
    _current = _TESTS.setdefault(item.nodeid, {})
    try:
        yield
    finally:
        _current = _OUTSIDE



def pytest_unconfigure(config: Any) -> None:
    """Write the map."""
    sys.settrace(None)
    out = os.environ.get("ROLLGYM_TRACE_OUT")
    if not out:
        return
    data = {"outside": {f: sorted(v) for f, v in _OUTSIDE.items()},
            "tests": {t: {f: sorted(v) for f, v in files.items()} for t, files in _TESTS.items()}}
    with open(out, "w") as handle:
        json.dump(data, handle)
