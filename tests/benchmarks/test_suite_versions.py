"""Suite versions: older versions stay loadable, frozen and verifiable; the bare name is the newest.

The committed bundles under docs/ were made on older suite versions (docs/baselines.md: quick@v2, quick@v3,
ladders@v2); they must keep verifying after a suite gets a new version. A suite's newest version runs no env id
whose successor closes a security hole (quick@v4, conversation@v2 and ladders@v3 moved to the v1 ids).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from importlib import resources
from pathlib import Path

import pytest

from rollgym.benchmarks.runner import AgentSpec, run_suite
from rollgym.benchmarks.suite import builtin_suite, builtin_suites, load_suite, parse_suite_label, suite_versions
from rollgym.core.errors import ConfigError
from rollgym.leaderboard.ingest import check_bundle_archive
from rollgym.leaderboard.verify import verify_bundle

REPO = Path(__file__).resolve().parents[2]
#: A shipped version never changes: the hash of its config (entries, sizes, seeds, kwargs), pinned.
FROZEN_CONFIGS = {"quick@v2": "4132683c5e4f1e1d", "quick@v3": "be45920010446ad9", "ladders@v1": "28713b0a366fcc55",
                  "ladders@v2": "f038659d87f12183", "conversation@v1": "84d576f59f961ba5"}
NEW_IN_QUICK_V3 = {"usersim": "UserSim-v0", "kuhn-nash": "KuhnPoker-v0", "negotiation-fair": "Negotiation-v0"}
#: Ids kept registered only to reproduce old results, and the successor that closes their hole. No suite's
#: newest version may run one; a frozen older version may (its bundles must still verify).
SUPERSEDED_FOR_SECURITY = {
    "UserSim-v0": "UserSim-v1",  # a yes to a negated confirmation request confirmed the call (SECURITY.md)
    "KuhnPoker-v0": "KuhnPoker-v1",  # the deal and the bot's seed sat in the task's public meta
    "Negotiation-v0": "Negotiation-v1",  # both value vectors and the bot's seed sat in the task's public meta
    "RepoRepairReal-v0": "RepoRepairReal-v1",  # package code could rewrite pytest's reports
}
#: The suite versions that moved to those successors, and the version before each (same entries otherwise).
SECURITY_BUMPS = {"quick@v4": "quick@v3", "conversation@v2": "conversation@v1", "ladders@v3": "ladders@v2"}
QUICK_VERSIONS = "quick@v2, quick@v3 and quick@v4 (plain 'quick' is quick@v4)"


def _config_hash(label: str) -> str:
    suite = load_suite(label)
    return hashlib.sha256(json.dumps(suite.config(), sort_keys=True).encode()).hexdigest()[:16]


def _committed_bundles() -> list[Path]:
    """Every bundle under docs/: archives, and folders holding a manifest.json."""
    docs = REPO / "docs"
    archives = sorted(docs.rglob("*.tar.gz"))
    folders = sorted(p.parent for p in docs.rglob("manifest.json"))
    return archives + folders


def test_docs_hold_the_baseline_bundle() -> None:
    names = [p.name for p in _committed_bundles()]
    assert "smollm2-135m-instruct-greedy-quick-countdown.tar.gz" in names  # the scan below is not empty


@pytest.mark.parametrize("bundle", _committed_bundles(), ids=lambda p: p.name)
def test_every_committed_bundle_still_verifies(bundle: Path) -> None:
    report = verify_bundle(bundle)
    assert report.ok, report.reasons
    label = report.manifest["suite"]["label"]
    name, version = parse_suite_label(label)
    assert version in suite_versions(name)
    if bundle.name.endswith(".tar.gz"):  # and the leaderboard's upload check files it under its own version
        assert check_bundle_archive(bundle).suite == label


def test_the_baseline_bundle_is_on_an_older_version_than_the_newest() -> None:
    report = verify_bundle(REPO / "docs" / "baselines" / "smollm2-135m-instruct-greedy-quick-countdown.tar.gz")
    assert report.ok and report.manifest["suite"]["label"] == "quick@v2"
    assert load_suite("quick").version > 2  # so this is the case the versions exist for


def test_the_bare_name_is_the_newest_version_and_older_ones_load_by_label() -> None:
    assert suite_versions("quick") == [2, 3, 4]
    assert load_suite("quick").label == builtin_suite("quick").label == "quick@v4"
    assert suite_versions("conversation") == [1, 2] and suite_versions("ladders") == [1, 2, 3]
    for text in ("quick@v2", "quick@2"):
        assert load_suite(text).label == "quick@v2"
    assert builtin_suite("quick", 2).label == "quick@v2"
    for name in builtin_suites():
        versions = suite_versions(name)
        assert versions == sorted(versions) and versions[-1] == load_suite(name).version
        for version in versions:
            assert load_suite(f"{name}@v{version}").label == f"{name}@v{version}"


def test_frozen_files_are_older_versions_of_a_builtin_suite_and_never_change() -> None:
    folder = resources.files("rollgym.benchmarks") / "suites" / "history"
    labels = []
    for item in folder.iterdir():
        match = re.fullmatch(r"(.+)\.v(\d+)\.yaml", item.name)
        assert match, f"{item.name} is not named NAME.vN.yaml"
        name, version = match.group(1), int(match.group(2))
        assert name in builtin_suites() and version < load_suite(name).version
        labels.append(f"{name}@v{version}")
    assert sorted(labels) == sorted(FROZEN_CONFIGS)
    for label, pinned in FROZEN_CONFIGS.items():
        assert _config_hash(label) == pinned, f"{label} changed; make a new version instead"


def test_quick_v3_is_quick_v2_plus_the_conversation_and_self_play_entries() -> None:
    v2, v3 = load_suite("quick@v2"), load_suite("quick@v3")
    assert [e.config() for e in v3.entries[: len(v2.entries)]] == [e.config() for e in v2.entries]
    added = {e.name: e.env_id for e in v3.entries[len(v2.entries):]}
    assert added == NEW_IN_QUICK_V3
    assert v3.entry("kuhn-nash").env_kwargs == {"opponent": "nash"}  # the reference (equilibrium) bot
    assert v3.entry("negotiation-fair").env_kwargs == {"opponent": "fair"}
    assert v3.partition()[1] == []  # every entry runs on a plain install


@pytest.mark.parametrize("text", ["quick@v7", "quick@v1", "quick@99"])
def test_an_unknown_version_gets_one_sentence_naming_the_shipped_ones(text: str) -> None:
    version = parse_suite_label(text)[1]
    for attempt in (lambda: load_suite(text), lambda: builtin_suite("quick", version)):
        with pytest.raises(ConfigError) as info:
            attempt()
        message = str(info.value)
        assert message == f"Suite quick has no version {version}; this rollgym ships {QUICK_VERSIONS}."


def test_a_malformed_version_gets_one_sentence() -> None:
    for text in ("quick@vx", "quick@v", "quick@v-1", "quick@v" + "9" * 40, "quick@v２"):
        with pytest.raises(ConfigError, match=r"is not a version number; write the suite as NAME or NAME@vN") as info:
            load_suite(text)
        assert len(str(info.value)) < 140
    with pytest.raises(ConfigError, match=r"^Suite search has no version 2; this rollgym ships search@v1\.$"):
        load_suite("search@v2")


def _relabelled(bundle: Path, folder: Path, version: int) -> Path:
    """A copy of ``bundle`` in ``folder`` whose manifest claims quick@v``version``."""
    shutil.copytree(bundle, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["suite"].update(version=version, label=f"quick@v{version}")
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def test_an_unshipped_version_in_a_manifest_names_the_shipped_ones(oracle_bundle: Path, tmp_path: Path) -> None:
    report = verify_bundle(_relabelled(oracle_bundle, tmp_path / "b", 1))
    assert not report.ok
    assert report.reasons == [f"The manifest's suite.version is 1, but this rollgym ships {QUICK_VERSIONS}; "
                              "rerun a shipped version."]


def test_a_v4_bundle_relabelled_v2_is_rejected(oracle_bundle: Path, tmp_path: Path) -> None:
    """Claiming an older version does not make v4's entries pass as v2's."""
    report = verify_bundle(_relabelled(oracle_bundle, tmp_path / "b", 2))
    assert not report.ok and "do not match quick@v2" in report.reasons[0]
    assert "usersim" in report.reasons[0]


def test_reference_agents_play_the_new_entries_and_their_bundles_verify(tmp_path: Path) -> None:
    scores = {}
    for agent in ("oracle", "random"):
        folder = tmp_path / agent
        summary = run_suite(load_suite("quick"), AgentSpec(agent=agent), folder, limit=4, only=list(NEW_IN_QUICK_V3))
        report = verify_bundle(folder)
        assert report.ok, report.reasons
        assert report.episodes == 4 * len(NEW_IN_QUICK_V3)
        scores[agent] = {name: summary["entries"][name] for name in NEW_IN_QUICK_V3}
        assert all(s["failures"] == 0 for s in scores[agent].values()), agent
    # UserSim is deterministic: the oracle completes every conversation, the random agent none
    assert scores["oracle"]["usersim"]["accuracy"]["value"] == 1.0
    assert scores["random"]["usersim"]["accuracy"]["value"] == 0.0
    # Kuhn poker and Negotiation are chance games (see CHANCE_IDS): compare the mean over the entry
    for name in ("kuhn-nash", "negotiation-fair"):
        assert scores["oracle"][name]["mean_reward"]["value"] >= scores["random"][name]["mean_reward"]["value"], name


def test_ladders_v2_is_ladders_v1_plus_the_math_levels() -> None:
    v1, v2 = load_suite("ladders@v1"), load_suite("ladders@v2")
    old = {e.name: e.config() for e in v1.entries}
    assert {e.name: e.config() for e in v2.entries if e.name in old} == old
    added = [e for e in v2.entries if e.name not in old]
    assert {(e.env_id, e.level) for e in added} == {("MATH500-v1", "level-1"), ("MATH500-v1", "level-2")}


def test_no_current_suite_runs_an_id_superseded_for_security() -> None:
    """quick@v3 ran UserSim-v0, which took a yes to "confirm that I will NOT transfer" as a confirmation."""
    from rollgym.core.registration import env_info

    for successor in SUPERSEDED_FOR_SECURITY.values():
        env_info(successor)  # registered, so a suite can move to it
    found = [f"{load_suite(name).label} {e.name}: {e.env_id}" for name in builtin_suites()
             for e in load_suite(name).entries if e.env_id in SUPERSEDED_FOR_SECURITY]
    assert found == [], "a suite's newest version runs an id superseded for security; make a version on the successor"


@pytest.mark.parametrize(("new", "old"), sorted(SECURITY_BUMPS.items()))
def test_a_security_bump_changes_only_the_superseded_ids(new: str, old: str) -> None:
    before, after = load_suite(old), load_suite(new)
    assert after.version == before.version + 1 and load_suite(after.name).label == new
    moved = 0
    for a, b in zip(before.entries, after.entries, strict=True):
        expected = a.config()
        if a.env_id in SUPERSEDED_FOR_SECURITY:
            expected["env_id"] = SUPERSEDED_FOR_SECURITY[a.env_id]
            moved += 1
        assert b.config() == expected, b.name
    assert moved > 0
    assert after.partition()[1] == []  # the successors run on a plain install


def test_the_baseline_bundles_on_the_bumped_versions_stay_on_their_frozen_versions() -> None:
    """docs/baselines' SmolLM2 bundles were made on ladders@v2 and quick@v3 (verified by the test above)."""
    baselines = REPO / "docs" / "baselines"
    for file, label in (("smollm2-135m-instruct-ladders.tar.gz", "ladders@v2"),
                        ("smollm2-135m-instruct-quick-v3-countdown-sudoku.tar.gz", "quick@v3")):
        assert check_bundle_archive(baselines / file).suite == label
        name, version = parse_suite_label(label)
        assert version in suite_versions(name) and version < load_suite(name).version


def test_a_v3_bundle_relabelled_v4_is_rejected(tmp_path: Path) -> None:
    """A run on UserSim-v0 (the negated-confirmation hole) cannot be filed under quick@v4."""
    folder = tmp_path / "v3"
    run_suite(load_suite("quick@v3"), AgentSpec(agent="oracle"), folder, limit=2, only=["usersim"])
    assert verify_bundle(folder).ok
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["suite"].update(version=4, label="quick@v4")
    (folder / "manifest.json").write_text(json.dumps(manifest))
    report = verify_bundle(folder)
    assert not report.ok and report.reasons[0].startswith("entry usersim: "), report.reasons
