"""Atomic writes: the target is the old file or the new one, never half of one, and no temp file is left."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from rollgym.core.io import (
    append_line,
    atomic_path,
    write_bytes_atomic,
    write_json_atomic,
    write_jsonl_atomic,
    write_text_atomic,
)


def test_writes_create_folders_and_leave_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "out.json"
    write_json_atomic(target, {"b": 1, "a": "é"})
    assert json.loads(target.read_text(encoding="utf-8")) == {"a": "é", "b": 1}
    assert target.read_text(encoding="utf-8").endswith("\n")
    write_text_atomic(tmp_path / "t.txt", "hello")
    write_bytes_atomic(tmp_path / "b.bin", b"\x00\x01")
    write_jsonl_atomic(tmp_path / "rows.jsonl", [{"i": 0}, {"i": 1}])
    assert [json.loads(x) for x in (tmp_path / "rows.jsonl").read_text().splitlines()] == [{"i": 0}, {"i": 1}]
    leftovers = [p.name for p in tmp_path.rglob(".*")]
    assert leftovers == []


def test_a_failed_write_keeps_the_old_file_and_removes_the_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "results.jsonl"
    write_text_atomic(target, "old\n")

    def rows():
        yield {"i": 0}
        raise RuntimeError("killed mid-write")

    with pytest.raises(RuntimeError):
        write_jsonl_atomic(target, rows())
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.jsonl"]


def test_atomic_path_keeps_the_suffix_for_writers_that_read_it(tmp_path: Path) -> None:
    target = tmp_path / "fig.png"
    with atomic_path(target) as tmp:
        assert tmp.suffix == ".png" and tmp.parent == tmp_path and not target.exists()
        tmp.write_bytes(b"png")
    assert target.read_bytes() == b"png"


def test_a_temp_file_left_by_a_killed_writer_never_looks_like_a_results_file(tmp_path: Path) -> None:
    """A SIGKILL mid-write leaves the temp file; readers that glob ``*.jsonl`` must not pick it up."""
    with atomic_path(tmp_path / "run.jsonl", keep_suffix=False) as tmp:
        tmp.write_text("{}\n")
        assert list(tmp_path.glob("*.jsonl")) == [] and tmp.name.endswith(".tmp")
    assert [p.name for p in tmp_path.glob("*.jsonl")] == ["run.jsonl"]


def test_new_files_are_readable_by_others_and_replaced_files_keep_their_mode(tmp_path: Path) -> None:
    fresh = write_text_atomic(tmp_path / "fresh.txt", "x")
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o644
    os.chmod(fresh, 0o600)
    write_text_atomic(fresh, "y")
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600 and fresh.read_text() == "y"


def test_append_line_adds_whole_lines(tmp_path: Path) -> None:
    log = tmp_path / "log" / "run.jsonl"
    append_line(log, '{"step": 1}')
    append_line(log, '{"step": 2}\n', fsync=False)
    assert log.read_text() == '{"step": 1}\n{"step": 2}\n'
