"""The audit hook's path checks, on the host (the hook is plain Python; the kernel-side walls are tested
in test_attacks.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rollgym.sandbox.inside import pyrun


def test_the_audit_hooks_shortcut_for_a_plain_name_agrees_with_realpath(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The audit hook resolves a plain name in the working folder without ``os.path.realpath``'s walk
    (one ``lstat``); every other path, and every link, still goes through realpath."""
    outside = tmp_path / "outside"
    work = tmp_path / "work"
    outside.mkdir()
    work.mkdir()
    (work / "file.txt").write_text("x")
    (work / "folder").mkdir()
    (work / "to_outside").symlink_to(outside / "target")
    (work / "dangling").symlink_to("no/such/place")
    (work / "loop").symlink_to("loop")
    monkeypatch.chdir(work)
    for path in ("file.txt", "folder", "missing", "to_outside", "dangling", "loop", ".", "..", "folder/../file.txt",
                 "to_outside/x", str(work / "file.txt"), "", "a\\b"):
        assert pyrun._real(path) == os.path.realpath(path), path
    hook = pyrun.make_hook((str(work),), (), allow_processes=False)
    hook("open", ("file.txt", "w", 0))  # inside: allowed
    with pytest.raises(PermissionError):
        hook("open", ("to_outside", "w", 0))  # a link out of the working folder
