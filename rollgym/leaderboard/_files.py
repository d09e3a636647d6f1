"""Durable file writes of the leaderboard: write beside the target, fsync, rename, fsync the folder.

Private to the leaderboard until ``rollgym.core.io`` offers the same helpers; a crash
at any moment leaves either the old file or the new one, never a torn one.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _fsync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # some filesystems do not open folders; the rename is still atomic
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically and durably."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_folder(path.parent)


def move_into_place(source: Path, target: Path) -> None:
    """Flush ``source`` to disk and rename it to ``target`` (same filesystem), durably."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(source, "rb+") as handle:
        os.fsync(handle.fileno())
    os.replace(source, target)
    _fsync_folder(target.parent)
