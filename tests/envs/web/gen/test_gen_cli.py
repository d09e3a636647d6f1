"""``rollgym list --stats`` counts the generated worlds (run as a user runs it, in a subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[4]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "rollgym.cli", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)


def test_list_stats_counts_sites_themes_and_templates() -> None:
    done = run_cli("list", "--stats", "--json")
    assert done.returncode == 0, done.stderr
    web = json.loads(done.stdout)["web"]
    assert web["generated_sites"] == web["generated_sites_train"] + web["generated_sites_test_unseen"] >= 100
    assert web["generated_templates"] == web["generated_templates_info"] + web["generated_templates_transaction"]
    assert web["generated_templates"] >= 100 and web["site_kinds"] >= 10 and web["layout_themes"] >= 6
    assert web["env_ids"] >= 13 and web["hand_written_sites"] == 3
    table = run_cli("list", "--stats")
    assert table.returncode == 0 and "generated sites" in table.stdout and "layout themes" in table.stdout


def test_web_serve_takes_a_generated_site_and_refuses_an_unknown_one() -> None:
    bad = run_cli("web", "serve", "gen-mall-01")
    assert bad.returncode == 2 and "neither shop, forum, travel nor a generated site" in bad.stderr
