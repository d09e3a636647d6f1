"""A tiny chat model built from a config in a temp folder: no download, a few seconds on a CPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import require_module


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_module("torch")
    require_module("transformers")
    from rollgym.agents.backends.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"), seed=0)


@pytest.fixture(scope="session")
def tiny_backend(tiny_model_dir: Path):
    from rollgym.agents.backends.hf import TransformersBackend

    return TransformersBackend.from_pretrained(str(tiny_model_dir))


@pytest.fixture(scope="session")
def tiny_server(tiny_backend):
    from rollgym.agents.server import ModelServer

    with ModelServer(tiny_backend, model_name="tiny") as server:
        yield server
