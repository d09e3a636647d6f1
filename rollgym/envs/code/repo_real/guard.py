"""The pytest plugin RepoRepairReal-v1 grades with: it watches pytest's reporting from inside the run.

This file is not imported by rollgym. The grader sends its text into the sandbox as
``.rollgym/_rollgym_guard.py`` and starts ``python -m pytest -p _rollgym_guard ...``, so that
pytest imports it before any code of the project (the agent's) runs. It then:

* takes the run's secret token and the ids of the tests that decide the reward (the ones the
  bugs break) from ``.rollgym/token`` and deletes the file;
* keeps a private copy of the real standard output (a ``dup`` of fd 1, made before pytest
  captures anything), where it writes its one verdict line at the end of the session:
  ``@@rollgym-guard <token> <json>``. A run that ends before that (``os._exit``, a crash) has
  no verdict, and the grader scores it 0;
* installs an audit hook (``sys.addaudithook``: it cannot be removed) that refuses, and records,
  code swaps on pytest's and pluggy's functions (``func.__code__ = ...``),
  ``sys.settrace``/``sys.setprofile`` and ``ctypes`` (not the ``gc`` walks: hypothesis, which
  projects test with, calls ``gc.get_referrers``); Python 3.11 raises no audit event for a write to a
  class's attributes, so those are found by the checks below;
* once the plugins are loaded and before the project's conftests and code are imported, notes
  every function and class of pytest, pluggy and the loaded plugins' modules and each
  ``sys.modules`` entry of those modules (and, when collection begins, each of those classes'
  attributes: pytest's own plugins add some while they configure); at every collected module,
  every report of a test that decides the reward, and at the end, it checks that none was
  replaced, that no implementation of a reporting hook comes from anywhere else (a plugin the
  project's code registers), and that no test file changed on disk;
* decides each test's outcome itself: a test passed when its own wrappers saw setup, call and
  teardown return without an exception *and* the reports of the three phases say ``passed``.

It shares the interpreter with the code it watches, so code written against this plugin can
still beat it (SECURITY.md says how); what it removes is the generic way, patching pytest.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Generator
from types import FunctionType, ModuleType
from typing import Any

import pytest
from _pytest.reports import TestReport

_REPORT_TYPES: tuple[type, ...] = (TestReport,)
try:
    from _pytest.subtests import SubtestReport

    _REPORT_TYPES += (SubtestReport,)
except ImportError:  # pytest before 9 has no subtests of its own
    pass

_TOKEN_FILE = os.path.join(".rollgym", "token")
_PREFIXES = ("_pytest", "pluggy", "pytest", "_rollgym_guard")
# the hooks whose implementations decide or report an outcome
_REPORTING_HOOKS = (
    "pytest_runtest_protocol", "pytest_runtest_setup", "pytest_runtest_call", "pytest_runtest_teardown",
    "pytest_runtest_makereport", "pytest_runtest_logreport", "pytest_pyfunc_call", "pytest_report_teststatus",
    "pytest_runtestloop", "pytest_collection_modifyitems", "pytest_terminal_summary", "pytest_sessionfinish",
    "pytest_collectreport", "pytest_make_collect_report", "pytest_pycollect_makeitem",
)
_REFUSED_EVENTS = ("sys.settrace", "sys.setprofile")
#: doctest's runner sets the trace function back to what it was after each example (a project's
#: doctest-running test must not fail for it); that caller, and only it, may call sys.settrace.
_DOCTEST_RUN = (os.path.join(os.path.dirname(os.__file__), "doctest.py"), "run")

_write, _dumps, _sha256 = os.write, json.dumps, hashlib.sha256
_TOKEN = ""
_DECIDING: frozenset[str] = frozenset()  # test ids, or files: every test of the file
_OUT = -1

_tamper: list[str] = []
_protected_ids: set[int] = set()  # classes and functions whose attributes may not be written
_kept: list[object] = []  # holds every protected object, so that no id is reused
_classes: list[tuple[type, dict[str, object]]] = []  # each protected class, its attributes when collection began
# added to a class after collection began by the interpreter or by pytest itself
_LATE_ATTRIBUTES = ("__slotnames__", "_abc_impl", "_pytest_diamond_inheritance_warning_shown")
_known: dict[tuple[str, str], object] = {}  # (module, name) -> the function or class it held
_modules: dict[str, ModuleType] = {}
_known_functions: set[int] = set()  # hook implementations allowed: functions noted before project code
_test_files: dict[str, str] = {}
_phases: dict[str, dict[str, bool]] = {}
_reports: dict[str, dict[str, str]] = {}
_failed_subtests: set[str] = set()
_watching = False


def _note(message: str) -> None:
    if len(_tamper) < 50 and message not in _tamper:
        _tamper.append(message)


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event in ("object.__setattr__", "object.__delattr__"):
        if id(args[0]) in _protected_ids:
            name = args[1] if type(args[1]) is str else "?"
            _note(f"{event} {name} on {getattr(args[0], '__qualname__', '?')}")
            raise RuntimeError("rollgym grading: pytest's own objects may not be changed")
    elif event in _REFUSED_EVENTS or event.startswith("ctypes."):
        if event == "sys.settrace":
            caller = sys._getframe(1).f_code
            if (caller.co_filename, caller.co_name) == _DOCTEST_RUN:
                return
        _note(event)
        raise RuntimeError(f"rollgym grading: {event} is refused")


def _protect(obj: object) -> None:
    if id(obj) in _protected_ids:
        return
    _protected_ids.add(id(obj))
    _kept.append(obj)
    if isinstance(obj, FunctionType):
        _known_functions.add(id(obj))
    elif isinstance(obj, type):
        _classes.append((obj, {}))
        for value in vars(obj).values():
            function = getattr(value, "__func__", value)
            if isinstance(function, FunctionType):
                _protect(function)


def _note_module(name: str, module: ModuleType) -> None:
    if name in _modules:
        return
    _modules[name] = module
    for attr, value in list(vars(module).items()):
        if isinstance(value, (FunctionType, type)):
            _known[(name, attr)] = value
            _protect(value)


def _is_test_file(name: str) -> bool:
    return name.endswith(".py") and (name.startswith(("test", "conftest")) or name.endswith("_test.py"))


def _hash_tests() -> dict[str, str]:
    found = {}
    for folder, subfolders, names in os.walk("."):
        subfolders[:] = [s for s in subfolders if s not in (".rollgym", "__pycache__", ".git")]
        for name in names:
            if _is_test_file(name):
                path = os.path.join(folder, name)
                with open(path, "rb") as file:
                    found[path] = _sha256(file.read()).hexdigest()
    return found


def _conftest_impl(impl: Any) -> bool:
    """A hook implementation of one of the project's own conftest files (unchanged on disk)."""
    module = impl.plugin
    path = getattr(module, "__file__", None)
    if not isinstance(module, ModuleType) or not isinstance(path, str):
        return False
    rel = os.path.join(".", os.path.relpath(path))
    function = getattr(impl.function, "__func__", impl.function)
    return (os.path.basename(path) == "conftest.py" and rel in _test_files
            and getattr(function, "__module__", None) == module.__name__
            and getattr(getattr(function, "__code__", None), "co_filename", None) == path)


