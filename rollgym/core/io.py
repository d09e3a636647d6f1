"""Atomic file writes: a temporary file in the target's folder, flushed to disk, then renamed over the target.

A reader (or a run that is killed mid-write) sees the old file or the new one,
never half of one. :func:`atomic_path` serves libraries that write by file name
(``numpy.savez``, ``torch.save``, ``matplotlib``); the ``write_*_atomic``
helpers cover bytes, text and JSON; :func:`append_line` appends one complete
line per call, for results that grow an episode at a time; :func:`file_sha256`
checks a downloaded file against its pinned hash.

New files get mode ``0o644`` (``tempfile`` alone would leave them private);
a replaced file keeps its mode. After the rename the folder is flushed too, so
the new name survives a power loss; :func:`move_into_place` does the same for
a file written elsewhere on the same filesystem (an upload).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

_NEW_FILE_MODE = 0o644


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], *, keep_suffix: bool = True) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; when the block succeeds, it replaces ``path``.

    With ``keep_suffix`` the temporary name ends with ``path``'s suffix, so writers that
    pick a format from it (``.npz``, ``.png``) behave; without it the name ends in
    ``.tmp``, so a file left by a killed process never matches a reader's ``*.jsonl``
    glob (the byte, text and JSON writers, which need no suffix, do this). On an
    exception the temporary file is removed and ``path`` is left as it was. Parent
    folders are created.

    Example:
        >>> import numpy as np, tempfile, pathlib
        >>> target = pathlib.Path(tempfile.mkdtemp()) / "arrays.npz"
        >>> with atomic_path(target) as tmp:
        ...     np.savez(tmp, x=np.arange(3))
        >>> sorted(np.load(target))
        ['x']
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    prefix, suffix = (f".{target.stem}.", f".tmp{target.suffix}") if keep_suffix else (f".{target.name}.", ".tmp")
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=prefix, suffix=suffix)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else _NEW_FILE_MODE
        os.chmod(tmp, mode)
        _fsync(tmp)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_folder(target.parent)


def move_into_place(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> Path:
    """Flush ``source`` to disk and rename it to ``target`` (same filesystem), durably; return ``target``."""
    source, target = Path(source), Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    _fsync(source)
    os.replace(source, target)
    _fsync_folder(target.parent)
    return target


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically; return the path."""
    with atomic_path(path, keep_suffix=False) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def write_text_atomic(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically; return the path."""
    return write_bytes_atomic(path, text.encode(encoding))


def write_json_atomic(path: str | os.PathLike[str], data: Any, *, indent: int | None = 2, sort_keys: bool = True,
                      **dump_kwargs: Any) -> Path:
    """Write ``data`` as JSON (indented, keys sorted, a final newline) atomically; return the path.

    ``dump_kwargs`` go to :func:`json.dumps` (e.g. ``allow_nan=False``, ``default=str``).
    """
    text = json.dumps(data, indent=indent, sort_keys=sort_keys, ensure_ascii=False, **dump_kwargs)
    return write_text_atomic(path, text + "\n")


def write_jsonl_atomic(path: str | os.PathLike[str], rows: Iterable[Any], **dump_kwargs: Any) -> Path:
    """Write one JSON document per line atomically; return the path. ``dump_kwargs`` go to :func:`json.dumps`."""
    dump_kwargs.setdefault("ensure_ascii", False)
    with atomic_path(path, keep_suffix=False) as tmp, open(tmp, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, **dump_kwargs) + "\n")
    return Path(path)


def append_line(path: str | os.PathLike[str], line: str, *, fsync: bool = True) -> None:
    """Append ``line`` (a newline is added when missing) with one ``write``, then flush it to disk.

    With ``O_APPEND`` a single write of a whole line is never interleaved with
    another process's line, so a crash leaves complete lines plus at most one
    partial last line, which readers should drop.
    """
    data = (line if line.endswith("\n") else line + "\n").encode("utf-8")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, _NEW_FILE_MODE)
    try:
        written = os.write(fd, data)
        if written != len(data):
            raise OSError(f"short append to {target}: {written} of {len(data)} bytes")
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The hex SHA-256 of a file, read a megabyte at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
