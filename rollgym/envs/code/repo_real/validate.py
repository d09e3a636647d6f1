"""Validate mutants of the real projects: keep those that make at least one of the project's own tests fail.

Run it as a module (it needs only the standard library, pytest and the projects' test
dependencies, so it also runs on a machine without rollgym's dependencies)::

    python -m rollgym.envs.code.repo_real.validate --cache ~/.cache/rollgym/repo-real \\
        --out mutants.jsonl --jobs 16 --per-project 400

For each project it first runs the test files once unmodified (their failures are the
baseline, deselected later), then for each sampled mutation: applies it to a private copy
of the project, runs only the test files that mention the mutated module, records the
failing test ids and the first failure's message, and reverts the file (checking the
revert restores it byte for byte). Mutants that fail no test, or time out, are dropped.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
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


def run_tests(root: Path, python_root: str, files: list[str], deselect: list[str], timeout: float,
              maxfail: int = 0) -> str | None:
    """Pytest's output for ``files`` in ``root``, or ``None`` when it ran past ``timeout`` seconds."""
    path = os.pathsep.join(p for p in [str(root / python_root), os.environ.get("PYTHONPATH", "")] if p)
    env = {**os.environ, "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1",
           "HYPOTHESIS_NO_PLUGINS": "1"}
    try:
        done = subprocess.run(pytest_command(files, deselect, maxfail), cwd=root, env=env, capture_output=True,
                              text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return None
    return done.stdout + done.stderr


def sample(mutations: list[Mutation], n: int, salt: str) -> list[Mutation]:
    """A deterministic sample of ``n`` mutations, spread over kinds by a hash order."""
    def key(m: Mutation) -> str:
        return hashlib.sha256(f"{salt}|{m.path}|{m.line}|{m.col}|{m.new}".encode()).hexdigest()
    return sorted(mutations, key=key)[:n]


def validate_project(spec: dict[str, Any], cache: Path, jobs: int, per_project: int, timeout: float,
                     deadline: float) -> tuple[list[str], list[dict[str, Any]]]:
    """The baseline failures and the validated mutants of one project."""
    src = cache / spec["sdist"].removesuffix(".tar.gz")
    files = test_files(src, spec["tests"])
    baseline_out = run_tests(src, spec["root"], files, [], timeout * 4) or ""
    baseline = [t for t, _ in parse_failures(baseline_out)]
    summary = (baseline_out.strip().splitlines() or ["(no output)"])[-1]
    print(f"{spec['name']}: baseline of {len(files)} test files: {summary}", flush=True)
    candidates: list[tuple[Mutation, list[str]]] = []
    texts = {source: (src / source).read_text() for source in spec["sources"]}
    for source, text in texts.items():
        chosen = relevant_tests(src, source, files)
        candidates += [(m, chosen) for m in enumerate_mutations(source, text, check=False)]
    picked = [m for m in sample([m for m, _ in candidates], per_project, spec["name"]) if is_clean(m, texts[m.path])]
    tests_of = {id(m): t for m, t in candidates}
    slots: queue.Queue[Path] = queue.Queue()
    work = Path(tempfile.mkdtemp(prefix=f"mut-{spec['name']}-"))
    for k in range(jobs):
        shutil.copytree(src, work / str(k))
        slots.put(work / str(k))

    def one(m: Mutation) -> dict[str, Any] | None:
        if time.time() > deadline:
            return None
        slot = slots.get()
        try:
            target = slot / m.path
            original = target.read_text()
            target.write_text(m.apply(original))
            try:
                out = run_tests(slot, spec["root"], tests_of[id(m)], baseline, timeout, maxfail=5)
            finally:
                target.write_text(m.revert(target.read_text()))
            if target.read_text() != original:
                raise RuntimeError(f"{m.path} did not revert cleanly")
        finally:
            slots.put(slot)
        if out is None:
            return None
        failures = [(t, msg) for t, msg in parse_failures(out) if t not in baseline]
        if not failures:
            return None
        return {"project": spec["name"], "mutation": m.as_dict(), "tests_run": tests_of[id(m)],
                "failing": [t for t, _ in failures[:MAX_IDS]], "n_failing": len(failures),
                "message": failures[0][1][:300]}

    kept: list[dict[str, Any]] = []
    with ThreadPoolExecutor(jobs) as pool:
        for future in as_completed([pool.submit(one, m) for m in picked]):
            row = future.result()
            if row is not None:
                kept.append(row)
    shutil.rmtree(work, ignore_errors=True)
    kept.sort(key=lambda r: (r["mutation"]["path"], r["mutation"]["line"], r["mutation"]["col"], r["mutation"]["new"]))
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
    args = parser.parse_args(argv)
    projects = json.loads(args.manifest.read_text())["projects"]
    start = time.time()
    baselines: dict[str, list[str]] = {}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    remaining = [p for p in projects if args.only is None or p["name"] in args.only]
    with args.out.open("w") as out:
        for n, spec in enumerate(remaining):
            # Share what time is left evenly among the projects still to do.
            left = start + args.budget_s - time.time()
            deadline = time.time() + left / (len(remaining) - n)
            baseline, kept = validate_project(spec, args.cache, args.jobs, args.per_project, args.timeout, deadline)
            baselines[spec["name"]] = baseline
            for row in kept:
                out.write(json.dumps(row, sort_keys=True) + "\n")
            out.flush()
            print(f"{spec['name']}: {len(kept)} mutants kept, baseline failures {len(baseline)}, "
                  f"{time.time() - start:.0f}s", flush=True)
    args.out.with_suffix(".baselines.json").write_text(json.dumps(baselines, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
