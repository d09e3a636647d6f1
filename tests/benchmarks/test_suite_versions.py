"""Suite versions: older versions stay loadable, frozen and verifiable; the bare name is the newest.

The committed bundles under docs/ were made on older suite versions (docs/baselines.md: quick@v2);
they must keep verifying after a suite gets a new version.
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
from rollgym.benchmarks.verify import verify_bundle
from rollgym.core.errors import ConfigError
from rollgym.leaderboard.ingest import check_bundle_archive

REPO = Path(__file__).resolve().parents[2]
#: A shipped version never changes: the hash of its config (entries, sizes, seeds, kwargs), pinned.
FROZEN_CONFIGS = {"quick@v2": "4132683c5e4f1e1d"}
NEW_IN_QUICK_V3 = {"usersim": "UserSim-v0", "kuhn-nash": "KuhnPoker-v0", "negotiation-fair": "Negotiation-v0"}


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
    assert suite_versions("quick") == [2, 3]
    assert load_suite("quick").label == builtin_suite("quick").label == "quick@v3"
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
        assert message == (f"Suite quick has no version {version}; this rollgym ships quick@v2 and quick@v3 "
                           "(plain 'quick' is quick@v3).")


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
    assert report.reasons == ["The manifest's suite.version is 1, but this rollgym ships quick@v2 and quick@v3 "
                              "(plain 'quick' is quick@v3); rerun a shipped version."]


def test_a_v3_bundle_relabelled_v2_is_rejected(oracle_bundle: Path, tmp_path: Path) -> None:
    """Claiming the older version does not make v3's entries pass as v2's."""
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
