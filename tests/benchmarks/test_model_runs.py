"""A suite run by a language model (a tiny local model over HTTP) verifies like any other bundle."""

from __future__ import annotations

import json
from pathlib import Path

from rollgym.benchmarks.runner import AgentSpec, run_suite
from rollgym.benchmarks.suite import load_suite
from rollgym.leaderboard.verify import verify_bundle


def test_a_model_served_over_http_runs_and_verifies(tiny_server: object, tmp_path: Path) -> None:
    agent = AgentSpec(model=tiny_server.url, sampling={"max_tokens": 16}, label="tiny")  # type: ignore[attr-defined]
    summary = run_suite(load_suite("quick"), agent, tmp_path / "tiny", limit=1, only=["countdown", "sudoku4x4"])
    assert summary["entries"]["countdown"]["episodes"] == 4
    manifest = json.loads((tmp_path / "tiny" / "manifest.json").read_text())
    assert manifest["agent"]["kind"] == "model" and manifest["entries"][0]["sampling"]["max_tokens"] == 16
    lines = (tmp_path / "tiny" / "transcripts" / "countdown.jsonl").read_text().splitlines()
    messages = json.loads(lines[1])["trajectory"]["messages"]
    trajectory = json.loads(lines[1])["trajectory"]
    assert trajectory["status"] == "completed", trajectory["info"].get("failure")
    assert [m["role"] for m in messages][-1] == "assistant"
    report = verify_bundle(tmp_path / "tiny")
    assert report.ok, report.reasons
