"""The README's performance table is rendered from the committed bench results, never typed by hand."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def publish() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_publish", ROOT / "bench" / "publish.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_table_is_what_the_committed_results_render_to():
    pub = publish()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    results = pub.load_all()
    assert sum(len(r["readme_rows"]) for r in results) >= 10, "the README's table lost its rows"
    assert pub.render_readme(readme, results) == readme, "run python bench/publish.py after make bench"


def _saves(script: Path, name: str) -> bool:
    """Whether a bench script saves its results under ``name``: itself, or through bench/measure.py's report_figures."""
    text = script.read_text(encoding="utf-8")
    return f'save_results("{name}"' in text or f'report_figures(args, "{name}"' in text


def test_every_result_names_the_script_that_wrote_it():
    pub = publish()
    for path in sorted(pub.RESULTS_DIR.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        script = ROOT / data["command"].split()[1]
        assert script.exists(), f"{path.name}: {data['command']!r} names no bench script"
        assert _saves(script, path.stem), path.name
        assert data["readme_rows"] and data["measured_at"] and data["machine"]["cpus"], path.name


def test_a_hand_edited_figure_is_caught(tmp_path: Path):
    pub = publish()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split(pub.BEGIN, 1)[1].split(pub.END, 1)[0]
    edited = readme.replace(table, re.sub(r"\d", "9", table, count=1))
    assert edited != readme
    assert pub.render_readme(edited, pub.load_all()) != edited


def test_save_results_refuses_rows_without_the_four_columns(tmp_path: Path):
    import pytest

    pub = publish()
    with pytest.raises(ValueError, match="README row"):
        pub.save_results("x", {}, [{"what": "a", "rollgym": "1"}], command="python bench/x.py", directory=tmp_path)
    path = pub.save_results("x", {"n": 1}, [{"what": "a", "rollgym": "1", "peer": "2", "ratio": "2x"}],
                            command="python bench/x.py", directory=tmp_path)
    table = pub.render_table(pub.load_all(tmp_path)).splitlines()
    assert table[2] == "| a | 1 | 2 | 2x |"
    assert table[-1].startswith("Measured: x 2") and "1-minute load" in table[-1]  # when, and under what load
    assert json.loads(path.read_text())["figures"] == {"n": 1}


def test_the_shortcut_rows_name_their_path_and_give_the_env_paths_ratio_beside():
    # Hex's playout fills the board and flood-fills once; Search's ranking is BM25 alone. Agents go through
    # play() and env.step, so each row names both paths and shows both ratios.
    pub = publish()
    rows = {r["bench"]: r["readme_rows"] for r in pub.load_all()}
    for bench, shortcut, env_path, count in (("games", "shortcut", "`play()`, the env's path", 2),
                                            ("search", "ranking alone", "through `env.step`", 1)):
        assert len(rows[bench]) == count, bench
        for row in rows[bench]:
            assert shortcut in row["what"] and env_path in row["what"], row
            assert len(row["rollgym"].split(" / ")) == 2 and len(row["ratio"].split(" / ")) == 2, row
            assert all(part.strip().endswith("x") for part in row["ratio"].split(" / ")), row


def test_a_result_keeps_the_load_before_the_bench_beside_the_load_after(tmp_path: Path):
    pub = publish()
    row = {"what": "a", "rollgym": "1", "peer": "2", "ratio": "2x"}
    path = pub.save_results("x", {}, [row], command="python bench/x.py", directory=tmp_path, load_before=3.456)
    where = json.loads(path.read_text())["machine"]
    assert where["load_1min_before"] == 3.46 and "load_1min" in where
    path = pub.save_results("y", {}, [row], command="python bench/y.py", directory=tmp_path)
    assert "load_1min_before" not in json.loads(path.read_text())["machine"]
