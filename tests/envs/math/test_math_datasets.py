"""Loading MATH-style data: explicit path, ROLLGYM_DATA_DIR, hub; errors, splits, ids, caching."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rollgym.core.errors import ConfigError, DataNotFoundError
from rollgym.envs.math import datasets as datasets_module
from rollgym.envs.math.datasets import AIME24, AMC23, MATH500, DatasetSpec, MathDataset, answer_text, load_rows


def test_builtin_sets_load_from_the_data_dir(shared_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROLLGYM_DATA_DIR", str(shared_data))
    sizes = {spec.name: MathDataset(spec, hub=False).size("test") for spec in (MATH500, AIME24, AMC23)}
    assert sizes == {"math500": 500, "aime24": 30, "amc23": 40}


def test_task_ids_are_the_rows_own_ids_and_stable(shared_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROLLGYM_DATA_DIR", str(shared_data))
    ds = MathDataset(MATH500, hub=False)
    first = ds.task(0)
    assert first.id == "math500/test/precalculus/807.json"
    assert ds.task(0) == first
    assert first.meta == {"subject": "Precalculus", "level": 2, "dataset": "math500"}
    assert first.answer not in first.prompt.split("\n\n")[-1]
    assert "\\boxed" in first.prompt
    ids = [ds.task(i).id for i in range(500)]
    assert len(set(ids)) == 500
    assert MathDataset(AIME24, hub=False).task(0).id == "aime24/60"
    assert MathDataset(AMC23, hub=False).task(0).answer == "27"  # 27.0 in the file


def test_only_the_test_split_exists(shared_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROLLGYM_DATA_DIR", str(shared_data))
    ds = MathDataset(AIME24, hub=False)
    for split in ("train", "validation"):
        with pytest.raises(ConfigError, match="only a 'test' split"):
            ds.size(split)
        with pytest.raises(ConfigError, match="only a 'test' split"):
            ds.task(0, split)
    with pytest.raises(ConfigError, match="below 30"):
        ds.task(30)


def test_an_explicit_path_wins_over_the_data_dir(
    tmp_path: Path, shared_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROLLGYM_DATA_DIR", str(shared_data))
    mine = tmp_path / "mine.jsonl"
    mine.write_text(json.dumps({"problem": "What is 2+2?", "answer": "4", "id": "q1"}) + "\n", encoding="utf-8")
    ds = MathDataset(MATH500, path=mine, hub=False)
    assert ds.size("test") == 1
    assert ds.task(0).id == "math500/q1"


def test_missing_data_names_all_three_ways(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROLLGYM_DATA_DIR", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # never download in tests, even where `datasets` is installed
    with pytest.raises(DataNotFoundError) as info:
        load_rows(MATH500)
    message = str(info.value)
    assert "path=" in message and "ROLLGYM_DATA_DIR" in message and "HuggingFaceH4/MATH-500" in message
    assert "rollgym[math]" in message and "HF_HUB_OFFLINE is set" in message
    with pytest.raises(DataNotFoundError, match="does not exist"):
        load_rows(MATH500, path=tmp_path / "nope.jsonl")
    with pytest.raises(DataNotFoundError, match=r"disabled \(hub=False\)"):
        load_rows(AIME24, hub=False)


def _no_download(*args: object, **kwargs: object) -> None:
    raise AssertionError("the hub must not be contacted")


def test_a_set_data_dir_without_the_file_fails_at_once_without_the_hub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(datasets_module, "_load_hub", _no_download)
    for folder, words in [(tmp_path / "nonexistent", "does not exist"), (tmp_path, "has no math500.jsonl")]:
        monkeypatch.setenv("ROLLGYM_DATA_DIR", str(folder))
        with pytest.raises(DataNotFoundError) as info:
            load_rows(MATH500)
        message = str(info.value)
        assert words in message and "unset it to download" in message and message.count(". ") == 0


def test_an_unreachable_hub_is_reported_without_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("datasets")
    import datasets

    monkeypatch.delenv("ROLLGYM_DATA_DIR", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "https://127.0.0.1:9")  # a real socket that refuses connections
    monkeypatch.setattr(datasets, "load_dataset", _no_download)
    with pytest.raises(DataNotFoundError, match=r"127\.0\.0\.1 is unreachable"):
        load_rows(AIME24)


def test_the_cli_fails_fast_with_one_sentence_when_the_data_dir_is_missing(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "ROLLGYM_DATA_DIR": str(tmp_path / "nonexistent"), "PYTHONPATH": str(Path.cwd())}
    env.pop("HF_HUB_OFFLINE", None)
    out = subprocess.run(
        [sys.executable, "-m", "rollgym.cli", "eval", "MATH500-v1", "--agent", "random", "--n", "2"],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path,
    )
    assert out.returncode != 0 and "Retry" not in out.stderr + out.stdout
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "ROLLGYM_DATA_DIR is set but" in lines[0] and "does not exist" in lines[0]


def test_bad_rows_get_a_clear_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"problem": "x", "answer": "1"}\nnot json\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="line 2 is not valid JSON"):
        load_rows(MATH500, path=broken)
    no_answer = tmp_path / "no_answer.jsonl"
    no_answer.write_text('{"problem": "x", "solution": "1"}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="answer_field"):
        MathDataset(DatasetSpec("custom"), path=no_answer, hub=False)


def test_rows_load_once_per_process(shared_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROLLGYM_DATA_DIR", str(shared_data))
    assert load_rows(MATH500) is load_rows(MATH500)


def test_custom_field_names_and_content_ids(tmp_path: Path) -> None:
    data = tmp_path / "set.jsonl"
    data.write_text(
        "\n".join(json.dumps({"question": f"What is {i}+{i}?", "final": 2 * i}) for i in range(3)) + "\n",
        encoding="utf-8",
    )
    spec = DatasetSpec("set", problem_field="question", answer_field="final")
    ds = MathDataset(spec, path=data, hub=False)
    assert [ds.task(i).answer for i in range(3)] == ["0", "2", "4"]
    assert ds.task(1).id.startswith("set/") and ds.task(1).id != ds.task(2).id
    assert MathDataset(spec, path=data, hub=False).task(1).id == ds.task(1).id


def test_answer_text() -> None:
    assert [answer_text(x) for x in (27.0, 0.5, " 025 ", 3)] == ["27", "0.5", "025", "3"]