def _check(config: pytest.Config | None, *, files: bool) -> None:
    """Record anything of pytest's reporting that is not as it was before the project's code ran."""
    if not _watching:
        return
    for (module, attr), value in _known.items():
        if vars(_modules[module]).get(attr) is not value:
            _note(f"{module}.{attr} replaced")
    for cls, attributes in _classes:
        now = vars(cls)
        if len(now) != len(attributes) or any(now.get(k) is not v for k, v in attributes.items()):
            changed = {k for k in {*now, *attributes} if now.get(k) is not attributes.get(k)}
            changed -= {k for k in changed if k in _LATE_ATTRIBUTES and k not in attributes}
            if changed:
                _note(f"{cls.__module__}.{cls.__qualname__}.{min(changed)} changed")
    for name, noted in _modules.items():
        if sys.modules.get(name) is not noted:
            _note(f"sys.modules[{name!r}] replaced")
    if config is not None:
        for hook in _REPORTING_HOOKS:
            for impl in getattr(config.pluginmanager.hook, hook).get_hookimpls():
                function = getattr(impl.function, "__func__", impl.function)
                if id(function) not in _known_functions and not _conftest_impl(impl):
                    _note(f"{hook} implemented by {getattr(function, '__qualname__', '?')} of "
                          f"{getattr(function, '__module__', '?')}")
    if files and _hash_tests() != _test_files:
        _note("a test file changed on disk")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> Generator[None, None, None]:
    """Before the project's conftests (and so its code) load: note what pytest and its plugins are."""
    global _watching
    for name, loaded in list(sys.modules.items()):
        if isinstance(loaded, ModuleType) and name.split(".")[0] in _PREFIXES:
            _note_module(name, loaded)
    for plugin in early_config.pluginmanager.get_plugins():
        name = plugin.__name__ if isinstance(plugin, ModuleType) else type(plugin).__module__
        module = sys.modules.get(name)
        if isinstance(module, ModuleType):
            _note_module(name, module)
        for value in (vars(type(plugin)).values() if not isinstance(plugin, ModuleType) else ()):
            function = getattr(value, "__func__", value)
            if isinstance(function, FunctionType):
                _protect(function)
    _test_files.update(_hash_tests())
    _watching = True
    return (yield)


