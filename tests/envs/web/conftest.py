"""Shared fixtures for the web env tests: one Chromium, one server and one env per session."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import require_binary, require_module


@pytest.fixture(scope="session")
def web_runtime() -> Iterator[Any]:
    """The process-wide WebRuntime (skips locally, fails in CI, without Chromium or Playwright)."""
    require_binary("chromium", "/usr/lib/chromium/chromium")
    require_module("playwright")
    from rollgym.envs.web.browser import get_runtime, shutdown_runtime

    runtime = get_runtime()
    yield runtime
    shutdown_runtime()


@pytest.fixture(scope="session")
def web_env(web_runtime: Any) -> Iterator[Any]:
    """One WebGym-v2 env shared by the browser tests (each reset gets a fresh context and database)."""
    import gymnasium as gym

    import rollgym  # noqa: F401

    env = gym.make("WebGym-v2").unwrapped
    yield env
    env.close()
