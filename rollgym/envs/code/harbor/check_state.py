"""Check a generated terminal task's final state inside a Harbor container (standard library only).

Run in the task's working folder: ``python3 check_state.py checks.json``; exit status 0 when every
check passes, else 1 with the first failure printed. rollgym's Harbor export copies this file into
each task's ``tests/`` as ``check.py``; the checks are those of
:mod:`rollgym.envs.code.terminal_gen.spec`, with the meaning rollgym's own checker gives them.
"""

from __future__ import annotations

import gzip
import json
import os
import stat
import subprocess
import sys
import tarfile
from typing import Any


def _read(path: str) -> bytes | None:
    if os.path.islink(path) or not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        return f.read()


def _regular_files(folder: str) -> list[str]:
    found = []
    for root, _, names in os.walk(folder):
        for name in names:
            full = os.path.join(root, name)
            if not os.path.islink(full) and os.path.isfile(full):
                found.append(os.path.relpath(full, folder))
    return sorted(found)


def _members(path: str) -> dict[str, str] | None:
    try:
        with tarfile.open(path, "r:gz") as archive:
            found = {}
            for member in archive.getmembers():
                if member.isdir():
                    continue
                if not member.isfile():
                    return None
                data = archive.extractfile(member)
                found[member.name.removeprefix("./")] = (data.read() if data else b"").decode("utf-8", "replace")
            return found
    except (OSError, tarfile.TarError, EOFError):
        return None


def check(c: dict[str, Any]) -> tuple[bool, str]:
    """One check: whether it passes, and what was found when it does not."""
    kind, path = c["type"], c.get("path", "")
    if kind == "file":
        return _read(path) == c["content"].encode(), f"{path} is missing or has other content"
    if kind == "text":
        data = _read(path)
        return data is not None and data.decode("utf-8", "replace").strip() == c["value"], f"{path} holds another value"
    if kind == "absent":
        return not os.path.lexists(path), f"{path} is still there"
    if kind == "tree":
        return _regular_files(path) == c["names"], f"{path}/ holds other files"
    if kind == "mode":
        if not os.path.lexists(path):
            return False, f"{path} is missing"
        mode = stat.S_IMODE(os.lstat(path).st_mode)
        return mode & c["all"] == c["all"] and not mode & c["none"], f"{path} has mode {mode:o}"
    if kind == "archive":
        return os.path.isfile(path) and _members(path) == c["members"], f"{path} does not hold exactly the members"
    if kind == "gzip":
        try:
            with gzip.open(path) as f:
                return f.read() == c["content"].encode(), f"{path} inflates to other content"
        except OSError:
            return False, f"{path} is missing or not gzip data"
    if kind == "run":
        for name, text in c["files"].items():
            os.makedirs(os.path.dirname(name) or ".", exist_ok=True)
            with open(name, "w") as f:
                f.write(text)
            os.chmod(name, c["modes"].get(name, 0o644))
        try:
            done = subprocess.run(["bash", "-c", c["command"]], capture_output=True, timeout=60)
        except subprocess.TimeoutExpired:
            return False, "a hidden run timed out"
        printed = done.stdout.decode("utf-8", "replace").strip()
        return printed == c["stdout"].strip(), f"a hidden run printed {printed[:60]!r}"
    return False, f"unknown check type {kind!r}"


def main(argv: list[str]) -> int:
    """Run every check in the JSON file ``argv[1]``; 0 if all pass."""
    with open(argv[1]) as f:
        checks = json.load(f)
    for i, c in enumerate(checks):
        ok, why = check(c)
        if not ok:
            print(f"check {i + 1} of {len(checks)} failed: {why}")
            return 1
    print(f"all {len(checks)} checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