def _watch(phase: str, nodeid: str) -> Generator[None, None, None]:
    ok = False
    try:
        result = yield
        ok = True
        return result
    finally:
        _phases.setdefault(nodeid, {})[phase] = ok


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    """Whether the test's setup returned without an exception, as this plugin saw it."""
    return (yield from _watch("setup", item.nodeid))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """Whether the test itself returned without an exception, as this plugin saw it."""
    return (yield from _watch("call", item.nodeid))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    """Whether the test's teardown returned without an exception, as this plugin saw it."""
    return (yield from _watch("teardown", item.nodeid))


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> None:
    """Before the first test module is imported: note each protected class's attributes (pytest's own plugins
    add some to its classes while they configure, so this cannot be done earlier)."""
    for i, (cls, _) in enumerate(_classes):
        _classes[i] = (cls, dict(vars(cls)))


@pytest.hookimpl(tryfirst=True)
def pytest_collectreport(report: pytest.CollectReport) -> None:
    """After each collected module: nothing replaced, no test file rewritten."""
    _check(_config, files=True)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report: TestReport) -> None:
    """Record each phase's report, checking first (for a deciding test) that the reporting is pytest's own."""
    nodeid = str(report.nodeid)
    if nodeid in _DECIDING or nodeid.split("::")[0] in _DECIDING:
        _check(_config, files=False)
    if type(report) not in _REPORT_TYPES or type(report.outcome) is not str or type(report.when) is not str:
        _note(f"a report of type {type(report).__qualname__}")
        return
    if type(report) is not TestReport:  # a subtest: one of several in the test's call; the test passes if all do
        if report.outcome == "failed":
            _failed_subtests.add(nodeid)
        return
    _reports.setdefault(nodeid, {})[report.when] = report.outcome


_config: pytest.Config | None = None


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Keep the config, to read the registered hook implementations at each check."""
    global _config
    _config = config


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Write the verdict: the tests this plugin saw pass, and anything that was tampered with."""
    _check(session.config, files=True)
    passed: list[str] = []
    not_passed: list[str] = []  # failed, skipped, or never seen to finish
    for nodeid, phases in _phases.items():
        reports = _reports.get(nodeid, {})
        ok = all(phases.get(p) is True and reports.get(p) == "passed" for p in ("setup", "call", "teardown"))
        (passed if ok and nodeid not in _failed_subtests else not_passed).append(nodeid)
    verdict = _dumps({"passed": sorted(passed), "not_passed": sorted(not_passed), "tamper": list(_tamper)})
    _write(_OUT, f"\n@@rollgym-guard {_TOKEN} {verdict}\n".encode())


def _start() -> None:
    """Read (and delete) the settings, keep the real standard output, and install the audit hook."""
    global _TOKEN, _DECIDING, _OUT
    with open(_TOKEN_FILE, encoding="utf-8") as file:
        settings = json.load(file)
    os.unlink(_TOKEN_FILE)
    _TOKEN, _DECIDING = str(settings["token"]), frozenset(settings["watch"])
    _OUT = os.dup(1)
    sys.addaudithook(_audit)


if __name__ == "_rollgym_guard":  # pytest -p _rollgym_guard in the sandbox; rollgym itself only reads this text
    _start()
