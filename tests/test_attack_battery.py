"""The attack battery: the reward hacks that keep coming back, tried on every registered id.

Each family has its own hack suite; this file holds the attacks that apply to all of them, so a
new family passes them or fails CI (issue #41, "One battery for every family"):

* **Nothing hidden leaks.** Each id declares at registration what its episodes hide
  (``private_state``, see :mod:`rollgym.core.private`): the task's answer, the other seat's card or
  values, a bot's seed. After ``reset`` and after junk actions, no value of it appears in the
  observation or anywhere in ``info`` (``task_meta`` included); after random actions, nothing of it
  but the answer does (acting may find the answer: a lookup tool returns it).
* **Constant and echo answers win nothing.** ``""``, ``"0"``, ``"yes"``, the usual answer wrappers,
  the format example the prompt gives, and an echo of the observation: never ``correct``, and a
  mean reward of at most 0 over a few seeds (the oracle test in ``test_all_envs.py`` shows the same
  ids solved).
* **Graders never run what the agent planted.** Ids that declare ``grader="sandbox"`` are attacked
  with startup files (``sitecustomize.py``, ``usercustomize.py``, ``conftest.py``) written where the
  agent can write, and each names the family tests that plant files in its grader's way.
* **Truncated episodes count.** An episode cut by its step cap stays in the collector's and the
  benchmark's denominators.

A value counts as leaked when its text (a string as is, anything else as JSON; at least six
characters for a string, four for a number or a list) appears in an observation or in ``info``
and not in the task's prompt (which the agent is meant to read). Shorter values (a card's number,
a count) cannot be told from chance matches this way; the hooks return them also in a longer
form where they can (a deal as a list).
Ids declared ``cost="heavy"`` (a browser, real projects) play one seed instead of three, and two
constant policies instead of eight; each id's env is made once for the whole module.
"""

from __future__ import annotations

import importlib
import json
import re
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import rollgym
from rollgym.core.errors import ConfigError
from rollgym.core.registration import private_state, register_env
from tests.test_all_envs import ENV_IDS, PLAY_KWARGS, _require_extras

# Ids with a known leak, each an expected failure that must fail (strict) until fixed; none since issue #41.
KNOWN_LEAKS: dict[str, str] = {}


def _marked(ids: list[str], known: dict[str, str]) -> list[Any]:
    return [pytest.param(i, marks=pytest.mark.xfail(strict=True, reason=known[i])) if i in known else i for i in ids]


def _seeds(env_id: str) -> tuple[int, ...]:
    return (0,) if rollgym.env_info(env_id).cost == "heavy" else (0, 1, 2)


_ENVS: dict[str, gym.Env[Any, Any]] = {}


def _make(env_id: str) -> gym.Env[Any, Any]:
    """One env per id for the whole module (a browser or a sandbox starts once); closed at the end."""
    _require_extras(env_id)
    if env_id not in _ENVS:
        _ENVS[env_id] = rollgym.make(env_id, **PLAY_KWARGS.get(env_id, {}))
    return _ENVS[env_id]


@pytest.fixture(scope="module", autouse=True)
def _close_envs():
    yield
    while _ENVS:
        _ENVS.popitem()[1].close()


# -- declarations ------------------------------------------------------------------------------------------

def test_every_id_declares_what_it_hides_how_it_grades_and_what_it_costs():
    own = [i for i in ENV_IDS if rollgym.env_info(i).entry_point.startswith("rollgym.envs.")]
    assert len(own) > 70  # a plugin's ids (another package's entry point) are not bound by the declarations
    for env_id in own:
        info = rollgym.env_info(env_id)
        assert info.private_state and info.grader in ("pure", "sandbox") and info.cost in ("light", "heavy"), env_id
        module, _, name = info.private_state.partition(":")
        assert callable(getattr(importlib.import_module(module), name)), (env_id, info.private_state)
        if info.grader == "sandbox":
            assert env_id in PLANTED_FILE_TESTS, f"{env_id} grades in a sandbox but names no planted-file test"


@pytest.mark.parametrize(("kwargs", "says"), [
    ({}, "must declare private_state"),
    ({"private_state": "rollgym.core.private:task_answer"}, "must declare grader"),
    ({"private_state": "rollgym.core.private:task_answer", "grader": "trusted"}, "grader must be one of"),
    ({"private_state": "task_answer", "grader": "pure"}, "private_state must be 'module:function'"),
    ({"private_state": "rollgym.core.private:task_answer", "grader": "pure", "cost": "cheap"}, "cost must be"),
])
def test_a_family_that_does_not_declare_what_the_battery_checks_cannot_register(kwargs, says):
    with pytest.raises(ConfigError, match=says):
        register_env("Undeclared-v0", "rollgym.envs.countdown.env:CountdownEnv", description="x", family="puzzles",
                     **kwargs)
    assert "Undeclared-v0" not in gym.registry


