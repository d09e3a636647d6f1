"""examples/collect_countdown.py runs, writes a results file, and resumes from it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rollgym.rollout import load_results

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "collect_countdown.py"


def test_the_collect_example_runs_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "countdown.jsonl"
    first = subprocess.run([sys.executable, str(EXAMPLE), str(out)], capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    assert "advantages" in first.stdout and "32 episodes" in first.stdout
    groups = load_results(out).groups()
    assert len(groups) == 8 and all(len(g.trajectories) == 4 for g in groups)
    rewards = {t.reward for g in groups for t in g.trajectories}
    assert rewards == {0.0, 1.0}  # half oracle, half random: both outcomes occur
    size = out.stat().st_size
    again = subprocess.run([sys.executable, str(EXAMPLE), str(out)], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and again.stdout == first.stdout
    assert out.stat().st_size == size  # resumed: nothing was played twice
