"""examples/usersim_conversation.py runs and shows what it says it shows."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "usersim_conversation.py"


def test_the_usersim_example_runs() -> None:
    run = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "locked_by_user" in out and "I've unlocked the payments app" in out and "reward 1.0" in out
    assert "without confirmation: reward 0.0, failed ['confirmed_before_irreversible']" in out
    rows = {int(k): (float(at), float(hat)) for k, at, hat in
            re.findall(r"k=(\d): pass@k ([\d.]+)\s+pass\^k ([\d.]+)", out)}
    assert sorted(rows) == [1, 2, 4]
    assert rows[1][0] == rows[1][1] and rows[4][1] <= rows[2][1] <= rows[1][1] <= rows[4][0]
