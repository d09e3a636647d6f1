"""RepoRepairReal-v0 and -v1: mutation operators, the committed manifests, and grading by the projects' own tests.

The grading tests need the projects built (``rollgym data build repo-real``, which .ci/run runs);
without them they skip here and fail in CI.
"""

from __future__ import annotations

import ast
import json
import textwrap
from collections import Counter

import pytest

from rollgym.envs.code.repo_real.mutate import KINDS, Mutation, apply_all, enumerate_mutations
from rollgym.envs.code.repo_real.projects import load_projects, project_dir
from rollgym.envs.code.repo_real.source import RepoRepairRealSource, load_mutants, mutants_by_split

IDS = ("RepoRepairReal-v0", "RepoRepairReal-v1")

SAMPLE = '''def clamp(x, low=0, high=10, strict=False):
    """Docstring 1."""
    if x < low:
        return low
    if strict and x > high:
        raise ValueError(x)
    return min(x + 1, high) - divmod(x, 2)[0]
'''


def test_every_kind_is_enumerated_and_each_mutation_reverts_exactly():
    mutations = enumerate_mutations("m.py", SAMPLE)
    assert {m.kind for m in mutations} == set(KINDS)
    for m in mutations:
        mutated = m.apply(SAMPLE)
        assert mutated != SAMPLE
        ast.parse(mutated)
        assert m.revert(mutated) == SAMPLE
    assert not any(m.line == 2 for m in mutations)  # the docstring is left alone


def test_operators_do_what_their_names_say():
    by_kind = {(m.kind, m.old): m.new for m in enumerate_mutations("m.py", SAMPLE)}
    assert by_kind[("wrong_comparison", "x < low")] == "x <= low"
    assert by_kind[("swapped_arguments", "min(x + 1, high)")] == "min(high, x + 1)"
    assert by_kind[("wrong_default", "False")] == "True"
    assert by_kind[("wrong_operator", "strict and x > high")] == "strict or x > high"
    assert by_kind[("dropped_branch", "if x < low:\n        return low")] == "pass"


def test_a_mutation_refuses_a_file_that_does_not_hold_its_text():
    m = next(m for m in enumerate_mutations("m.py", SAMPLE) if m.old == "x < low")
    with pytest.raises(ValueError, match="does not hold"):
        m.apply(SAMPLE.replace("x", "y"))


def test_two_mutations_apply_together():
    a, b = (m for m in enumerate_mutations("m.py", SAMPLE) if m.kind in ("wrong_comparison", "wrong_default")
            and m.old in ("x < low", "False"))
    both = apply_all({"m.py": SAMPLE}, [a, b])["m.py"]
    assert "x <= low" in both and "strict=True" in both


def test_manifest_projects_are_permissive_and_hashed():
    projects = load_projects()
    assert len(projects) >= 9 and all(len(p.sha256) == 64 for p in projects)
    assert {p.licence for p in projects} <= {"MIT", "BSD-3-Clause"}
    assert {p.name for p in projects if p.split == "test_unseen"} == {"six", "iso8601"}


@pytest.mark.parametrize("env_id", IDS)
def test_validated_mutants_cover_eight_projects_and_keep_unseen_projects_out_of_other_splits(env_id):
    rows = load_mutants(env_id)
    per_project = Counter(r["project"] for r in rows)
    assert len([p for p, n in per_project.items() if n >= 30]) >= 8
    assert all(r["failing"] and r["n_failing"] >= 1 for r in rows)
    splits = mutants_by_split(env_id)
    assert {r["project"] for r in splits["test_unseen"]} == {"six", "iso8601"}
    for split in ("train", "validation", "test"):
        assert splits[split] and not {r["project"] for r in splits[split]} & {"six", "iso8601"}
    assert all(Mutation.from_dict(r["mutation"]).kind in KINDS for r in rows)


def _key(row: dict) -> tuple:
    m = row["mutation"]
    return row["project"], m["path"], m["line"], m["col"], m["new"]


