"""A newcomer's first path (issue #21): the demo's steps and reruns, the leaderboard's size column,
the packaging metadata, old env versions without Gymnasium's warning, and MATH with its oracle."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import rollgym
from tests.conftest import REPO, SHARED_DATA, require_module


def test_the_demo_numbers_its_steps_once_and_a_rerun_replaces_the_leaderboard(tmp_path: Path) -> None:
    from rollgym.leaderboard.demo import run_demo

    out = tmp_path / "demo"
    first: list[str] = []
    run_demo(out, limit=1, log=first.append)
    assert [line.split(" ", 1)[0] for line in first] == ["[1/5]", "[2/5]", "[3/5]", "[4/5]", "[5/5]"]
    assert first[-1].startswith("[5/5] static leaderboard")
    pages = sorted(p.name for p in (out / "site").glob("entry-*.html"))
    bundles = sorted((out / "leaderboard-data").rglob("*.tar.gz"))
    assert len(pages) == 2 and len(bundles) == 2

    again: list[str] = []
    result = run_demo(out, limit=1, log=again.append)
    assert [line.split(" ", 1)[0] for line in again] == ["[1/5]", "[2/5]", "[3/5]", "[4/5]", "[5/5]"]
    assert all(result.verified.values())
    # exactly this run's two submissions: no pile-up of bundles or stale entry pages
    assert len(list((out / "site").glob("entry-*.html"))) == 2
    assert len(list((out / "leaderboard-data").rglob("*.tar.gz"))) == 2
    assert set(p.name for p in (out / "site").glob("entry-*.html")).isdisjoint(pages)

    suite_page = next((out / "site").glob("suite-*.html")).read_text(encoding="utf-8")
    assert suite_page.count("n/a (reference agent)") == 2  # one per row of the table
    assert "reference agents have no model size" in suite_page
    for page in (out / "site").glob("entry-*.html"):
        assert "n/a (reference agent)" in page.read_text(encoding="utf-8")


def test_a_reported_model_size_is_shown_and_a_missing_one_is_blank() -> None:
    from datetime import datetime, timezone

    from rollgym.leaderboard.pages import Row

    def row(**kwargs: object) -> Row:
        fields = {"id": "x", "label": "x", "submitter": "x", "suite": "quick@v2", "score": 0.5, "model_size_b": None,
                  "created": datetime.now(timezone.utc), "summary": {}}
        return Row(**{**fields, **kwargs})  # type: ignore[arg-type]

    assert row(model_size_b=7.0, manifest={"agent": {"kind": "model"}}).size_text() == "7 B"
    assert row(manifest={"agent": {"kind": "reference"}}).size_text() == "n/a (reference agent)"
    assert row(manifest={"agent": {"kind": "model"}}).size_text() == ""


def test_the_licence_is_an_spdx_expression_and_setuptools_does_not_warn() -> None:
    require_module("setuptools")
    from setuptools.config.pyprojecttoml import apply_configuration
    from setuptools.dist import Distribution

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cwd = os.getcwd()
        os.chdir(REPO)  # the readme is read relative to the project
        try:
            dist = apply_configuration(Distribution(), REPO / "pyproject.toml")
        finally:
            os.chdir(cwd)
    assert [str(w.message) for w in caught if "license" in str(w.message).lower()] == []
    assert dist.metadata.license_expression == "Apache-2.0"


@pytest.mark.parametrize("env_id", ["ToolWorld-v0", "MATH500-v0"])
def test_an_older_version_of_an_id_is_made_without_gymnasiums_out_of_date_warning(env_id: str) -> None:
    """rollgym keeps old versions on purpose (results stay comparable): rollgym.make stays quiet about them."""
    assert env_id.replace("-v0", "-v1") in {info.id for info in rollgym.list_envs()}  # there is a newer one
    if env_id.startswith("MATH"):
        require_module("math_verify")
        if not (SHARED_DATA / "math500.jsonl").exists():
            pytest.skip("evaluation data not found; set ROLLGYM_DATA_DIR")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        env = rollgym.make(env_id)
    assert env.spec is not None and env.spec.id == env_id
    env.close()


def test_eval_math500_v0_with_the_oracle_scores_every_task() -> None:
    require_module("math_verify")
    if not (SHARED_DATA / "math500.jsonl").exists():
        pytest.skip("evaluation data not found; set ROLLGYM_DATA_DIR")
    result = subprocess.run(
        [sys.executable, "-m", "rollgym", "eval", "MATH500-v0", "--agent", "oracle", "--n", "20", "--group-size", "1",
         "--json"],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO), "ROLLGYM_DATA_DIR": str(SHARED_DATA)},
    )
    assert result.returncode == 0, result.stderr
    assert "out of date" not in result.stderr
    summary = json.loads(result.stdout)
    assert summary["episodes"] == 20 and summary["accuracy"]["value"] == 1.0, summary