# -- nothing hidden leaks ----------------------------------------------------------------------------------

def _forms(value: Any) -> list[str]:
    """The texts a hidden value could show up as: a string as is, anything else as JSON, and its parts."""
    if value is None or isinstance(value, bool):
        return []
    if isinstance(value, (np.integer, np.floating)):
        value = value.item()
    out = [value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)]
    if isinstance(value, dict):
        out += [form for item in value.values() for form in _forms(item)]
    elif isinstance(value, (list, tuple)):
        out += [form for item in value for form in _forms(item)]
    return out


def _needles(secrets: dict[str, Any], public: str) -> dict[str, str]:
    """Each checkable text of ``secrets`` -> its key: strings of at least 6 characters and numbers or
    containers whose JSON has at least 4, that the public prompt does not hold."""
    found: dict[str, str] = {}
    for key, value in secrets.items():
        for form in _forms(value):
            shortest = 6 if not form.startswith(("[", "{")) and not _NUMBER.fullmatch(form) else 4
            if len(form.strip()) >= shortest and form not in public:
                found.setdefault(form, key)
    return found


_NUMBER = re.compile(r"-?\d+(\.\d+)?")


def _texts(value: Any, path: str = "info") -> list[tuple[str, str]]:
    """(path, text) for every string leaf of ``value`` and the JSON of every container."""
    if isinstance(value, dict):
        own = [(path, json.dumps(value, default=str, ensure_ascii=False))]
        return own + [t for k, v in value.items() for t in _texts(v, f"{path}[{k!r}]")]
    if isinstance(value, (list, tuple)):
        own = [(path, json.dumps(value, default=str, ensure_ascii=False))]
        return own + [t for i, v in enumerate(value) for t in _texts(v, f"{path}[{i}]")]
    return [(path, value if isinstance(value, str) else json.dumps(value, default=str))]


def _leaks(needles: dict[str, str], observation: Any, info: dict[str, Any], when: str) -> list[str]:
    places = _texts(info)
    if isinstance(observation, str):
        places.append(("observation", observation))
    found = []
    for needle, key in needles.items():
        where = [path for path, text in places if needle in text]
        if where:
            deepest = max(where, key=len)
            found.append(f"{when}: {key} ({needle[:60]!r}) in {deepest}")
    return found


JUNK = ["", "I don't know.", "<answer></answer>"]


@pytest.mark.parametrize("env_id", _marked(ENV_IDS, KNOWN_LEAKS))
def test_nothing_hidden_appears_in_an_observation_or_info_before_the_episode_ends(env_id):
    from rollgym.agents import make_agent

    leaks: list[str] = []
    for seed in _seeds(env_id):
        env = _make(env_id)
        observation, info = env.reset(seed=seed)
        task = getattr(env.unwrapped, "task", None)
        public = getattr(task, "prompt", "") or ""
        secrets = private_state(env)
        everything = _needles(secrets, public)
        leaks += _leaks(everything, observation, info, f"seed {seed}, reset")
        for action in JUNK:  # junk finds nothing, so nothing hidden may show
            if not isinstance(env.action_space, rollgym.TextSpace):
                break
            observation, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break
            leaks += _leaks(everything, observation, info, f"seed {seed}, after {action!r}")
        else:
            # random play may find the answer (a lookup returns it), but nothing else hidden
            beyond = _needles({k: v for k, v in private_state(env).items() if k != "answer"}, public)
            agent = make_agent("random")
            agent.reset(seed)
            for step in range(4):
                observation, _, terminated, truncated, info = env.step(agent.act(observation, info))
                if terminated or truncated:
                    break
                leaks += _leaks(beyond, observation, info, f"seed {seed}, random step {step}")
    assert not leaks, f"{env_id} shows what it hides:\n" + "\n".join(leaks[:10])


def test_the_leak_check_finds_a_planted_leak():
    """The check is not vacuous: an answer copied into task_meta or the observation is found."""
    env = _make("Countdown-v0")
    observation, info = env.reset(seed=0)
    needles = _needles(private_state(env), env.unwrapped.task.prompt)
    assert needles and not _leaks(needles, observation, info, "reset")
    answer = env.unwrapped.task.answer
    found = _leaks(needles, observation, {**info, "task_meta": {**info["task_meta"], "solution": answer}}, "reset")
    assert found and "task_meta" in found[0]
    assert _leaks(needles, f"{observation} (psst: {answer})", info, "reset")


# -- constant and echo answers win nothing -----------------------------------------------------------------

