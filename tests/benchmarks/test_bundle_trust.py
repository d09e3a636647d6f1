"""Bundles publish no answers, hide no attempts, and name suites only from the registry."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from rollgym.benchmarks.runner import AgentSpec, run_suite
from rollgym.benchmarks.suite import (
    builtin_suite,
    builtin_suites,
    entry_tasks,
    load_suite,
    suite_versions,
    versions_phrase,
)
from rollgym.bundles.format import check_manifest, pack_bundle
from rollgym.core.errors import ConfigError
from rollgym.leaderboard.verify import verify_bundle

CANARY = "canary-7f3a91-do-not-echo"


def _copy(bundle: Path, tmp_path: Path, name: str = "bundle") -> Path:
    folder = tmp_path / name
    shutil.copytree(bundle, folder)
    return folder


def _edit_lines(path: Path, edit: Any) -> None:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    edit(lines)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _edit_manifest(folder: Path, edit: Any) -> None:
    manifest = json.loads((folder / "manifest.json").read_text())
    edit(manifest)
    (folder / "manifest.json").write_text(json.dumps(manifest))


def _gold_strings(answer: Any) -> list[str]:
    """The text forms of a gold answer worth searching for (short numbers appear everywhere by chance)."""
    if answer is None:
        return []
    if isinstance(answer, str):
        return [answer] if len(answer) >= 3 else []
    if isinstance(answer, dict):
        text = answer.get("text")
        return [json.dumps(answer), *([text] if isinstance(text, str) and len(text) >= 4 else [])]
    if isinstance(answer, list):
        return [json.dumps(answer), json.dumps(answer, ensure_ascii=False)]
    return []


def _archive_text(archive: Path) -> str:
    import tarfile

    with tarfile.open(archive) as tar:
        return "\n".join(tar.extractfile(m).read().decode() for m in tar.getmembers() if m.isfile())  # type: ignore[union-attr]


_TIMINGS = re.compile(r'"(\w+_s)": -?[0-9.]+(?:e-?[0-9]+)?')


@pytest.mark.parametrize("suite_name", ["quick", "search", "math"])
def test_no_transcript_line_contains_a_gold_answer(suite_name: str, tmp_path: Path,
                                                   request: pytest.FixtureRequest) -> None:
    if suite_name == "math":
        request.getfixturevalue("shared_data")  # MATH500, AIME and AMC come from ROLLGYM_DATA_DIR
    suite = load_suite(suite_name)
    folder = tmp_path / suite_name
    run_suite(suite, AgentSpec(agent="random"), folder, limit=2)
    archive = pack_bundle(folder, tmp_path / f"{suite_name}.tar.gz")
    texts = {"folder": "\n".join(p.read_text() for p in sorted((folder / "transcripts").glob("*.jsonl"))),
             "archive": _archive_text(archive)}
    # measured seconds ("agent_s": 0.000211) hold any short number by chance, never a task's content
    texts = {where: _TIMINGS.sub(r'"\1": 0', text) for where, text in texts.items()}
    runnable = load_suite(suite_name).limited(2).partition()[0]
    checked = 0
    for entry in runnable:
        for task in entry_tasks(entry):
            if task.answer is None:
                continue
            # a short answer ("13") appears anywhere by chance; as a task's field it would not
            golds = [*_gold_strings(task.answer), f'"answer": {json.dumps(task.answer, ensure_ascii=False)}']
            checked += 1
            for gold in golds:
                for where, text in texts.items():
                    assert gold not in text, f"{entry.name}: the {where} holds the gold answer {gold!r}"
    assert checked >= 4  # the suite has tasks with hidden answers, so the check checked something
    for line in texts["archive"].splitlines():
        data = json.loads(line) if line.startswith('{"kind"') else {}
        assert "answer" not in (data.get("task") or {})
    assert verify_bundle(archive).ok


def test_a_transcript_that_carries_answers_is_rejected(oracle_bundle: Path, tmp_path: Path) -> None:
    folder = _copy(oracle_bundle, tmp_path)
    tasks = entry_tasks(load_suite("quick").limited(2).entry("countdown"))

    def leak(lines: list[dict[str, Any]]) -> None:
        for line in lines[1:]:
            line["task"]["answer"] = tasks[line["task_index"]].answer

    _edit_lines(folder / "transcripts" / "countdown.jsonl", leak)
    report = verify_bundle(folder)
    assert not report.ok and "carries the hidden answer of 2 task(s)" in report.reasons[0]
    # packing again removes them, and the bundle verifies
    assert verify_bundle(pack_bundle(folder, tmp_path / "repacked.tar.gz")).ok


def test_duplicated_episodes_are_rejected(oracle_bundle: Path, tmp_path: Path) -> None:
    folder = _copy(oracle_bundle, tmp_path)

    def duplicate(lines: list[dict[str, Any]]) -> None:  # an exact copy of an episode line
        lines.append(json.loads(json.dumps(lines[1])))

    _edit_lines(folder / "transcripts" / "countdown.jsonl", duplicate)
    report = verify_bundle(folder)
    assert not report.ok and "appear on more than one line, e.g. task 0 sample 0" in report.reasons[0]

    folder2 = _copy(oracle_bundle, tmp_path, "b2")

    def hide_attempt(lines: list[dict[str, Any]]) -> None:  # a second attempt at the same (task, sample)
        extra = json.loads(json.dumps(lines[1]))
        extra["trajectory"]["traj_id"] += "-retry"
        lines.insert(1, extra)

    _edit_lines(folder2 / "transcripts" / "sudoku4x4.jsonl", hide_attempt)
    report = verify_bundle(folder2)
    assert not report.ok and "entry sudoku4x4" in report.reasons[0] and "more than one line" in report.reasons[0]


@pytest.mark.parametrize(("field", "value"), [("task_index", 2), ("task_index", -1), ("sample_idx", 4)])
def test_episodes_outside_the_task_set_are_rejected(oracle_bundle: Path, tmp_path: Path, field: str,
                                                    value: int) -> None:
    folder = _copy(oracle_bundle, tmp_path)

    def add(lines: list[dict[str, Any]]) -> None:
        extra = json.loads(json.dumps(lines[1]))
        if field == "task_index":
            extra["task_index"] = value
        else:
            extra["trajectory"]["sample_idx"] = value
        lines.append(extra)

    _edit_lines(folder / "transcripts" / "countdown.jsonl", add)
    report = verify_bundle(folder)
    assert not report.ok and "not in the suite's task set (2 task(s) x 4 sample(s))" in report.reasons[0]


def test_broken_transcript_lines_are_rejected_not_forgiven(oracle_bundle: Path, tmp_path: Path) -> None:
    for name, mutate, needle in [
        ("torn", lambda text: text[:-20], "last line is cut off"),
        ("garbled", lambda text: text.replace("\n", "\n{oops\n", 1), "line 2 is not valid JSON"),
        ("list", lambda text: text.replace("\n", "\n[1, 2]\n", 1), "line 2 is not a JSON object"),
        ("kind", lambda text: text.replace("\n", '\n{"kind": "note"}\n', 1), "line 2 is not an episode"),
        ("deep", lambda text: text.replace("\n", "\n" + "[" * 100000 + "\n", 1), "line 2 is not valid JSON"),
    ]:
        folder = _copy(oracle_bundle, tmp_path, name)
        path = folder / "transcripts" / "countdown.jsonl"
        path.write_text(mutate(path.read_text()))
        report = verify_bundle(folder)
        assert not report.ok and needle in report.reasons[0], (name, report.reasons)


def test_the_differing_suite_field_is_named(oracle_bundle: Path, tmp_path: Path) -> None:
    folder = _copy(oracle_bundle, tmp_path)
    v = json.loads((folder / "manifest.json").read_text())["suite"]["version"]
    _edit_manifest(folder, lambda m: m["suite"].update(version=v + 1))
    reason = verify_bundle(folder).reasons[0]
    assert f"suite.version is {v + 1}" in reason and f"ships {versions_phrase('quick', suite_versions('quick'))};" \
        in reason
    assert f"but this rollgym has quick@v{v}" not in reason
    _edit_manifest(folder, lambda m: m["suite"].update(version=v, label="quick@v77"))
    assert "suite.label is 'quick@v77'" in verify_bundle(folder).reasons[0]
    sv = builtin_suite("search").version
    _edit_manifest(folder, lambda m: m["suite"].update(label=f"quick@v{v}", name="search", version=sv))
    assert f"suite.label is 'quick@v{v}', but its suite.name and suite.version make search@v{sv}" in \
        verify_bundle(folder).reasons[0]


def _secret_files(tmp_path: Path) -> list[Path]:
    """Files a server must never read for a bundle: YAML that would parse, and text that would not."""
    yaml_file = tmp_path / "secret-suite.yaml"
    yaml_file.write_text(f"{CANARY}: 1\nname: {CANARY}\n")
    text_file = tmp_path / "secret.txt"
    text_file.write_text(f"root:{CANARY}:19000:0:99999:7:::\n")
    return [yaml_file, text_file]


def test_a_suite_path_in_a_manifest_reads_no_file(oracle_bundle: Path, tmp_path: Path) -> None:
    shadow = Path("/etc/shadow")
    secret_lines = []
    if shadow.is_file() and os.access(shadow, os.R_OK):
        secret_lines = [line for line in shadow.read_text().splitlines() if line.strip()]
    quick_yaml = Path(__file__).resolve().parents[2] / "rollgym" / "benchmarks" / "suites" / "quick.yaml"
    names = [str(p) for p in _secret_files(tmp_path)] + [
        "/etc/shadow", "/etc/passwd", "../../../../etc/shadow", str(quick_yaml), "quick.yaml",
        "suites/quick", "quick/../quick", "x" * 10_000,
    ]
    for name in names:
        folder = _copy(oracle_bundle, tmp_path, f"b{abs(hash(name))}")
        _edit_manifest(folder, lambda m, name=name: m["suite"].update(name=name))
        report = verify_bundle(folder)
        text = " ".join(report.reasons)
        assert not report.ok, name
        assert CANARY not in text and not any(line in text for line in secret_lines)
        assert "root:" not in text and "name: quick" not in text and len(text) < 1000
        if len(name) <= 64:
            assert "Unknown suite" in text or "suite.name" in text, text


def test_builtin_suites_load_by_name_and_version_only(tmp_path: Path) -> None:
    for name in builtin_suites():
        assert builtin_suite(name).name == name
    v = builtin_suite("quick").version
    assert builtin_suite("quick", v).label == f"quick@v{v}"
    shipped = re.escape(versions_phrase("quick", suite_versions("quick")))
    with pytest.raises(ConfigError, match=f"has no version {v + 1}; this rollgym ships {shipped}"):
        builtin_suite("quick", v + 1)
    for bad in ["/etc/shadow", "quick.yaml", "../quick", "quick@v1", "", "Quick"]:
        with pytest.raises(ConfigError, match="Unknown suite") as info:
            builtin_suite(bad)
        assert "shadow" not in str(info.value) or bad == "/etc/shadow"
    with pytest.raises(ConfigError, match="Unknown suite"):
        builtin_suite(12)  # type: ignore[arg-type]
    # the command line may still load a suite file, but a YAML error quotes no line of it
    broken = tmp_path / "broken.yaml"
    broken.write_text(f"name: [{CANARY}\n")
    with pytest.raises(ConfigError) as info:
        load_suite(str(broken))
    assert CANARY not in str(info.value) and "line" in str(info.value)
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00" + CANARY.encode())
    with pytest.raises(ConfigError) as info:
        load_suite(str(binary))
    assert CANARY not in str(info.value)


@pytest.mark.parametrize(("path", "value", "needle"), [
    ("suite", "quick", "suite must be an object"),
    ("suite.version", "1", "suite.version must be an integer >= 1"),
    ("suite.name", ["quick"], "suite.name must be the name of a built-in suite"),
    ("agent", [], "agent must be an object"),
    ("agent.label", "x" * 201, "agent.label must be null or 1 to 200"),
    ("agent.label", "bad\u0000label", "agent.label must be null or 1 to 200 printable"),
    ("agent.model_size_b", float("nan"), "agent.model_size_b must be"),
    ("agent.model_size_b", "7", "agent.model_size_b must be"),
    ("seed", -1, "seed must be null or an integer >= 0"),
    ("entries", {"a": 1}, "entries must be a list of objects"),
    ("only", "countdown", "only must be null or a list"),
])
def test_manifest_fields_are_checked(oracle_bundle: Path, path: str, value: Any, needle: str) -> None:
    manifest = json.loads((oracle_bundle / "manifest.json").read_text())
    target = manifest
    *parents, last = path.split(".")
    for part in parents:
        target = target[part]
    target[last] = value
    with pytest.raises(ConfigError, match=needle.replace("(", r"\(")):
        check_manifest(manifest)


@pytest.mark.parametrize(("case", "edit"), [
    ("message without content", lambda L: L[1]["trajectory"]["messages"][-1].pop("content")),
    ("message content a list", lambda L: L[1]["trajectory"]["messages"][-1].update(content=[1, 2])),
    ("messages not objects", lambda L: L[1]["trajectory"].update(messages=[1, 2])),
    ("reward a string", lambda L: L[1]["trajectory"].update(reward="x")),
    ("task a string", lambda L: L[1].update(task="x")),
    ("task missing", lambda L: L[1].update(task=None)),
    ("trajectory missing", lambda L: L[1].update(trajectory=None)),
    ("sample index a word", lambda L: L[1]["trajectory"].update(sample_idx="zero")),
    ("info a list", lambda L: L[1]["trajectory"].update(info=[1])),
    ("seed beyond 64 bits", lambda L: L[1]["trajectory"].update(seed=10**40)),
    ("header env_kwargs a list", lambda L: L[0].update(env_kwargs=[1])),
])
def test_hostile_transcript_values_are_rejected_not_crashed(oracle_bundle: Path, tmp_path: Path, case: str,
                                                            edit: Any) -> None:
    folder = _copy(oracle_bundle, tmp_path)
    _edit_lines(folder / "transcripts" / "countdown.jsonl", edit)
    report = verify_bundle(folder)
    assert not report.ok and report.reasons[0].startswith("entry countdown:"), (case, report.reasons)