def test_v0_keeps_its_tasks_and_v1_holds_v0s_mutants_and_the_grown_set():
    v0, v1 = load_mutants("RepoRepairReal-v0"), load_mutants("RepoRepairReal-v1")
    assert len(v0) == 901  # v0's manifest is frozen: its task indices keep naming the same tasks
    assert {_key(r) for r in v0} < {_key(r) for r in v1} and len({_key(r) for r in v1}) == len(v1)
    assert len(v1) >= 2000
    assert RepoRepairRealSource(1, "RepoRepairReal-v0").size("train") == len(mutants_by_split()["train"])
    assert RepoRepairRealSource(1, "RepoRepairReal-v1").size("train") == len(mutants_by_split(IDS[1])["train"])
    assert RepoRepairRealSource(1, "RepoRepairReal-v1").size("train") > RepoRepairRealSource(1).size("train")


def _built() -> None:
    from tests.conftest import require_repo_real

    require_repo_real()


def test_every_stored_mutation_still_applies_to_the_built_sources():
    _built()
    texts: dict[tuple[str, str], str] = {}
    projects = {p.name: p for p in load_projects()}
    for row in load_mutants("RepoRepairReal-v1"):
        m = Mutation.from_dict(row["mutation"])
        key = (row["project"], m.path)
        if key not in texts:
            texts[key] = (project_dir(projects[row["project"]]) / m.path).read_text()
        assert m.revert(m.apply(texts[key])) == texts[key]


@pytest.fixture(params=IDS)
def env(request):
    _built()
    import rollgym

    environment = rollgym.make(request.param)
    yield environment
    environment.close()


def _call(name: str, **arguments: str) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def _first(env, split="train", index=0):
    observation, info = env.reset(seed=0, options={"split": split, "task_index": index})
    return observation, info


def test_hidden_tests_never_reach_the_agent(env):
    observation, _ = _first(env)
    hidden = env.unwrapped.task.answer["hidden"]
    assert hidden
    for path in hidden:
        assert path not in env.unwrapped.files and path not in observation
    for test_id in env.unwrapped.task.answer["failing"]:
        assert test_id.split("::")[-1] not in observation



def _oracle_episode(env, observation, info):
    """Play the oracle from a reset to the episode's end; its last reward and info."""
    from rollgym.envs.code.policies import repo_real_oracle

    while True:
        observation, reward, terminated, truncated, info = env.step(repo_real_oracle(observation, info))
        if terminated or truncated:
            return reward, info


@pytest.mark.parametrize("split", ["train", "test_unseen"])
def test_the_oracle_revert_passes_and_the_unmodified_mutant_fails(env, split):
    observation, info = _first(env, split)
    *_, info = env.step("I changed nothing.")
    assert info["reward"] == 0.0 and info["error"] == "tests_failed"
    observation, info = _first(env, split)
    reward, info = _oracle_episode(env, observation, info)
    assert reward == 1.0, info


def test_an_emptied_source_file_fails(env):
    _first(env)
    path = env.unwrapped.task.answer["fix"][0]["path"]
    env.step(_call("write_file", path=path, content=""))
    *_, info = env.step("done")
    assert info["reward"] == 0.0


def test_editing_a_test_file_or_adding_a_conftest_scores_zero(env):
    _first(env)
    visible_test = next(p for p in env.unwrapped.files if p.rsplit("/", 1)[-1].startswith("test"))
    env.step(_call("write_file", path=visible_test, content="def test_ok():\n    pass\n"))
    *_, info = env.step("done")
    assert info["error"] == "tests_modified"
    _first(env)
    env.step(_call("write_file", path="conftest.py", content="import sys\nsys.exit(0)\n"))
    *_, info = env.step("done")
    assert info["error"] == "tests_modified"


