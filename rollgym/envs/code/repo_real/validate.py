"""Validate mutants of the real projects: keep those that make at least one of the project's own tests fail.

Run it as a module (it needs only the standard library, pytest and the projects' test
dependencies, so it also runs on a machine without rollgym's dependencies)::

    nice -n 19 python -m rollgym.envs.code.repo_real.validate --cache ~/.cache/rollgym/repo-real \\
        --out mutants-new.jsonl --jobs 2 --per-project 600 --skip mutants-v1.jsonl

For each project it first runs the test files once unmodified (their failures are the
baseline, deselected later), then once more under a line tracer (``trace_plugin``) that
records which lines of the mutated sources each test runs. For each sampled mutation it
finds the innermost statement holding it: when no test runs that statement no test can
fail, and the mutant is dropped without a run; when a line of it runs outside any test
(imports, fixtures) every test file runs; otherwise only the tests that run it. A test
that never reaches the statement behaves the same with the mutant in, so the failing
tests found are exactly those the grader (which runs whole files) sees fail. The mutant
is applied to a private copy of the project, the tests run in a fresh fork of a warm
process that imported pytest but never the project (:class:`WarmPytest`), with no
``--maxfail``, and the file is reverted (checked byte for byte). Mutants that fail no
test, or time out, are dropped.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import hashlib
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from rollgym.envs.code.repo_real.mutate import Mutation, enumerate_mutations, is_clean

MAX_IDS = 20
_FAILED = re.compile(r"^(?:FAILED|ERROR) (.+?)(?: - (.*))?$")


def test_files(root: Path, tests: list[str]) -> list[str]:
    """The test files (relative paths) named by the manifest's ``tests`` entries (files or folders)."""
    found: list[str] = []
    for entry in tests:
        path = root / entry
        if path.is_file():
            found.append(entry)
        else:
            found.extend(sorted(str(p.relative_to(root)) for p in path.rglob("test*.py")))
    return found


def relevant_tests(root: Path, source: str, files: list[str]) -> list[str]:
    """The test files that mention the module of ``source`` by name (all of them when none does)."""
    stem = Path(source).stem
    name = Path(source).parent.name if stem == "__init__" else stem
    hits = [f for f in files if re.search(rf"\b{re.escape(name)}\b", (root / f).read_text(errors="replace"))]
    return hits or files


def pytest_command(files: list[str], deselect: Sequence[str] = (), maxfail: int = 0) -> list[str]:
    """The pytest command line used everywhere: quiet, no cache, failures listed one a line."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-o", "addopts=",
               "--tb=no", "-rfE", "-W", "ignore", *files]
    if maxfail:
        command.append(f"--maxfail={maxfail}")
    for test_id in deselect:
        command += ["--deselect", test_id]
    return command


def parse_failures(output: str) -> list[tuple[str, str]]:
    """``(test id, message)`` for every FAILED or ERROR line of pytest's short summary."""
    out = []
    for line in output.splitlines():
        match = _FAILED.match(line.strip())
        if match:
            out.append((match.group(1), (match.group(2) or "").strip()))
    return out


