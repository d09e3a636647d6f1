"""examples/curriculum_grpo.py end to end in its seconds-long ``--quick`` form."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, require_modules

require_modules("torch", "transformers", "tokenizers")

EXAMPLE = REPO / "examples" / "curriculum_grpo.py"


def test_the_quick_run_measures_every_set_and_logs_the_curriculum(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # this checkout's rollgym, whatever is installed
    run = subprocess.run([sys.executable, str(EXAMPLE), "--quick", "--out", str(tmp_path)], capture_output=True,
                         text=True, timeout=600, cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "| tiny model, after GRPO |" in run.stdout
    results = json.loads((tmp_path / "curriculum_grpo.json").read_text())
    assert results["baselines"]["oracle"] == {"train": 1.0, "test": 1.0, "harder": 1.0}
    random = results["baselines"]["random"]
    assert random["harder"] < random["test"] < 0.6  # two numbers are easier to hit by chance than three
    (seed_run,) = results["runs"]
    assert set(seed_run["before"]) == set(seed_run["after"]) == {"train", "test", "harder"}
    assert len(seed_run["steps"]) == results["settings"]["grpo_steps"]
    curriculum = results["curriculum"]
    assert len(curriculum["levels"]) == len(curriculum["decisions"]) == results["settings"]["grpo_steps"]
    assert curriculum["levels"][0] == 0