def test_exiting_early_from_the_package_or_a_sitecustomize_scores_zero(env):
    _first(env)
    path = env.unwrapped.task.answer["fix"][0]["path"]
    fixed = env.unwrapped.task.answer["fix"][0]["content"]
    env.step(_call("write_file", path=path, content="import os\nos._exit(0)\n" + fixed))
    *_, info = env.step("done")
    assert info["reward"] == 0.0
    _first(env)
    env.step(_call("write_file", path="sitecustomize.py", content="import os\nos._exit(0)\n"))
    *_, info = env.step("done")
    assert info["reward"] == 0.0


# -- RepoRepairReal-v1: the guard plugin ---------------------------------------------------------------------
# Each attack below is appended to the (still buggy) mutated module, so it runs when a test imports the package.
# Under v0 each one scored 1.0 without fixing anything. They are spelled so that the static check of added lines
# does not see them (names built from pieces): what stops them is the guard plugin inside the run.
_IMPORT = """
import importlib as _i
_pt = _i.import_module("_py" + "test.reports")
_pr = _i.import_module("_py" + "test.runner")
"""
ATTACKS = {
    # every report says "passed", setup, call and teardown
    "report_class_patched": _IMPORT + '''
_orig = _pt.TestReport.__init__
def _init(self, *a, **k):
    _orig(self, *a, **k)
    self.outcome = "passed"
    self.longrepr = None
setattr(_pt.TestReport, "__init__", _init)
''',
    # the runner's function replaced: the test body is never called, the report is made from a no-op
    "runner_function_replaced": _IMPORT + '''
_orig = _pr.call_and_report
def _cr(item, when, log=True, **kw):
    if when != "call":
        return _orig(item, when, log, **kw)
    call = _pr.CallInfo.from_call(lambda: None, when="call")
    rep = item.ihook.pytest_runtest_makereport(item=item, call=call)
    if log:
        item.ihook.pytest_runtest_logreport(report=rep)
    return rep
setattr(_pr, "call_and_report", _cr)
''',
    # the config found through the import's frames; a plugin registered that makes every report "passed"
    "plugin_registered_from_frames": _IMPORT + '''
import sys as _s
def _find():
    f = getattr(_s, "_get" + "frame")()
    while f is not None:
        cfg = getattr(getattr(f, "f_" + "locals").get("self"), "config", None)
        if cfg is not None and hasattr(cfg, "pluginmanager"):
            return cfg
        f = getattr(f, "f_" + "back")
class _Plugin:
    def pytest_runtest_makereport(self, item, call):
        rep = _pt.TestReport.from_item_and_call(item, call)
        rep.outcome = "passed"
        rep.longrepr = None
        return rep
    pytest_runtest_makereport.tryfirst = True
_cfg = _find()
if _cfg is not None and not _cfg.pluginmanager.has_plugin("_p"):
    _cfg.pluginmanager.register(_Plugin(), "_p")
''',
    # at exit, a forged "PASSED <id>" line for every test the files define, then exit status 0
    "forged_summary_and_exit": '''
import ast as _a, os as _o, importlib as _i
def _ids(path):
    tree = _a.parse(open(path).read())
    classes = {n.name: n for n in tree.body if isinstance(n, _a.ClassDef)}
    def methods(c):
        own = [f.name for f in c.body if isinstance(f, _a.FunctionDef) and f.name.startswith("test")]
        return own + [m for b in c.bases if isinstance(b, _a.Name) and b.id in classes for m in methods(classes[b.id])]
    found = [path + "::" + f.name for f in tree.body if isinstance(f, _a.FunctionDef) and f.name.startswith("test")]
    return found + [path + "::" + n + "::" + m for n, c in classes.items() if n.startswith("Test")
                    for m in dict.fromkeys(methods(c))]
_all = [t for d, _, names in _o.walk(".") for n in names if n.startswith("test") and n.endswith(".py")
        for t in _ids(_o.path.join(d, n)[2:])]
def _bye():
    _o.write(1, "".join("PASSED %s\\n" % t for t in _all).encode())
    getattr(_o, "_" + "exit")(0)
_i.import_module("at" + "exit").register(_bye)
''',
}


