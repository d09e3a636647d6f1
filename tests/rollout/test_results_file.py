"""The JSONL results file: streaming, loading, torn lines, resume, and mismatched runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import rollgym_toyenv  # noqa: F401  (registers ToyAdd-v0 and ToyGuess-v0)
from test_collector import comparable

import rollgym
from rollgym.agents import OracleAgent, RandomAgent
from rollgym.core.errors import ConfigError
from rollgym.core.registration import env_info
from rollgym.rollout import ResultsWriter, collect, load_results


class CountingAgent(RandomAgent):
    """A random agent that counts its actions and can simulate Ctrl-C after some of them."""

    def __init__(self, interrupt_after: int | None = None) -> None:
        super().__init__()
        self.calls = 0
        self.interrupt_after = interrupt_after

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if self.interrupt_after is not None and self.calls >= self.interrupt_after:
            raise KeyboardInterrupt
        self.calls += 1
        return super().act(observation, info)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_results_stream_one_line_per_episode_and_load_back(tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    groups = collect(RandomAgent(), "ToyAdd-v0", n_tasks=4, group_size=3, seed=2, out=str(out))
    records = lines(out)
    header = records[0]
    assert header["kind"] == "header" and len(records) == 1 + 12
    assert header["env_id"] == "ToyAdd-v0" and header["spec_hash"] == env_info("ToyAdd-v0").content_hash
    assert (header["split"], header["seed"], header["group_size"], header["agent"]) == ("test", 2, 3, "random")
    assert header["rollgym_version"] == rollgym.__version__
    assert all(r["kind"] == "episode" for r in records[1:])
    assert out.read_bytes().endswith(b"\n")
    loaded = load_results(out)
    assert [g.to_dict() for g in loaded.groups()] == [g.to_dict() for g in groups]


def test_resume_after_a_torn_write_gives_the_same_groups(tmp_path: Path) -> None:
    full = tmp_path / "full.jsonl"
    expected = collect(RandomAgent(), "ToyAdd-v0", n_tasks=5, group_size=2, seed=7, out=str(full))
    raw = full.read_bytes().splitlines(keepends=True)
    partial = tmp_path / "partial.jsonl"
    partial.write_bytes(b"".join(raw[:5]) + raw[5][: len(raw[5]) // 2])  # header, 4 episodes, half a line
    assert len(load_results(partial).episodes) == 4  # the torn line is ignored
    agent = CountingAgent()
    resumed = collect(agent, "ToyAdd-v0", n_tasks=5, group_size=2, seed=7, out=str(partial))
    assert agent.calls == 10 - 4  # finished episodes are not played again
    assert comparable(resumed) == comparable(expected)
    assert comparable(load_results(partial).groups()) == comparable(expected)
    assert len(lines(partial)) == 11  # every line parses: the torn tail was cut before appending


def test_resume_after_an_interrupt_inside_the_run(tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    with pytest.raises(KeyboardInterrupt):
        collect(CountingAgent(interrupt_after=7), "ToyAdd-v0", n_tasks=4, group_size=3, seed=1, out=str(out))
    assert len(load_results(out).episodes) == 7
    resumed = collect(CountingAgent(), "ToyAdd-v0", n_tasks=4, group_size=3, seed=1, out=str(out), workers=2)
    fresh = collect(CountingAgent(), "ToyAdd-v0", n_tasks=4, group_size=3, seed=1)
    assert comparable(resumed) == comparable(fresh)


def test_progress_counts_resumed_episodes(tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    collect(OracleAgent(), "ToyAdd-v0", n_tasks=2, group_size=2, out=str(out))
    seen: list[tuple[int, int]] = []
    collect(
        OracleAgent(), "ToyAdd-v0", n_tasks=3, group_size=2, out=str(out), progress=lambda d, t: seen.append((d, t))
    )
    assert seen == [(4, 6), (5, 6), (6, 6)]


def test_a_run_can_be_extended_to_more_tasks(tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    collect(RandomAgent(), "ToyAdd-v0", n_tasks=2, group_size=2, seed=4, out=str(out))
    extended = collect(RandomAgent(), "ToyAdd-v0", n_tasks=4, group_size=2, seed=4, out=str(out))
    direct = collect(RandomAgent(), "ToyAdd-v0", n_tasks=4, group_size=2, seed=4)
    assert comparable(extended) == comparable(direct)
    assert len(lines(out)) == 1 + 8
    shorter = collect(RandomAgent(), "ToyAdd-v0", n_tasks=1, group_size=2, seed=4, out=str(out))
    assert comparable(shorter) == comparable(direct[:1])


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"seed": 1}, "seed"),
        ({"group_size": 3}, "group_size"),
        ({"split": "train"}, "split"),
        ({"env_kwargs": {"crash": True}}, "env_kwargs"),
        ({"agent": OracleAgent()}, "agent"),
        ({"env_id": "ToyGuess-v0"}, "env_id"),
        ({"max_steps": 5}, "max_steps"),
    ],
)
def test_resuming_with_different_arguments_is_a_clear_error(tmp_path: Path, changes: dict, field: str) -> None:
    out = tmp_path / "run.jsonl"
    args: dict[str, Any] = {"agent": RandomAgent(), "env_id": "ToyAdd-v0", "n_tasks": 2, "group_size": 2, "seed": 0}
    collect(**args, out=str(out))
    before = out.read_bytes()
    with pytest.raises(ConfigError, match=rf"different run \({field} .*same arguments"):
        collect(**{**args, **changes}, out=str(out))
    assert out.read_bytes() == before


def test_a_changed_env_spec_refuses_to_resume(tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    collect(OracleAgent(), "ToyAdd-v0", n_tasks=1, group_size=1, out=str(out))
    records = out.read_text().splitlines()
    header = json.loads(records[0]) | {"spec_hash": "0000000000000000"}
    out.write_text("\n".join([json.dumps(header), *records[1:]]) + "\n")
    with pytest.raises(ConfigError, match="spec_hash"):
        collect(OracleAgent(), "ToyAdd-v0", n_tasks=1, group_size=1, out=str(out))


def test_a_spec_hash_from_before_a_re_pin_resumes_through_the_lineage_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An id re-pinned by a refactor (same tasks and scores by rule) keeps its old hash in the lineage; a
    file begun under that hash resumes and keeps its header. Another id's lineage does not count."""
    from rollgym.core import registration

    out = tmp_path / "run.jsonl"
    collect(OracleAgent(), "ToyAdd-v0", n_tasks=2, group_size=1, out=str(out))
    records = out.read_text().splitlines()
    header = json.loads(records[0]) | {"spec_hash": "0000000000000000"}
    out.write_text("\n".join([json.dumps(header), records[1]]) + "\n")
    monkeypatch.setattr(registration, "_LINEAGE", {"ToyGuess-v0": ["0000000000000000"]})
    with pytest.raises(ConfigError, match="spec_hash"):
        collect(OracleAgent(), "ToyAdd-v0", n_tasks=2, group_size=1, out=str(out))
    monkeypatch.setattr(registration, "_LINEAGE", {"ToyAdd-v0": ["0000000000000000"]})
    groups = collect(OracleAgent(), "ToyAdd-v0", n_tasks=2, group_size=1, out=str(out))
    assert [g.trajectories[0].reward for g in groups] == [1.0, 1.0]
    assert lines(out)[0]["spec_hash"] == "0000000000000000" and len(lines(out)) == 3


