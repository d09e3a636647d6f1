"""docs/baselines.md holds exactly the tables that bench/baselines.py makes from the committed ladders bundle,
and that bundle passes re-verification (every episode replayed against this rollgym)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "docs" / "baselines" / "smollm2-135m-instruct-ladders.tar.gz"
#: Every other model's ladders bundle, by the section its tables sit in (``--section`` of bench/baselines.py).
SECTIONS = {path.name.removesuffix("-ladders.tar.gz"): path
            for path in sorted((REPO / "docs" / "baselines").glob("*-ladders.tar.gz")) if path != BUNDLE}


def _script():
    spec = importlib.util.spec_from_file_location("bench_baselines", REPO / "bench" / "baselines.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.timeout(900)
def test_the_committed_baselines_table_is_the_verified_bundles():
    pytest.importorskip("playwright", reason="the ladders bundle has web entries, replayed in Chromium")
    script = _script()
    text = script.generate(BUNDLE)  # raises SystemExit with the reasons when the bundle does not verify
    doc = (REPO / "docs" / "baselines.md").read_text(encoding="utf-8")
    between = doc.split(script.BEGIN, 1)[1].split(script.END, 1)[0].strip()
    assert between == text.strip(), "docs/baselines.md is stale: run `python bench/baselines.py " \
                                    f"{BUNDLE.relative_to(REPO)} --doc docs/baselines.md`"


@pytest.mark.timeout(900)
@pytest.mark.parametrize("section", sorted(SECTIONS))
def test_each_further_models_tables_are_its_verified_bundles(section):
    pytest.importorskip("playwright", reason="the ladders bundle has web entries, replayed in Chromium")
    script = _script()
    begin, end = script.markers(section)
    doc = (REPO / "docs" / "baselines.md").read_text(encoding="utf-8")
    assert begin in doc and end in doc, f"docs/baselines.md has no tables for {section}: add {begin} and {end}"
    between = doc.split(begin, 1)[1].split(end, 1)[0].strip()
    assert between == script.generate(SECTIONS[section]).strip(), "docs/baselines.md is stale: run `python " \
        f"bench/baselines.py {SECTIONS[section].relative_to(REPO)} --doc docs/baselines.md --section {section}`"


def test_the_doc_sections_are_written_between_their_own_markers(tmp_path):
    script = _script()
    doc = tmp_path / "b.md"
    begin, end = script.markers("m")
    doc.write_text(f"a\n{script.BEGIN}\nold\n{script.END}\n{begin}\nold\n{end}\nz\n")
    script.write_doc(doc, "NEW", "m")
    assert doc.read_text() == f"a\n{script.BEGIN}\nold\n{script.END}\n{begin}\nNEW\n{end}\nz\n"
    with pytest.raises(SystemExit, match="no <!-- baselines:ladders:other:begin --> marker"):
        script.write_doc(doc, "x", "other")


def test_every_entry_of_the_ladders_suite_has_a_row():
    from rollgym.benchmarks.suite import load_suite

    script = _script()
    named = {r.greedy for r in script.ROWS} | {r.sampled for r in script.ROWS if r.sampled}
    suite = load_suite("ladders")
    assert named == {e.name for e in suite.entries}
    for row in script.ROWS:  # the rows name the newest version's env ids; a table shows the bundle's own
        assert {suite.entry(name).env_id for name in (row.greedy, row.sampled) if name} == {row.env}, row
    for env in {r.env for r in script.ROWS}:
        assert sum(r.default for r in script.ROWS if r.env == env) <= 1, env  # at most one default level per env