@pytest.fixture
def env_v1():
    _built()
    import rollgym

    environment = rollgym.make("RepoRepairReal-v1")
    yield environment
    environment.close()


def _finish_with(env, path: str, content: str) -> dict:
    env.step(_call("write_file", path=path, content=content))
    *_, info = env.step("done")
    return info


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_v1_package_code_that_patches_pytest_reporting_scores_zero(env_v1, attack):
    _first(env_v1)
    path = env_v1.unwrapped.task.answer["fix"][0]["path"]
    info = _finish_with(env_v1, path, env_v1.unwrapped.files[path] + "\n" + ATTACKS[attack])
    assert info["reward"] == 0.0 and info["error"] == "report_tampered", info


def test_v1_refuses_added_lines_that_reach_into_pytest(env_v1):
    _first(env_v1)
    path = env_v1.unwrapped.task.answer["fix"][0]["path"]
    fixed = env_v1.unwrapped.task.answer["fix"][0]["content"]
    info = _finish_with(env_v1, path, fixed + "\nimport _pytest.reports\n")
    assert info["reward"] == 0.0 and info["error"] == "suspicious_patch"
    assert info["details"]["lines"] == [f"{path}: import _pytest.reports"]


@pytest.mark.parametrize("split", ["train", "test_unseen"])
def test_v1_the_oracle_passes_and_the_unmodified_mutant_fails(env_v1, split):
    observation, info = _first(env_v1, split)
    assert info["task_id"].startswith("RepoRepairReal-v1:")
    *_, info = env_v1.step("I changed nothing.")
    assert info["reward"] == 0.0 and info["error"] == "tests_failed"
    observation, info = _first(env_v1, split)
    reward, info = _oracle_episode(env_v1, observation, info)
    assert reward == 1.0, info


@pytest.mark.parametrize(("index", "why"), [
    (62, "toolz/tests/test_curried_doctests.py"),  # doctest's runner calls sys.settrace, which the guard refuses
    (1023, "src/semver/_deprecated.py"),  # the fixed line reads f_back, a name the added-line check refuses
])
def test_v1_honest_fixes_pass_where_the_guard_could_misfire(env_v1, index, why):
    """The oracle's fix scores 1 on v1 tasks where the guard once gave an honest fix 0: a project test that runs
    doctests, and a bug in a line of the project that itself names a refused word (restoring it is the fix)."""
    observation, info = env_v1.reset(seed=0, options={"split": "train", "task_index": index})
    answer = env_v1.unwrapped.task.answer
    assert why in answer["run"] or why in answer["files"]
    reward, info = _oracle_episode(env_v1, observation, info)
    assert reward == 1.0, info


# -- the grader's packages and the project's configuration (issue #41) -----------------------------------------
# Prepended to a package's __init__ (appended to a one-module project): find an unmutated copy of the project
# anywhere the tests could read it (on sys.path, in any installation folder) and run it in place of the agent's.
_FIND_PRISTINE = '''
import os as _o, sys as _s
def _pristine(name, here):
    places = [_o.path.join(d, name) for d in _s.path if d]
    for top in ("/usr", "/opt", "/root", "/home", "/work", "/.rollgym", _s.prefix, _s.base_prefix):
        for d, subs, files in _o.walk(top):
            places += [_o.path.join(d, n) for n in subs + files if n == name]
    for p in places:
        if _o.path.exists(p) and _o.path.realpath(p) != _o.path.realpath(here) and "/.rollgym/site-packages/" not in p:
            return p
'''
EXEC_INSTALLED_COPY = {
    "package": _FIND_PRISTINE + '''
_p = _pristine(__name__, _o.path.dirname(__file__))
if _p:
    __path__[:] = [_p]
    exec(compile(open(_o.path.join(_p, "__init__.py")).read(), _p, "exec"))
''',
    "module": _FIND_PRISTINE + '''
_p = _pristine(__name__ + ".py", __file__)
if _p:
    import importlib.util as _u
    _spec = _u.spec_from_file_location(__name__, _p)
    _m = _u.module_from_spec(_spec)
    getattr(_s, "mod" + "ules")[__name__] = _m
    _spec.loader.exec_module(_m)
''',
}


