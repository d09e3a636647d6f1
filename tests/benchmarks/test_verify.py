"""Verification rejects every kind of tampering with a clear reason and passes a genuine bundle."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from rollgym.benchmarks.runner import AgentSpec, run_suite
from rollgym.benchmarks.suite import load_suite
from rollgym.bundles.format import BundleError, open_bundle, pack_bundle
from rollgym.leaderboard.verify import hidden_seed, verify_bundle

REPO = Path(__file__).resolve().parents[2]


def _copy(bundle: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "bundle"
    shutil.copytree(bundle, folder)
    return folder


def _edit_lines(path: Path, edit: object) -> None:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    edit(lines)  # type: ignore[operator]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _rejected(folder: Path, *needles: str, **kwargs: object) -> list[str]:
    report = verify_bundle(folder, **kwargs)  # type: ignore[arg-type]
    assert not report.ok
    text = " ".join(report.reasons)
    for needle in needles:
        assert needle in text, text
    return report.reasons


def test_a_genuine_bundle_passes_as_folder_and_archive(oracle_bundle: Path, tmp_path: Path) -> None:
    report = verify_bundle(oracle_bundle)
    assert report.ok, report.reasons
    assert report.episodes == 2 * 4 + 2 * 4 + 2 + 2 + 2 + 2 + 2  # quick@v4, two tasks per entry
    claimed = json.loads((oracle_bundle / "summary.json").read_text())
    assert report.summary == claimed
    archive = pack_bundle(_copy(oracle_bundle, tmp_path), tmp_path / "b.tar.gz")
    assert verify_bundle(archive).ok
    assert pack_bundle(oracle_bundle, tmp_path / "again.tar.gz").read_bytes() == archive.read_bytes()


def test_an_edited_score_is_rejected(oracle_bundle: Path, tmp_path: Path) -> None:
    folder = _copy(oracle_bundle, tmp_path)
    summary = json.loads((folder / "summary.json").read_text())
    summary["entries"]["toolworld"]["accuracy"]["value"] = 0.5
    (folder / "summary.json").write_text(json.dumps(summary))
    reasons = _rejected(folder, "summary.json claims entries.toolworld.accuracy.value = 0.5", "edited score")
    assert len(reasons) == 1


def test_an_edited_reward_in_a_transcript_is_rejected(tmp_path: Path) -> None:
    random_run = tmp_path / "random"
    run_suite(load_suite("quick"), AgentSpec(agent="random"), random_run, limit=2, only=["countdown"])
    folder = _copy(random_run, tmp_path)

    def claim_success(lines: list[dict]) -> None:
        trajectory = lines[1]["trajectory"]
        trajectory["reward"], trajectory["step_rewards"] = 1.0, [1.0]
        trajectory["info"]["correct"] = True

    _edit_lines(folder / "transcripts" / "countdown.jsonl", claim_success)
    _rejected(folder, "task 0 sample 0", "reward 1.0 is recorded but the current verifier gives 0.0")


def test_a_swapped_task_is_rejected(oracle_bundle: Path, tmp_path: Path) -> None:
    folder = _copy(oracle_bundle, tmp_path)

    def swap(lines: list[dict]) -> None:
        for line in lines[1:]:
            line["task_index"] = 1 - line["task_index"]

    _edit_lines(folder / "transcripts" / "sudoku4x4.jsonl", swap)
    _rejected(folder, "entry sudoku4x4", "swapped task")


def test_a_response_from_another_task_is_rejected(oracle_bundle: Path, tmp_path: Path) -> None:
    folder = _copy(oracle_bundle, tmp_path)

    def borrow(lines: list[dict]) -> None:
        other = next(line for line in lines[1:] if line["task_index"] == 1)
        answer = next(m for m in other["trajectory"]["messages"] if m["role"] == "assistant")["content"]
        mine = next(line for line in lines[1:] if line["task_index"] == 0)
        for message in mine["trajectory"]["messages"]:
            if message["role"] == "assistant":
                message["content"] = answer

    _edit_lines(folder / "transcripts" / "countdown.jsonl", borrow)
    _rejected(folder, "entry countdown: task 0 sample 0", "the current verifier gives 0.0")


def test_a_changed_seed_is_rejected(oracle_bundle: Path, tmp_path: Path) -> None:
    reseeded = tmp_path / "seed7"
    run_suite(load_suite("quick"), AgentSpec(agent="oracle"), reseeded, seed=7, limit=2, only=["countdown"])
    _rejected(reseeded, "Changed seed", "replaced the suite's seeds with 7")
    # hiding the new seed in the manifest does not help: the transcripts and tasks give it away
    manifest = json.loads((reseeded / "manifest.json").read_text())
    manifest["seed"] = None
    (reseeded / "manifest.json").write_text(json.dumps(manifest))
    _rejected(reseeded, "seed=")
    # a seed issued by a leaderboard must be the one used
    secret_seed = hidden_seed("s3cret", "submission-1")
    _rejected(oracle_bundle, "the seed issued for this submission is", expected_seed=secret_seed)


def test_hidden_seed_bundles_pass_only_with_their_seed(tmp_path: Path) -> None:
    seed = hidden_seed("s3cret", "abc")
    assert seed == hidden_seed(b"s3cret", "abc") and seed != hidden_seed("s3cret", "abd") and 0 <= seed < 2**31
    folder = tmp_path / "hidden"
    run_suite(load_suite("quick"), AgentSpec(agent="oracle"), folder, seed=seed, limit=2, only=["countdown"])
    assert verify_bundle(folder, expected_seed=seed).ok
    assert not verify_bundle(folder, expected_seed=seed, allow_limit=False).ok
    _rejected(folder, "issued", expected_seed=hidden_seed("s3cret", "other"))


def test_a_stale_env_version_is_rejected(oracle_bundle: Path, tmp_path: Path) -> None:
    folder = _copy(oracle_bundle, tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["entries"][1]["spec_hash"] = "0123456789abcdef"
    (folder / "manifest.json").write_text(json.dumps(manifest))

    def stale(lines: list[dict]) -> None:
        lines[0]["spec_hash"] = "0123456789abcdef"

    _edit_lines(folder / "transcripts" / "sudoku4x4.jsonl", stale)
    _rejected(folder, "entry sudoku4x4", "stale env version", "0123456789abcdef")


def test_a_bundle_from_before_a_refactor_re_pin_verifies_only_through_the_lineage(
        oracle_bundle: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A refactor re-pins an id's hash without changing its tasks or scores; bundles made before it keep
    verifying when the old hash is in ``spec_lineage.json`` (and their episodes are replayed on the new code),
    and are stale without it."""
    from rollgym.core import registration

    original = registration.EnvInfo.__dict__["content_hash"].func
    before = registration.env_info("Sudoku4x4-v0").content_hash
    monkeypatch.setattr(registration.EnvInfo, "content_hash", property(
        lambda info: "feedfacefeedface" if info.id == "Sudoku4x4-v0" else original(info)))
    monkeypatch.setattr(registration, "_LINEAGE", {})
    _rejected(oracle_bundle, "entry sudoku4x4", "stale env version", "feedfacefeedface")
    monkeypatch.setattr(registration, "_LINEAGE", {"Sudoku4x4-v0": [before]})
    report = verify_bundle(oracle_bundle)
    assert report.ok, report.reasons
    monkeypatch.setattr(registration, "_LINEAGE", {"Countdown-v0": [before]})  # another id's lineage: no help
    _rejected(oracle_bundle, "entry sudoku4x4", "stale env version")


