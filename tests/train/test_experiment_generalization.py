"""The ``generalization`` experiment (the suite's tiny-model row): a miniature run's structure and determinism,
that nothing of ``test_unseen`` reaches training, and that the committed results match the suite's setting."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from research import get
from research.generalization import (
    ENV_KWARGS,
    SPLITS,
    demonstrations,
    render_side_by_side,
    side_by_side,
)
from research.runner import run_experiment
from rollgym.benchmarks.suite import load_suite

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "docs" / "experiments" / "generalization.json"


def _measured(data: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(r["arm"], r["seed"], r["metric"], json.dumps(r["extras"], sort_keys=True), r["curve"])
            for r in data["runs"]]


def test_a_miniature_run_is_deterministic_and_reports_every_split_side_by_side(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    exp = get("generalization")
    first = run_experiment(exp, tmp_path / "a", quick=True, progress=False)
    again = run_experiment(exp, tmp_path / "b", quick=True, progress=False)
    assert _measured(first) == _measured(again)
    n = exp.configs["quick"]["eval_tasks"]
    assert [(r["arm"], r["seed"]) for r in first["runs"]] == [("warm-up", 0), ("GRPO", 0)]
    for run in first["runs"]:
        extras = run["extras"]
        assert set(extras["solved"]) == set(SPLITS) and extras["n"] == n
        assert all(0 <= extras["solved"][s] <= n and extras[s] == extras["solved"][s] / n for s in SPLITS)
        assert run["metric"] == extras["test_unseen"]
    assert len(first["runs"][1]["curve"]) == exp.configs["quick"]["grpo_steps"]  # one point per GRPO step
    rows = side_by_side(first)
    assert [r["agent"] for r in rows] == ["oracle", "random", "tiny model, warm-up only", "tiny model, after GRPO"]
    assert all(rows[0]["cells"][s]["solved"] == n for s in SPLITS)  # the oracle solves every task
    for row in rows:
        for cell in row["cells"].values():
            assert cell["low"] <= cell["rate"] <= cell["high"]
    table = render_side_by_side(first)
    assert table.count("\n| ") == 5 and "test_unseen (held-out apps)" in table


def test_the_warm_up_and_the_tokenizer_see_only_train_tasks() -> None:
    answers, corpus = demonstrations({"env_kwargs": ENV_KWARGS, "sft_tasks": 6})
    assert len(answers) == len(corpus) == 6
    for observation, info, text, task in answers:
        assert task.id.startswith("ToolGen/train/") and not task.meta["unseen"]
        assert text.count("<tool_call>") == 2
        assert text.endswith('{"name": "complete_task", "arguments": {}}</tool_call>')
        assert observation in corpus[answers.index((observation, info, text, task))]


def test_the_suite_entries_use_the_experiment_s_setting() -> None:
    suite = load_suite("generalization")
    small = {e.name: e for e in suite.entries if e.name.startswith("toolgen-small-")}
    assert sorted(e.split for e in small.values()) == sorted(SPLITS)
    assert all(e.env_kwargs == ENV_KWARGS and e.env_id == "ToolGen-v0" for e in small.values())


@pytest.mark.skipif(not COMMITTED.exists(), reason="no committed full run yet")
def test_the_committed_run_fits_the_context_and_holds_every_split() -> None:
    data = json.loads(COMMITTED.read_text())
    config = data["config"]
    assert config["env_kwargs"] == ENV_KWARGS
    for run in data["runs"]:
        # prompt and answer fit the tiny model's 1,024 positions on every split
        assert max(run["extras"]["prompt_tokens"].values()) + config["max_tokens"] <= 1024
        assert run["extras"]["baselines"]["oracle"] == {s: config["eval_tasks"] for s in SPLITS}
    # docs/tools.md shows the rows rendered from the committed results
    rows = (REPO / "docs" / "tools.md").read_text().split("<!-- generalization-rows:begin -->\n", 1)[1]
    assert rows.split("\n<!-- generalization-rows:end -->", 1)[0] == render_side_by_side(data).split("\n", 2)[2]