def test_corrupt_or_foreign_files_are_clear_errors(tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    collect(OracleAgent(), "ToyAdd-v0", n_tasks=2, group_size=1, out=str(out))
    records = out.read_text().splitlines()
    out.write_text("\n".join([records[0], "{not json", records[2]]) + "\n")
    with pytest.raises(ConfigError, match="line 2 is not valid JSON"):
        load_results(out)
    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text('{"hello": 1}\n')
    with pytest.raises(ConfigError, match="not a rollgym results file"):
        collect(OracleAgent(), "ToyAdd-v0", n_tasks=1, group_size=1, out=str(foreign))
    with pytest.raises(ConfigError, match="does not exist"):
        load_results(tmp_path / "missing.jsonl")


def test_two_runs_cannot_write_one_file_at_once(tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    header = {"env_id": "ToyAdd-v0", "seed": 0}
    first, _ = ResultsWriter.open(out, header)
    try:
        with pytest.raises(ConfigError, match="Another run is writing"):
            collect(OracleAgent(), "ToyAdd-v0", n_tasks=1, group_size=1, out=str(out))
    finally:
        first.close()
    second, episodes = ResultsWriter.open(out, header)  # free again once the first writer closed
    second.close()
    assert episodes == []


def test_an_empty_file_is_started_fresh(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "run.jsonl"
    out.parent.mkdir()
    out.touch()
    collect(OracleAgent(), "ToyAdd-v0", n_tasks=1, group_size=2, out=str(out))
    assert len(lines(out)) == 3
    assert not [p for p in out.parent.iterdir() if p.name != "run.jsonl"]  # no temp files left behind
