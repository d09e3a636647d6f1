"""A cached model is served by name only when its files match their hashes; `models pull --to FILE` is one sentence.

Attacks (issue #41): a different model placed in the cache folder, with a manifest that names the pinned
wheel, was served as ``smollm2-135m-instruct``; ``rollgym models pull --to`` naming a file ended in a
traceback. Both run through the public API and the CLI, on the tiny random model (no registry, no hub).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rollgym.agents.backends import catalog
from rollgym.agents.backends.catalog import resolve_model
from rollgym.core.errors import ConfigError

NAME = "smollm2-135m-instruct"


def _forged_manifest(folder: Path, model: catalog.KnownModel) -> dict:
    """A manifest that repeats every pin of ``model`` (old and new fields) and lists ``folder``'s own files."""
    import hashlib

    files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}
    manifest = {"name": model.name, "license": model.license, "files": files,
                "weights_sha256": files.get("model.safetensors")}
    pins = getattr(model, "pins", None)
    manifest.update(pins() if pins else {"wheel_sha256": model.wheel_sha256})  # type: ignore[attr-defined]
    manifest["wheel_sha256"] = manifest.get("wheel_sha256") or manifest["wheel_sha256s"][0]
    return manifest


@pytest.fixture
def planted(tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The tiny random model copied into the cache as ``smollm2-135m-instruct``, with a manifest naming its pins."""
    monkeypatch.setenv("ROLLGYM_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "cache" / "models" / NAME
    shutil.copytree(tiny_model_dir, folder)
    manifest = _forged_manifest(folder, catalog.KNOWN_MODELS[NAME])
    (folder / catalog.MARKER).write_text(json.dumps(manifest))
    return folder


def test_another_model_in_the_cache_folder_is_not_served_under_a_known_name(planted: Path):
    with pytest.raises(ConfigError) as refused:
        resolve_model(NAME)
    message = str(refused.value)
    assert "model.safetensors" in message and "pinned" in message and f"rollgym models pull {NAME}" in message
    assert "\n" not in message

    from rollgym.agents.backends import make_backend

    with pytest.raises(ConfigError, match="does not match its pinned hashes"):
        make_backend(NAME)  # every loader goes through resolve_model


def test_the_cli_refuses_the_planted_model_in_one_sentence(planted: Path):
    env = {**os.environ, "ROLLGYM_CACHE": os.environ["ROLLGYM_CACHE"]}
    done = subprocess.run([sys.executable, "-m", "rollgym.cli", "eval", "Countdown-v0", "--model", NAME, "--n", "1"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1
    assert "pinned hashes" in done.stderr
    listing = subprocess.run([sys.executable, "-m", "rollgym.cli", "models", "list"], capture_output=True,
                             text=True, env=env, timeout=300)
    assert listing.returncode == 0 and f"models pull {NAME}" in listing.stdout  # not listed as cached


def test_pull_to_a_file_is_one_sentence(tmp_path: Path):
    target = tmp_path / "a-file"
    target.write_text("mine")
    env = {**os.environ, "ROLLGYM_CACHE": str(tmp_path / "cache")}
    for to in (target, target / "sub"):
        done = subprocess.run([sys.executable, "-m", "rollgym.cli", "models", "pull", NAME, "--to", str(to),
                               "--find-links", str(tmp_path)], capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
        assert "is a file" in done.stderr
    assert target.read_text() == "mine"
