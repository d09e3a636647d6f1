"""Every registered id behaves as it did before the refactors of issue 44: same resets, same oracle and random episodes.

``tests/fixtures/behaviour.json`` holds, per id, the digests that ``tests/behaviour.py`` computes (recorded
from main at 7f008fe). A refactor that changes what an id observes, does or scores fails here, naming the
id and the part that moved. A deliberate change of an id is a new ``-vN`` id: record it with
``PYTHONPATH=. python tests/behaviour.py NewId-v0`` (which adds it to the fixture).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import behaviour

RECORDED: dict[str, dict[str, str]] = json.loads(behaviour.FIXTURE.read_text(encoding="utf-8"))
NEEDS_DATA = ("MATH", "AIME", "AMC", "HumanEval")
#: The optional packages a family's envs need to be built: without them the test skips (fails in CI).
NEEDS_MODULES = {"math": ("sympy", "math_verify"), "search": ("bm25s",), "web": ("playwright",)}
WHAT = {
    "reset": "the observation or info of reset(seed=0) / reset(seed=1)",
    "oracle": "the oracle episode (its actions, rewards, terminated/truncated flags or final info)",
    "random": "the random-policy episode (its actions, rewards, terminated/truncated flags or final info)",
}


def _require(env_id: str, request: pytest.FixtureRequest) -> None:
    import rollgym
    from tests.conftest import require_binary, require_module, require_repo_real

    if env_id.startswith(NEEDS_DATA):
        request.getfixturevalue("shared_data")  # skips (fails in CI) without the evaluation data
    family = rollgym.env_info(env_id).family
    for module in NEEDS_MODULES.get(family, ()):
        require_module(module)
    if family == "web":
        require_binary("chromium")
    if env_id.startswith("Chess"):
        require_module("chess")
    if env_id.startswith("RepoRepairReal-"):
        require_repo_real()


def test_every_registered_id_has_a_fingerprint() -> None:
    import rollgym

    # rollgym's own ids (plugins and ids other tests register in this process are not fingerprinted here)
    ids = {info.id for info in rollgym.list_envs()
           if info.family != "test" and str(info.entry_point).startswith("rollgym.")}
    assert not ids - set(RECORDED), (
        f"{sorted(ids - set(RECORDED))} have no behaviour fingerprint: record them with "
        "`PYTHONPATH=. python tests/behaviour.py <id> ...`")


@pytest.mark.slow
@pytest.mark.parametrize("env_id", sorted(RECORDED))
def test_behaviour_is_unchanged(env_id: str, request: pytest.FixtureRequest) -> None:
    import rollgym

    assert env_id in {info.id for info in rollgym.list_envs()}, (
        f"{env_id} is no longer registered; if it was retired on purpose, remove it from {behaviour.FIXTURE.name} "
        "and say so in CHANGELOG.md")
    _require(env_id, request)
    now = behaviour.fingerprint(env_id)
    moved = [part for part in behaviour.PARTS if now.get(part) != RECORDED[env_id].get(part)]
    assert not moved, f"{env_id}: " + "; ".join(f"{WHAT[part]} changed" for part in moved) + (
        ". Behaviour must stay the same under a refactor; a deliberate change is a new -vN id.")
