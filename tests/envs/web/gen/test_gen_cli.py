"""``rollgym list --stats`` counts the generated worlds (run as a user runs it, in a subprocess)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[4]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "rollgym.cli", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)


def test_list_stats_counts_sites_and_templates_per_split() -> None:
    done = run_cli("list", "--stats")
    assert done.returncode == 0, done.stderr
    rows = [[c.strip() for c in line.split("\u2502")] for line in done.stdout.split("generated worlds")[1].splitlines()]
    web = {r[2]: int(r[3].replace(",", "")) for r in rows if len(r) > 3 and r[1] == "web"}
    assert web["generated_sites"] == web["sites_train"] + web["sites_test_unseen"] >= 100
    assert web["sites_train"] == web["sites_validation"] == web["sites_test"] and web["sites_test_unseen"] >= 11
    assert web["generated_templates"] == web["generated_templates_info"] + web["generated_templates_transaction"]
    assert web["generated_templates"] == web["templates_test_unseen"] == web["templates_train"] >= 100
    assert web["site_kinds"] >= 10 and web["layout_themes"] >= 6 and web["hand_written_sites"] == 3


def test_web_serve_takes_a_generated_site_and_refuses_an_unknown_one() -> None:
    bad = run_cli("web", "serve", "gen-mall-01")
    assert bad.returncode == 2 and "neither shop, forum, travel nor a generated site" in bad.stderr