CONSTANTS = ["", "0", "yes", "<answer>0</answer>", "\\boxed{0}", "Final Answer: 0"]
_EXAMPLE = re.compile(r"(?:for example|e\.g\.|such as|for instance)[,:]?\s*`([^`\n]{1,200})`", re.IGNORECASE)


def format_example(observation: str, info: dict[str, Any]) -> str | None:
    """The first backquoted example the prompt gives of an answer's form ("for example `...`"), if any."""
    match = _EXAMPLE.search(f"{info.get('system_prompt') or ''}\n{observation}")
    return match.group(1) if match else None


def _play_constant(env: gym.Env[Any, Any], seed: int, policy: str) -> tuple[float, bool]:
    observation, info = env.reset(seed=seed)
    constant = format_example(observation, info) if policy == "example" else policy
    total = 0.0
    for _ in range(30):
        action = observation if policy == "echo" else constant
        observation, reward, terminated, truncated, info = env.step(str(action))
        total += float(reward)
        if terminated or truncated:
            return total, bool(info.get("correct"))
    return total, False  # still going after 30 constant answers: it has won nothing yet


# Constant answers that win, found by this battery; each needs a change of the env, so a new -vN.
KNOWN_CONSTANT_WINS = {
    "ConnectFour-v0": "a fixed column ('Final Answer: 4', the prompt's example) wins 70% of 40 games on the default "
                      "board against the default random bot; ConnectFour-v1 plays the greedy bot by default "
                      "and passes (issue #41); v0 is kept for its tasks' reproducibility",
}


def _oracle_mean(env: gym.Env[Any, Any], env_id: str) -> float:
    from rollgym.agents import make_agent

    total = 0.0
    for seed in _seeds(env_id):
        agent = make_agent("oracle")
        agent.reset(seed)
        observation, info = env.reset(seed=seed)
        for _ in range(400):
            observation, reward, terminated, truncated, info = env.step(agent.act(observation, info))
            total += float(reward)
            if terminated or truncated:
                break
    return total / len(_seeds(env_id))


@pytest.mark.parametrize("env_id", _marked(ENV_IDS, KNOWN_CONSTANT_WINS))
def test_constant_and_echo_answers_win_nothing(env_id):
    env = _make(env_id)
    if not isinstance(env.action_space, rollgym.TextSpace):
        pytest.skip(f"{env_id} takes arrays, not text; its copy-last baseline is in its own tests")
    declared = rollgym.env_info(env_id)
    policies = [*CONSTANTS, "example", "echo"] if declared.cost == "light" else ["", "echo"]
    wins: list[str] = []
    for policy in policies:
        results = [_play_constant(env, seed, policy) for seed in _seeds(env_id)]
        mean = sum(r for r, _ in results) / len(results)
        # above the floor, or solved where nothing should be (a game with a floor may be won by chance)
        if mean > declared.reward_floor or (declared.reward_floor == 0 and any(c for _, c in results)):
            wins.append(f"{policy!r}: mean reward {mean:+.3f} (floor {declared.reward_floor}), "
                        f"correct {[c for _, c in results]}")
    if declared.reward_floor > 0:  # a floor above 0 must still leave room below the oracle
        assert declared.oracle is not None, f"{env_id} declares a reward floor but no oracle to put it under"
        oracle = _oracle_mean(env, env_id)
        assert declared.reward_floor < oracle, (env_id, declared.reward_floor, oracle)
    assert not wins, f"{env_id} rewards answers that ignore the task:\n" + "\n".join(wins)


def test_format_example_reads_the_prompts_example():
    assert format_example("Answer as `x`.", {"system_prompt": "End with, for example `Final Answer: check`."}) == (
        "Final Answer: check")
    assert format_example("No example here.", {}) is None


# -- graders never run what the agent planted --------------------------------------------------------------

# The family tests that plant files where an agent can write and show the grader ignores them.
PLANTED_FILE_TESTS: dict[str, list[str]] = {
    "Terminal-v0": ["tests/envs/code/test_isolation_attacks.py::test_terminal_planted_modules_cannot_forge_the_modes_"
                    "the_check_reads", "tests/envs/code/test_isolation_attacks.py::test_terminal_final_check_starts_"
                    "no_process_in_the_agents_sandbox"],
    "RepoRepairReal-v0": ["tests/envs/code/test_repo_real.py::test_editing_a_test_file_or_adding_a_conftest_scores_"
                          "zero", "tests/envs/code/test_repo_real.py::test_exiting_early_from_the_package_or_a_"
                          "sitecustomize_scores_zero"],
    "RepoRepairReal-v1": ["tests/envs/code/test_repo_real.py::test_v1_package_code_that_patches_pytest_reporting_"
                          "scores_zero"],
    "HumanEval-v0": ["tests/envs/code/test_isolation_attacks.py::test_a_humaneval_candidate_cannot_return_the_"
                     "recorded_reference_outputs"],
    "CodeGen-v0": ["tests/envs/code/test_isolation_attacks.py::test_a_codegen_copier_cannot_take_the_previous_"
                   "samples_answers"],
    # these three are planted by the battery itself (test_planted_startup_files_win_nothing)
    "TerminalGen-v0": [],
    "RepoRepair-v0": [],
    "HumanEvalTool-v0": [],
}