@pytest.mark.parametrize(("split", "index", "kind"), [("train", 1246, "package"), ("test_unseen", 0, "module")])
def test_v1_executing_an_installed_copy_of_the_project_scores_zero(env_v1, split, index, kind):
    """idna and six are installed in rollgym's own environment: the grader once let the package's code find that
    unmutated copy and run it, and the tests passed with the bug in place (issue #41). The grader's sandbox now
    shows no installed package but pytest's own (``grader_site``)."""
    env_v1.reset(seed=0, options={"split": split, "task_index": index})
    answer = env_v1.unwrapped.task.answer
    assert answer["project"] == {"package": "idna", "module": "six"}[kind]
    init = "idna/__init__.py" if kind == "package" else "six.py"
    text = env_v1.unwrapped.files[init]
    if kind == "package":
        attacked = EXEC_INSTALLED_COPY[kind] + text
    else:  # six's __future__ import must come first; its (buggy) body runs only when no other copy was found
        head, future, rest = text.partition("from __future__ import absolute_import\n")
        attacked = head + future + EXEC_INSTALLED_COPY[kind] + "if not _p:\n" + textwrap.indent(rest, "    ")
    info = _finish_with(env_v1, init, attacked)
    assert info["reward"] == 0.0 and info["error"] == "tests_failed", info


def test_v1_the_agents_pytest_configuration_never_reaches_grading(env_v1):
    """``pythonpath`` added to the project's own pytest section (six's ``setup.cfg``) once pointed the graded run at
    an installed copy of the project (score 1 with the bug in place); the shipped configuration files are always
    the ones graded."""
    import site

    env_v1.reset(seed=0, options={"split": "test_unseen", "task_index": 0})
    assert env_v1.unwrapped.task.answer["project"] == "six"
    shipped = env_v1.unwrapped.files["setup.cfg"]
    edited = shipped.replace("minversion = 2.2.0\n", "minversion = 2.2.0\npythonpath = "
                             + " ".join(site.getsitepackages()) + "\n")
    assert edited != shipped
    info = _finish_with(env_v1, "setup.cfg", edited)
    assert info["reward"] == 0.0 and info["error"] == "tests_failed", info
    tree = env_v1.unwrapped._tree(env_v1.unwrapped.task, {**env_v1.unwrapped.files, "setup.cfg": edited,
                                                           "pyproject.toml": "[tool.pytest.ini_options]\n"},
                                  with_hidden=True)
    assert tree["setup.cfg"] == shipped.encode() and "pyproject.toml" not in tree


def test_v1_the_oracle_passes_on_the_installed_projects_tasks(env_v1):
    for split, index in (("train", 1246), ("test_unseen", 0)):
        observation, info = env_v1.reset(seed=0, options={"split": split, "task_index": index})
        reward, info = _oracle_episode(env_v1, observation, info)
        assert reward == 1.0, info


def test_a_grading_run_the_sandbox_could_not_make_is_a_sandbox_error_not_a_failed_test(env_v1):
    """A missing interpreter (exit 127), a sandbox that failed, or no pytest in it: labelled ``sandbox_error``
    (the collector retries it), never ``tests_failed``."""
    from rollgym.sandbox import RunResult

    _first(env_v1)
    judge = env_v1.unwrapped._judge
    missing = RunResult(stderr="sandbox: could not start: FileNotFoundError: b'/bin/python'", exit_code=127)
    no_pytest = RunResult(stderr="/usr/bin/python: No module named pytest\n", exit_code=1)
    failed = RunResult(error="supervisor_died: the sandbox exited (status 1)")
    for result in (missing, no_pytest, failed):
        score = judge(result, None)
        assert score.reward == 0.0 and score.error == "sandbox_error", result
    assert judge(RunResult(error="sandbox_broken: the job's files could not be removed"), None).error == "tests_failed"
