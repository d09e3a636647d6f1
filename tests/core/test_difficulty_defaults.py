"""Difficulty levels change no registered id's default tasks: fingerprints recorded from main before they existed.

``tests/fixtures/default_tasks.json`` holds, for every id, the SHA-256 of ``task.to_dict()`` for indices 0, 1
and 7 of each split and the index and task that ``reset(seed=s)`` draws for two seeds (see
``tests/default_tasks.py``). A change of a registered id's default tasks fails here; levels must only add.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import default_tasks

RECORDED = json.loads(default_tasks.FIXTURE.read_text(encoding="utf-8"))
NEEDS_DATA = ("MATH", "AIME", "AMC", "HumanEval")
#: The optional packages a family's envs need to be built: without them the test skips (fails in CI).
NEEDS_MODULES = {"math": ("sympy", "math_verify"), "search": ("bm25s",)}


@pytest.mark.parametrize("env_id", sorted(RECORDED))
def test_default_tasks_are_unchanged(env_id: str, request: pytest.FixtureRequest) -> None:
    if env_id.startswith(NEEDS_DATA):
        request.getfixturevalue("shared_data")  # skips (fails in CI) without the evaluation data
    import rollgym
    from tests.conftest import require_module

    for module in NEEDS_MODULES.get(rollgym.env_info(env_id).family, ()):
        require_module(module)
    if env_id.startswith("Chess"):
        require_module("chess")
    assert default_tasks.fingerprint(env_id) == RECORDED[env_id]

