"""Shared test fixtures.

``require_binary`` and ``require_module`` skip a test with a clear reason on a
developer machine that lacks an optional system tool or package, but fail it in
CI (``CI=true``), where ``.ci/run`` installs everything.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("ROLLGYM_DATA_DIR", REPO.parent / "shared" / "data"))


def require_binary(name: str, *extra_paths: str) -> str:
    """Return the path of a system binary, or skip (fail in CI) when it is missing."""
    found = shutil.which(name) or next((p for p in extra_paths if os.access(p, os.X_OK)), None)
    if found:
        return found
    message = f"{name} is not installed (apt-get install {name}); .ci/run installs it in CI"
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)


def require_module(name: str) -> None:
    """Skip (fail in CI) when an optional Python package is missing."""
    if importlib.util.find_spec(name) is None:
        message = f"Python package {name} is not installed; `make test` installs it"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture
def shared_data() -> Path:
    """The folder with MATH500, AIME24 and AMC23 JSONL files (never copied into the repo)."""
    if not (SHARED_DATA / "math500.jsonl").exists():
        message = f"evaluation data not found in {SHARED_DATA}; set ROLLGYM_DATA_DIR"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return SHARED_DATA