def test_the_shipped_lineage_names_registered_ids_and_older_hashes_only() -> None:
    from importlib import resources

    from rollgym.core.registration import env_info

    lineage = json.loads((resources.files("rollgym.core") / "spec_lineage.json").read_text())
    for env_id, hashes in lineage.items():
        info = env_info(env_id)
        assert info.content_hash not in hashes and len(set(hashes)) == len(hashes), env_id
        assert all(isinstance(h, str) and len(h) == 16 for h in hashes), env_id


def test_missing_episodes_and_left_out_entries_are_rejected(oracle_bundle: Path, tmp_path: Path) -> None:
    folder = _copy(oracle_bundle, tmp_path)
    _edit_lines(folder / "transcripts" / "countdown.jsonl", lambda lines: lines.pop())
    _rejected(folder, "episode(s) are missing")
    folder2 = tmp_path / "b2"
    shutil.copytree(oracle_bundle, folder2)
    manifest = json.loads((folder2 / "manifest.json").read_text())
    manifest["entries"] = [e for e in manifest["entries"] if e["name"] != "toolworld"]
    (folder2 / "manifest.json").write_text(json.dumps(manifest))
    _rejected(folder2, "leaves out ['toolworld']")


def test_unsafe_or_broken_archives_are_refused(tmp_path: Path) -> None:
    evil = tmp_path / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as tar:
        data = b"{}"
        member = tarfile.TarInfo("../escape.json")
        member.size = len(data)
        tar.addfile(member, io.BytesIO(data))
    with pytest.raises(BundleError, match="unsafe path"):
        open_bundle(evil)
    assert not (tmp_path.parent / "escape.json").exists()
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"this is not an archive")
    report = verify_bundle(junk)
    assert not report.ok and "not a readable .tar.gz bundle" in report.reasons[0]


def test_cli_verify_exit_status(oracle_bundle: Path, tmp_path: Path) -> None:
    ok = subprocess.run([sys.executable, "-m", "rollgym.cli", "leaderboard", "verify", str(oracle_bundle)],
                        capture_output=True, text=True, cwd=REPO, timeout=300)
    assert ok.returncode == 0 and ok.stdout.startswith("OK"), ok.stderr
    folder = _copy(oracle_bundle, tmp_path)
    summary = json.loads((folder / "summary.json").read_text())
    summary["score"] = 0.99
    (folder / "summary.json").write_text(json.dumps(summary))
    bad = subprocess.run([sys.executable, "-m", "rollgym.cli", "leaderboard", "verify", str(folder)],
                         capture_output=True, text=True, cwd=REPO, timeout=300)
    assert bad.returncode == 1 and "REJECTED" in bad.stderr and "score" in bad.stderr
