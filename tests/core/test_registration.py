import subprocess
import sys

import gymnasium as gym
import pytest

import rollgym
from rollgym.core import ConfigError, UnknownEnvError, env_info, register_env
from rollgym.core.registration import module_source_hash


def test_unknown_id_suggests_close_ids():
    register_env("Spellcheck-v0", "rollgym.core.env:TextEnv", description="x", family="test",
                 components=["rollgym.core.task"])
    with pytest.raises(UnknownEnvError, match=r"Unknown env id 'Spelcheck-v0'\. Did you mean Spellcheck-v0"):
        env_info("Spelcheck-v0")
    with pytest.raises(KeyError):  # still catchable as the built-in error
        env_info("Nothing-like-it-v9")


def test_prefixed_id_resolves():
    register_env("Prefixed-v0", "rollgym.core.env:TextEnv", description="x", family="test",
                 components=["rollgym.core.task"])
    assert env_info("rollgym:Prefixed-v0").id == "Prefixed-v0"


def test_content_hash_ignores_docstrings_and_comments(tmp_path, monkeypatch):
    pkg = tmp_path / "hashdemo"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text('"""Doc."""\n# comment\ndef f():\n    """Doc."""\n    return 1\n')
    (pkg / "b.py").write_text('"""Other doc."""\n\ndef f():\n    return 1  # different comment\n')
    (pkg / "c.py").write_text("def f():\n    return 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert module_source_hash("hashdemo.a") == module_source_hash("hashdemo.b")
    assert module_source_hash("hashdemo.a") != module_source_hash("hashdemo.c")


def test_content_hash_depends_on_fixed_kwargs():
    a = register_env("KwA-v0", "rollgym.core.env:TextEnv", description="x", family="test",
                     components=["rollgym.core.task"], kwargs={"size": 4})
    b = register_env("KwB-v0", "rollgym.core.env:TextEnv", description="x", family="test",
                     components=["rollgym.core.task"], kwargs={"size": 9})
    assert a.content_hash != b.content_hash


def test_make_wraps_bad_arguments():
    register_env("Strict-v0", "tests.core.test_env:EchoEnv", description="x", family="test",
                 components=["rollgym.core.task"])
    with pytest.raises(ConfigError, match=r"Strict-v0 has no option 'colour'\. Its options are crash, "):
        rollgym.make("Strict-v0", colour="red")


def test_every_registered_env_is_listed_with_a_description():
    infos = rollgym.list_envs()
    assert infos, "import rollgym registered no env"
    for info in infos:
        assert info.description and info.id in gym.registry


def test_prefix_form_works_without_importing_rollgym():
    # Countdown needs no extra, so this runs in a bare install too
    code = "import gymnasium as gym; env = gym.make('rollgym:Countdown-v0'); print(type(env.unwrapped).__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "CountdownEnv"
