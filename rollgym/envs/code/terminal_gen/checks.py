"""Check a generated terminal task's final state on a sandbox session (see :mod:`.spec` for the checks).

Files are read back by the sandbox's supervisor and modes listed by it (``lstat``, no link followed,
no process started where the agent's commands ran), archives are opened here without extracting
them (through Terminal-v0's counted reader), and ``run`` checks start their own command, one job
each, in the session after every process of the agent is gone; its output is compared here.
"""

from __future__ import annotations

import zlib
from typing import Any

from rollgym.core.task import Score
from rollgym.envs.code.terminal.env import MAX_INFLATED_BYTES, SESSION_LIMITS, archive_matches, file_modes
from rollgym.envs.code.terminal_gen.spec import Check, Spec
from rollgym.sandbox import File, Job, Session


def starting_files(spec: Spec) -> dict[str, Any]:
    """The task's starting files as sandbox inputs, with their modes."""
    modes = spec.get("modes", {})
    return {p: File(c.encode(), int(modes[p])) if p in modes else c for p, c in spec["files"].items()}


def check_spec(session: Session, spec: Spec) -> Score:
    """Run every check of ``spec`` on the session's final state; the first that fails names the reason."""
    checks: list[Check] = spec["checks"]
    files = session.read_files(["*"])
    modes = file_modes(session) if any(c["type"] in ("mode", "absent") for c in checks) else {}
    for i, check in enumerate(checks):
        ok, reason = _one(session, check, files, modes)
        if not ok:
            return Score.fail("check_failed", reason=reason, check=i, checks=len(checks))
    return Score.success(checks=len(checks))


def _text(files: dict[str, bytes], path: str) -> str | None:
    data = files.get(path)
    return None if data is None else data.decode("utf-8", "replace")


def _one(session: Session, check: Check, files: dict[str, bytes], modes: dict[str, int]) -> tuple[bool, str]:
    kind, path = check["type"], check.get("path", "")
    if kind == "file":
        got = _text(files, path)
        return got == check["content"], f"{path} is missing" if got is None else f"{path} has other content"
    if kind == "text":
        got = _text(files, path)
        if got is None:
            return False, f"{path} is missing"
        return got.strip() == check["value"], f"{path} holds {got.strip()[:40]!r}"
    if kind == "absent":
        present = path in files or path in modes or not modes
        return not present, f"{path} is still there" if modes else "the folder could not be listed"
    if kind == "tree":
        prefix = path.rstrip("/") + "/"
        names = sorted(p[len(prefix):] for p in files if p.startswith(prefix))
        return names == check["names"], f"{path}/ holds {len(names)} files, not the {len(check['names'])} expected"
    if kind == "mode":
        mode = modes.get(path)
        if mode is None:
            return False, f"{path} is missing (or the folder could not be listed)"
        ok = mode & check["all"] == check["all"] and not mode & check["none"]
        return ok, f"{path} has mode {mode & 0o777:o}"
    if kind == "archive":
        if path not in files:
            return False, f"{path} is missing"
        ok, details = archive_matches(files.get(path), check["members"])
        reason = details.get("reason") if isinstance(details, dict) else None
        return bool(ok), f"{path}: {reason or details}"
    if kind == "gzip":
        return _gzip_matches(files.get(path), check["content"], path)
    if kind == "run":
        inputs = {p: File(c.encode(), int(check["modes"][p])) if p in check["modes"] else c
                  for p, c in check["files"].items()}
        result = session.run(Job.command(["bash", "-c", check["command"]], files=inputs, limits=SESSION_LIMITS))
        printed = result.stdout.strip()
        return printed == check["stdout"].strip(), f"a hidden run printed {printed[:60]!r} ({result.label})"
    return False, f"unknown check type {kind!r}"


def _gzip_matches(data: bytes | None, content: str, path: str) -> tuple[bool, str]:
    if data is None:
        return False, f"{path} is missing"
    inflate = zlib.decompressobj(wbits=31)
    try:
        text = inflate.decompress(data, MAX_INFLATED_BYTES)
    except zlib.error:
        return False, f"{path} is not gzip data"
    if inflate.unconsumed_tail:
        return False, f"{path} inflates past {MAX_INFLATED_BYTES} bytes"
    return text == content.encode(), f"{path} inflates to other content"
