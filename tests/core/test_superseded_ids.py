"""The id policy (docs/ids.md): a superseded id warns once, names its successor and leaves in a stated release."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import tomllib

import rollgym
from rollgym.core.registration import RETIRED_IN, SupersededEnvWarning, superseded_ids

REPO = Path(__file__).resolve().parents[2]

#: Makes a superseded id twice with gym.make and once with rollgym.make, and a current id, recording every warning.
PROBE = """
import json, warnings
import gymnasium as gym
import rollgym
from rollgym.core.registration import SupersededEnvWarning
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    gym.make("ConnectFour-v0").close()
    gym.make("ConnectFour-v0").close()
    rollgym.make("ConnectFour-v0").close()
    rollgym.make("KuhnPoker-v0").close()
    gym.make("ConnectFour-v1").close()
    rollgym.make("Countdown-v0").close()
print(json.dumps([[str(w.message), w.filename] for w in caught if issubclass(w.category, SupersededEnvWarning)]))
"""


def test_a_superseded_id_warns_once_naming_its_successor_and_a_current_id_does_not() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, check=True,
                         cwd=REPO)
    caught = json.loads(out.stdout)
    assert [message.split()[0] for message, _ in caught] == ["ConnectFour-v0", "KuhnPoker-v0"], caught
    message, filename = caught[0]
    assert "superseded by ConnectFour-v1" in message and f"leaves rollgym in release {RETIRED_IN}" in message
    assert filename == "<string>", "the warning points at the caller's line, not at rollgym or gymnasium"


def test_the_warning_is_a_deprecation_warning() -> None:
    assert issubclass(SupersededEnvWarning, DeprecationWarning)
    assert rollgym.SupersededEnvWarning is SupersededEnvWarning


def test_every_superseded_id_names_a_registered_current_successor_of_the_same_name() -> None:
    ids = {info.id for info in rollgym.list_envs()}
    found = superseded_ids()
    assert len(found) >= 30 and "ConnectFour-v0" in found
    for old, new in found.items():
        assert new in ids, f"{old} names {new}, which is not registered"
        assert rollgym.env_info(new).superseded_by is None, f"{old} names {new}, itself superseded"
        name, _, version = old.rpartition("-v")
        new_name, _, new_version = new.rpartition("-v")
        assert new_name == name and int(new_version) > int(version), (old, new)


def test_superseded_ids_and_descriptions_agree() -> None:
    for info in rollgym.list_envs():
        assert ("Superseded by" in info.description) == (info.superseded_by is not None), info.id


def test_superseded_specs_read_as_before() -> None:
    spec = gym.spec("ConnectFour-v0")
    assert spec.entry_point == "rollgym.envs.games.connect_four:ConnectFourEnv"
    assert pickle.loads(pickle.dumps(spec)).entry_point.env_id == "ConnectFour-v0"
    env = gym.make(pickle.loads(pickle.dumps(spec)))
    assert type(env.unwrapped).__name__ == "ConnectFourEnv"
    env.close()


def test_superseded_ids_have_not_outlived_their_release() -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    now = tuple(int(p) for p in version.split(".")[:2])
    retired = tuple(int(p) for p in RETIRED_IN.split(".")[:2])
    assert retired > now, (
        f"rollgym {version} is out, and the superseded ids were due to leave in {RETIRED_IN}: remove them "
        "(docs/ids.md says how) or state a later release")


def test_pytest_does_not_turn_the_warning_into_an_error() -> None:
    options = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    for entry in options.get("filterwarnings", []):
        action, _, rest = entry.partition(":")
        category = rest.split(":")[1] if rest.count(":") >= 1 else ""
        assert not (action == "error" and category in ("", "Warning", "DeprecationWarning", "SupersededEnvWarning")), (
            f"pytest's filterwarnings {entry!r} would fail every test that makes a superseded id")


def test_rollgym_list_marks_superseded_ids() -> None:
    out = subprocess.run([sys.executable, "-m", "rollgym", "list"], capture_output=True, text=True, timeout=120,
                         check=True, cwd=REPO).stdout
    assert "ConnectFour-v0 (superseded)" in out and "ConnectFour-v1 (superseded)" not in out
    assert f"leaves rollgym in {RETIRED_IN}" in out


def test_rollgym_eval_warns_for_a_superseded_id() -> None:
    args = ["eval", "KuhnPoker-v0", "--agent", "random", "--n", "1", "--group-size", "1", "--json"]
    result = subprocess.run([sys.executable, "-m", "rollgym", *args], capture_output=True, text=True, timeout=120,
                            cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert "rollgym: warning: KuhnPoker-v0 is superseded by KuhnPoker-v1" in result.stderr  # one line on the CLI