def test_each_planted_file_test_named_exists():
    for env_id, nodes in PLANTED_FILE_TESTS.items():
        assert env_id in ENV_IDS and rollgym.env_info(env_id).grader == "sandbox", env_id
        assert nodes or env_id in PLANTING_IDS, f"{env_id}: no planted-file test, and the battery plants nothing"
        for node in nodes:
            path, _, name = node.partition("::")
            module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
            assert callable(getattr(module, name, None)), node


# Startup files an interpreter or pytest would run, written where the agent writes (cwd is HOME there):
# each ends the process with status 0 at once, which an exit-status grader would read as a pass.
_STARTUP = "import os\nos._exit(0)\n"
PLANTED = {"sitecustomize.py": _STARTUP, "usercustomize.py": _STARTUP, "conftest.py": _STARTUP,
           "tests/conftest.py": _STARTUP, "pytest.ini": "[pytest]\naddopts = -p conftest\n"}


def _tool_call(name: str, arguments: dict[str, Any]) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def _plant_actions(tools: list[str]) -> list[str]:
    """Tool calls that write :data:`PLANTED` with whatever writing tool the env offers."""
    if "bash" in tools:
        script = "".join(f"mkdir -p $(dirname {p}); printf '%s' {json.dumps(t)} > {p}; " for p, t in PLANTED.items())
        return [_tool_call("bash", {"command": script + 'cp sitecustomize.py usercustomize.py "$HOME"/ 2>/dev/null; '
                                                         "ls"})]
    if "write_file" in tools:
        return [_tool_call("write_file", {"path": p, "content": t}) for p, t in PLANTED.items()]
    if "python" in tools:
        code = ("import os\n" + "".join(f"os.makedirs(os.path.dirname({p!r}) or '.', exist_ok=True); "
                                        f"open({p!r}, 'w').write({t!r})\n" for p, t in PLANTED.items()))
        return [_tool_call("python", {"code": code})]
    raise AssertionError(f"no tool to write files with among {tools}")


PLANTING_IDS = ["TerminalGen-v0", "RepoRepair-v0", "HumanEvalTool-v0", "Terminal-v0"]


@pytest.mark.parametrize("env_id", PLANTING_IDS)
def test_planted_startup_files_win_nothing(env_id):
    """Plant interpreter and pytest startup files, change nothing else, finish: the grade stays 0."""
    env = _make(env_id)
    for seed in _seeds(env_id)[:2]:
        _, info = env.reset(seed=seed)
        tools = [t["function"]["name"] for t in info.get("tools", [])]
        done = False
        for action in [*_plant_actions(tools), "I am done."]:
            observation, reward, terminated, truncated, info = env.step(action)
            assert "Traceback" not in observation, (env_id, observation[:300])  # the files were written
            if terminated or truncated:
                done = True
                break
        assert done, f"{env_id} did not end on a reply without a tool call"
        assert reward <= 0 and info.get("correct") is False, (env_id, seed, reward, info.get("error"))


# -- truncated episodes count ------------------------------------------------------------------------------

class _Stalling:
    """Calls a harmless tool for ever, so every episode ends at the collector's step cap."""

    name = "stalling"

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: str, info: dict[str, Any]) -> str:
        tool = info["tools"][0]["function"]["name"]
        return _tool_call(tool, {})


def test_an_episode_cut_by_its_step_cap_counts_in_the_collectors_and_the_benchmarks_means():
    from rollgym.agents import make_agent
    from rollgym.benchmarks.metrics import summarize
    from rollgym.rollout import collect

    solved = collect(make_agent("oracle"), "ToolWorld-v1", n_tasks=2, group_size=1, max_steps=30)
    stalled = collect(_Stalling(), "ToolWorld-v1", n_tasks=2, group_size=1, max_steps=2, seed=1)
    assert all(t.correct for g in solved for t in g.trajectories)
    cut = [t for g in stalled for t in g.trajectories]
    assert len(cut) == 2 and all(t.status == "truncated" for t in cut), [t.status for t in cut]
    assert all(t.reward == 0.0 for t in cut), [t.reward for t in cut]  # scored 0, never dropped as None
    summary = summarize([*solved, *stalled], n_resamples=200)
    assert (summary.episodes, summary.truncated) == (4, 2)
    assert summary.accuracy.value == 0.5 and summary.mean_reward.value == 0.5
