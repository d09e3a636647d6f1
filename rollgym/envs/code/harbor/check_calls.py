"""Grade an exported RepoRepair-v0 task inside a Harbor container (standard library only).

Run in the task's working folder: ``python3 check_calls.py cases.json``; exit status 0 when the
repository's test files are unchanged and every hidden call returns what the fixed package returns,
else 1 with the reason printed. rollgym's Harbor export copies this file into each task's
``tests/`` as ``check.py``, beside ``harness.py`` (:mod:`rollgym.envs.code.harness`, the call
harness RepoRepair-v0 grades with) and ``cases.json``: ``{"tests": {path: sha256}, "imports":
[[module, function], ...], "calls": [...], "expected": [...]}`` (typed values, as the harness
encodes them). As in rollgym, each call runs in a child process with a time limit per call.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
CALL_TIMEOUT_S = 3.0


def _is_test(path: str) -> bool:
    return path.startswith("tests/") or os.path.basename(path).startswith(("test_", "conftest"))


def changed_tests(expected: dict[str, str]) -> list[str]:
    """Test files added, removed or edited since the task began."""
    found = {}
    for root, folders, names in os.walk("."):
        folders[:] = [f for f in folders if f not in (".git", "__pycache__", ".harbor")]
        for name in names:
            path = os.path.relpath(os.path.join(root, name), ".").replace(os.sep, "/")
            if _is_test(path) and path.endswith(".py"):
                with open(path, "rb") as file:
                    found[path] = hashlib.sha256(file.read()).hexdigest()
    return sorted(p for p in {*found, *expected} if found.get(p) != expected.get(p))


def main(cases_path: str) -> int:
    """Check the test files, run every hidden call in a child process, compare with the expected values."""
    sys.path.insert(0, HERE)
    from harness import same  # type: ignore[import-not-found]

    with open(cases_path, encoding="utf-8") as file:
        cases: dict[str, Any] = json.load(file)
    changed = changed_tests(cases["tests"])
    if changed:
        print(f"test files changed: {', '.join(changed[:10])}")
        return 1
    program = "".join(f"from app.{m} import {f} as {m}__{f}\n" for m, f in cases["imports"])
    spec = {"entry_point": "", "calls": cases["calls"], "call_timeout_s": CALL_TIMEOUT_S, "nonce": "n"}
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "results.jsonl")
        runner = (f"import sys, json; sys.path[:0] = [{HERE!r}, {os.getcwd()!r}]; from harness import run_calls; "
                  f"run_calls(json.loads(sys.stdin.read()), {program!r}, {out!r})")
        budget = 10 + CALL_TIMEOUT_S * len(cases["calls"])
        try:
            subprocess.run([sys.executable, "-c", runner], input=json.dumps(spec), text=True, timeout=budget,
                           capture_output=True, check=False)
        except subprocess.TimeoutExpired:
            print("the calls did not finish in time")
            return 1
        records = []
        if os.path.exists(out):
            with open(out, encoding="utf-8") as file:
                records = [json.loads(line) for line in file if line.strip()]
    if not records or records[0].get("load") != "ok":
        print(f"the package did not load: {records[0].get('load') if records else 'no output'}")
        return 1
    got = {r["i"]: r for r in records[1:] if "i" in r}
    for index, want in enumerate(cases["expected"]):
        record = got.get(index)
        if record is None or "exc" in record or not same(record.get("v"), want):
            print(f"call {index} ({cases['calls'][index][2]}): wrong result")
            return 1
    print(f"all {len(cases['expected'])} hidden calls pass")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
