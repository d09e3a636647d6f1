"""The CPU demonstration end to end, in its seconds-long ``--quick`` form, and its table rendering."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require_modules

require_modules("torch", "matplotlib")

from rollgym.train.demo import TABLE_BEGIN, TABLE_END, render_table, write_table  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "grpo_countdown_demo.py"


def test_quick_demo_runs_every_stage(tmp_path):
    doc = tmp_path / "training.md"
    doc.write_text(f"# Training\n\n{TABLE_BEGIN}\nold\n{TABLE_END}\n\nafter\n", encoding="utf-8")
    run = subprocess.run([sys.executable, str(EXAMPLE), "--quick", "--out", str(tmp_path / "img"), "--doc", str(doc)],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "| on-policy |" in run.stdout
    results = json.loads((tmp_path / "img" / "grpo_demo.json").read_text())
    assert [r["condition"] for r in results["runs"]] == ["on-policy", "external+length+by-source"]
    for run in results["runs"]:
        assert [p["step"] for p in run["curve"]] == [0, 1, 2]
        assert all(0.0 <= p["accuracy"] <= 1.0 for p in run["curve"])
        assert all(s["rows"] > 0 for s in run["steps"])
    external = results["runs"][1]["steps"]
    # a random model solves nothing, so every group gets its oracle rollout
    assert sum(s["external"] for s in external) == 2 * results["config"]["tasks_per_step"]
    for name in ("grpo_demo.png", "grpo_external.png"):
        assert (tmp_path / "img" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = doc.read_text()
    assert "old" not in text and text.endswith("after\n")
    assert render_table(results) in text and "| on-policy |" in text


def test_write_table_needs_markers(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text("no markers", encoding="utf-8")
    with pytest.raises(ValueError, match="markers"):
        write_table({"summary": [], "config": {}}, doc)
