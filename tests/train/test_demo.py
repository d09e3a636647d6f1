"""The CPU demonstration end to end in its ``--quick`` form: scratch output by default, docs only with ``--doc``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require_modules

require_modules("torch", "matplotlib")

from rollgym.train.demo import TABLE_BEGIN, TABLE_END, render_table, write_table  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "grpo_countdown_demo.py"


def run(args, cwd):
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, str(EXAMPLE), *args], capture_output=True, text=True, timeout=900,
                          cwd=cwd, env=env)


def test_quick_demo_runs_every_stage_and_writes_only_where_asked(tmp_path):
    here = tmp_path / "cwd"
    here.mkdir()
    done = run(["--quick", "--out", str(tmp_path / "img")], here)
    assert done.returncode == 0, done.stderr[-2000:]
    assert list(here.iterdir()) == []  # nothing lands in the working directory
    results = json.loads((tmp_path / "img" / "grpo_demo.json").read_text())
    assert [r["seed"] for r in results["runs"]] == [0, 1]
    for r in results["runs"]:
        assert [p["step"] for p in r["curve"]] == [0, 1, 2]
        assert all(0.0 <= p["accuracy"] <= 1.0 for p in r["curve"])
        assert all(s["rows"] > 0 for s in r["steps"])
    summary = results["summary"]
    assert summary["gain"]["n"] == 2 and "reading" in summary
    assert (tmp_path / "img" / "grpo_demo.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert render_table(results) in done.stdout


def test_default_output_is_a_scratch_folder_and_doc_refuses_quick(tmp_path):
    done = run(["--quick"], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert list(tmp_path.iterdir()) == []
    scratch = Path(done.stdout.strip().splitlines()[-1].split("wrote ", 1)[1].split(" and ")[0]).parent
    assert scratch.is_dir() and not str(scratch).startswith(str(REPO))
    refused = run(["--quick", "--doc"], tmp_path)
    assert refused.returncode == 2 and "--doc" in refused.stderr
    refused = run(["--quick", "--doc", "docs/training.md"], tmp_path)  # the path form: refused the same way
    assert refused.returncode == 2 and "--doc" in refused.stderr
    missing = run(["--doc", "missing.md"], tmp_path)
    assert missing.returncode == 2 and "missing.md not found" in missing.stderr
    assert list(tmp_path.iterdir()) == []


def test_write_table_replaces_only_the_marked_section(tmp_path):
    results = {"summary": {"accuracy_start": 0.1, "accuracy_end": {"mean": 0.2, "half_width": 0.05},
                           "accuracy_end_per_seed": [0.2], "gain": {"mean": 0.1, "half_width": None},
                           "reading": "too few seeds"},
               "config": {"env_id": "E-v0", "env_kwargs": {}, "sft_steps": 1, "grpo_steps": 1, "tasks_per_step": 1,
                          "group_size": 2, "seeds": [0], "eval_tasks": 3},
               "accuracy_untrained": 0.0, "seconds": 1.0}
    doc = tmp_path / "x.md"
    doc.write_text("no markers", encoding="utf-8")
    with pytest.raises(ValueError, match=r"x\.md has no .* markers"):
        write_table(results, doc)
    doc.write_text(f"# T\n\n{TABLE_BEGIN}\nold\n{TABLE_END}\n\nafter\n", encoding="utf-8")
    write_table(results, doc)
    text = doc.read_text()
    assert "old" not in text and text.endswith("after\n") and "+0.100 ± n/a" in render_table(results)


def test_the_documented_table_is_the_committed_run():
    """docs/training.md's demo table is rendered from docs/img/grpo_demo.json, the run --doc wrote: a hand edit
    of either (the warm-up's 0.353, a seed's accuracy) fails here."""
    results = json.loads((REPO / "docs" / "img" / "grpo_demo.json").read_text(encoding="utf-8"))
    doc = (REPO / "docs" / "training.md").read_text(encoding="utf-8")
    section = doc.split(TABLE_BEGIN, 1)[1].split(TABLE_END, 1)[0]
    assert section.strip() == render_table(results).strip()
    runs = results["runs"]
    assert [r["seed"] for r in runs] == results["config"]["seeds"]
    per_seed = [r["curve"][-1]["accuracy"] for r in runs]
    assert per_seed == pytest.approx(results["summary"]["accuracy_end_per_seed"])