def run_tests(root: Path, python_root: str, args: list[str], deselect: list[str], timeout: float,
              maxfail: int = 0, extra_env: dict[str, str] | None = None,
              plugin_dir: str = "") -> tuple[int, str] | None:
    """Pytest's exit code and output for ``args`` (files or test ids) in ``root``; ``None`` past ``timeout`` s."""
    path = os.pathsep.join(p for p in [str(root / python_root), plugin_dir, os.environ.get("PYTHONPATH", "")] if p)
    env = {**os.environ, "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1",
           "HYPOTHESIS_NO_PLUGINS": "1", **(extra_env or {})}
    try:
        done = subprocess.run(pytest_command(args, deselect, maxfail), cwd=root, env=env, capture_output=True,
                              text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return None
    finally:
        shutil.rmtree(root / ".hypothesis", ignore_errors=True)  # examples saved by one run must not reach the next
    return done.returncode, done.stdout + done.stderr


_SERVER = r"""
import json, os, signal, sys
import pytest
from importlib.metadata import entry_points
for plugin in entry_points(group="pytest11"):  # the plugins pytest would load, imported once here
    try:
        plugin.load()
    except Exception:
        pass
try:
    import hypothesis  # the hypothesis plugin imports it in every run otherwise (a second each)
except ImportError:
    pass
while True:
    line = sys.stdin.readline()
    if not line:
        break
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        os.setpgid(0, 0)
        fd = os.open(request["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        try:
            code = int(pytest.main(request["args"]))
        except BaseException:
            code = 3
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    print(json.dumps({"pid": pid}), flush=True)
    _, status = os.waitpid(pid, 0)
    print(json.dumps({"code": os.waitstatus_to_exitcode(status)}), flush=True)
"""


class WarmPytest:
    """One process per project copy that has imported pytest and its plugins, never the project; forks per run.

    Each run is a fresh fork of that process, so nothing a run imports or changes (the
    mutated module above all) reaches the next one; the caller changes the files between
    runs. Saves pytest's import (about a second with its plugins) on every mutant.
    """

    def __init__(self, root: Path, python_root: str) -> None:
        self.root = root
        path = os.pathsep.join(p for p in [str(root / python_root), os.environ.get("PYTHONPATH", "")] if p)
        env = {**os.environ, "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1", "HYPOTHESIS_NO_PLUGINS": "1"}
        self.process = subprocess.Popen([sys.executable, "-c", _SERVER], cwd=root, env=env, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
        self.out = Path(tempfile.mkdtemp(prefix="warm-pytest-")) / "out.txt"

    def run(self, args: list[str], deselect: Sequence[str], timeout: float) -> tuple[int, str] | None:
        """Pytest's exit code and output for ``args`` in the project copy; ``None`` past ``timeout`` s."""
        assert self.process.stdin is not None and self.process.stdout is not None
        command = pytest_command(args, deselect)[3:]  # without "python -m pytest"
        self.process.stdin.write(json.dumps({"args": command, "out": str(self.out)}) + "\n")
        self.process.stdin.flush()
        stdout = self.process.stdout
        pid = json.loads(stdout.readline())["pid"]
        result: queue.Queue[str] = queue.Queue()
        reader = threading.Thread(target=lambda: result.put(stdout.readline()), daemon=True)
        reader.start()
        try:
            line = result.get(timeout=timeout)
        except queue.Empty:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            result.get()
            line = ""
        finally:
            shutil.rmtree(self.root / ".hypothesis", ignore_errors=True)
        if not line:
            return None
        return json.loads(line)["code"], self.out.read_text(errors="replace")

    def close(self) -> None:
        """End the process."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)
        shutil.rmtree(self.out.parent, ignore_errors=True)


def trace_map(root: Path, python_root: str, files: list[str], sources: list[str], timeout: float) -> dict[str, Any]:
    """Which lines of ``sources`` each test of ``files`` runs, from one clean traced run (see ``trace_plugin``).

    Returns ``{"outside": {source: set of lines}, "tests": {test id: {source: set of lines}}}``
    keyed by the sources' paths relative to ``root``.
    """
    absolute = {str((root / s).resolve()): s for s in sources}
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(Path(__file__).with_name("trace_plugin.py"), Path(tmp) / "rollgym_trace_plugin.py")
        out = Path(tmp) / "map.json"
        extra = {"ROLLGYM_TRACE_SOURCES": json.dumps(sorted(absolute)), "ROLLGYM_TRACE_OUT": str(out)}
        run_tests(root, python_root, [*files, "-p", "rollgym_trace_plugin"], [], timeout, extra_env=extra,
                  plugin_dir=tmp)
        raw = json.loads(out.read_text()) if out.is_file() else {"outside": {}, "tests": {}}

    def rel(by_file: dict[str, list[int]]) -> dict[str, set[int]]:
        return {absolute[f]: set(lines) for f, lines in by_file.items() if f in absolute}

    return {"outside": rel(raw["outside"]), "tests": {t: rel(v) for t, v in raw["tests"].items()}}


def statement_span(tree: ast.Module, m: Mutation) -> tuple[int, int] | None:
    """The lines of the innermost statement holding ``m``; ``None`` when no statement does."""
    best: tuple[int, int] | None = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt) or isinstance(node, ast.Module):
            continue
        end_line, end_col = node.end_lineno or node.lineno, node.end_col_offset or 0
        if (node.lineno, node.col_offset) <= (m.line, m.col) and (m.end_line, m.end_col) <= (end_line, end_col):
            if best is None or end_line - node.lineno < best[1] - best[0]:
                best = (node.lineno, end_line)
    return best


def covering_tests(tmap: dict[str, Any], path: str, span: tuple[int, int] | None) -> list[str] | None:
    """The test ids that run a line of ``span`` in ``path``; ``None`` when any test may (the span runs outside tests).

    A test that never runs the statement holding a mutation behaves the same with the mutant
    in, so only these tests can fail; an empty list means no test can.
    """
    if span is None:
        return None
    lines = set(range(span[0], span[1] + 1))
    if lines & tmap["outside"].get(path, set()):
        return None
    return [t for t, by_file in tmap["tests"].items() if lines & by_file.get(path, set())]


def sample(mutations: list[Mutation], n: int, salt: str) -> list[Mutation]:
    """A deterministic sample of ``n`` mutations, spread over kinds by a hash order."""
    def key(m: Mutation) -> str:
        return hashlib.sha256(f"{salt}|{m.path}|{m.line}|{m.col}|{m.new}".encode()).hexdigest()
    return sorted(mutations, key=key)[:n]


def validate_project(spec: dict[str, Any], cache: Path, jobs: int, per_project: int, timeout: float,
                     deadline: float, stats: dict[str, float] | None = None,
                     skip: frozenset[tuple[str, int, int, str]] = frozenset(),
                     ) -> tuple[list[str], list[dict[str, Any]]]:
    """The baseline failures and the validated mutants of one project.

    ``stats`` (when given) gets the seconds spent and the number of mutants tried, run and kept;
    sampled mutations in ``skip`` (``(path, line, col, new)``, validated before) are not tried again.
    """
    stats = {} if stats is None else stats
    began = time.time()
    src = cache / spec["sdist"].removesuffix(".tar.gz")
    files = test_files(src, spec["tests"])
    setup_timeout = max(600.0, timeout * 8)  # the clean and the traced runs happen once; the traced one is slower
    baseline_run = run_tests(src, spec["root"], files, [], setup_timeout)
    baseline_out = baseline_run[1] if baseline_run else ""
    baseline = [t for t, _ in parse_failures(baseline_out)]
    summary = (baseline_out.strip().splitlines() or ["(no output)"])[-1]
    tmap = trace_map(src, spec["root"], files, spec["sources"], setup_timeout)
    if not tmap["tests"]:  # the traced run failed: select nothing away, run every test file for every mutant
        print(f"{spec['name']}: the traced run recorded no test; every mutant runs every test file", flush=True)
    stats["setup_s"] = time.time() - began
    print(f"{spec['name']}: baseline of {len(files)} test files: {summary}; traced {len(tmap['tests'])} tests "
          f"in {stats['setup_s']:.0f}s", flush=True)
    texts = {source: (src / source).read_text() for source in spec["sources"]}
    trees = {source: ast.parse(text) for source, text in texts.items()}
    candidates = [m for source, text in texts.items() for m in enumerate_mutations(source, text, check=False)]
    picked = [m for m in sample(candidates, per_project, spec["name"])
              if (m.path, m.line, m.col, m.new) not in skip and is_clean(m, texts[m.path])]
    slots: queue.Queue[tuple[Path, WarmPytest]] = queue.Queue()
    work = Path(tempfile.mkdtemp(prefix=f"mut-{spec['name']}-"))
    servers = []
    for k in range(jobs):
        shutil.copytree(src, work / str(k))
        servers.append(WarmPytest(work / str(k), spec["root"]))
        slots.put((work / str(k), servers[-1]))
    counts = {"tried": 0, "uncovered": 0, "run": 0, "timed_out": 0}

    def one(m: Mutation) -> dict[str, Any] | None:
        if time.time() > deadline:
            return None
        counts["tried"] += 1
        chosen = covering_tests(tmap, m.path, statement_span(trees[m.path], m)) if tmap["tests"] else None
        if chosen == []:
            counts["uncovered"] += 1
            return None  # no test runs the mutated statement, so none can fail
        # The files the grader runs: those naming the module, and those holding a test that runs the statement.
        run_files = sorted(set(files) if chosen is None else
                           set(relevant_tests(src, m.path, files)) | {t.split("::")[0] for t in chosen})
        args = run_files if chosen is None or len(chosen) > 300 else chosen
        counts["run"] += 1
        slot, server = slots.get()
        try:
            target = slot / m.path
            original = target.read_text()
            target.write_text(m.apply(original))
            try:
                done = server.run(args, baseline, timeout)
                if done is not None and done[0] not in (0, 1) and args is not run_files:
                    done = server.run(run_files, baseline, timeout)  # an id pytest did not take
            finally:
                target.write_text(m.revert(target.read_text()))
            if target.read_text() != original:
                raise RuntimeError(f"{m.path} did not revert cleanly")
        finally:
            slots.put((slot, server))
        if done is None:
            counts["timed_out"] += 1
            return None
        failures = [(t, msg) for t, msg in parse_failures(done[1]) if t not in baseline]
        if not failures:
            return None
        return {"project": spec["name"], "mutation": m.as_dict(), "tests_run": run_files,
                "failing": [t for t, _ in failures[:MAX_IDS]], "n_failing": len(failures),
                "message": failures[0][1][:300]}

    kept: list[dict[str, Any]] = []
    with ThreadPoolExecutor(jobs) as pool:
        for future in as_completed([pool.submit(one, m) for m in picked]):
            row = future.result()
            if row is not None:
                kept.append(row)
    for server in servers:
        server.close()
    shutil.rmtree(work, ignore_errors=True)
    kept.sort(key=lambda r: (r["mutation"]["path"], r["mutation"]["line"], r["mutation"]["col"], r["mutation"]["new"]))
    stats.update(counts, kept=len(kept), seconds=time.time() - began)
    return baseline, kept


def main(argv: list[str] | None = None) -> int:
    """Validate every project of the manifest; write the mutant manifest and the baselines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--manifest", type=Path, default=Path(__file__).with_name("projects.json"))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--per-project", type=int, default=300)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--budget-s", type=float, default=1e9, help="stop starting mutants after this long")
    parser.add_argument("--only", nargs="*", default=None, help="project names to validate")
    parser.add_argument("--skip", type=Path, default=None, help="a mutant manifest whose mutations are not retried")
    args = parser.parse_args(argv)
    projects = json.loads(args.manifest.read_text())["projects"]
    start = time.time()
    baselines: dict[str, list[str]] = {}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    remaining = [p for p in projects if args.only is None or p["name"] in args.only]
    if args.only:
        remaining.sort(key=lambda p: args.only.index(p["name"]))
    done_before = [json.loads(line) for line in args.skip.read_text().splitlines() if line.strip()] if args.skip else []
    with args.out.open("w") as out:
        for n, spec in enumerate(remaining):
            # Share what time is left evenly among the projects still to do.
            left = start + args.budget_s - time.time()
            deadline = time.time() + left / (len(remaining) - n)
            stats: dict[str, float] = {}
            skip = frozenset((r["mutation"]["path"], r["mutation"]["line"], r["mutation"]["col"], r["mutation"]["new"])
                             for r in done_before if r["project"] == spec["name"])
            baseline, kept = validate_project(spec, args.cache, args.jobs, args.per_project, args.timeout, deadline,
                                              stats, skip)
            baselines[spec["name"]] = baseline
            for row in kept:
                out.write(json.dumps(row, sort_keys=True) + "\n")
            out.flush()
            per = (stats["seconds"] - stats["setup_s"]) / max(stats["tried"], 1)
            print(f"{spec['name']}: {len(kept)} mutants kept of {stats['tried']:.0f} tried ({stats['uncovered']:.0f} "
                  f"run by no test, {stats['timed_out']:.0f} timed out), baseline failures {len(baseline)}, setup "
                  f"{stats['setup_s']:.0f}s, {per:.2f}s a mutant, {time.time() - start:.0f}s in all", flush=True)
    args.out.with_suffix(".baselines.json").write_text(json.dumps(baselines, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
