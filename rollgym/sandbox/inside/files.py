"""Files in and out of the sandbox's working folder, never through a symbolic link. Standard library only."""

from __future__ import annotations

import fnmatch
import os
import stat
from typing import Any


def safe_parts(relpath: str) -> list[str]:
    """The components of a relative path; ``ValueError`` if it is absolute or climbs out with ``..``."""
    parts = [p for p in relpath.split("/") if p not in ("", ".")]
    if not parts or relpath.startswith("/") or ".." in parts:
        raise ValueError(f"path {relpath!r} must be relative and stay inside the working folder")
    return parts


def _open_dir_beneath(root_fd: int, parts: list[str], create: bool) -> int:
    """A descriptor of the folder ``parts`` below ``root_fd``, never following a symbolic link."""
    fd = os.dup(root_fd)
    try:
        for part in parts:
            if create:
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
            nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def open_for_writing(workdir: str, path: str) -> int:
    """A descriptor of ``path`` below ``workdir`` opened for writing, created or emptied (no symlink is
    followed; its folders are made)."""
    parts = safe_parts(path)
    root_fd = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        dir_fd = _open_dir_beneath(root_fd, parts[:-1], create=True)
    finally:
        os.close(root_fd)
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        return os.open(parts[-1], flags, 0o644, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


def write_inputs(workdir: str, files: list[list[Any]], payload: memoryview) -> None:
    """Write each ``[path, mode, size]`` from ``payload`` below ``workdir`` (no symlink is followed)."""
    root_fd = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        offset = 0
        for path, mode, size in files:
            parts = safe_parts(path)
            dir_fd = _open_dir_beneath(root_fd, parts[:-1], create=True)
            try:
                try:
                    os.unlink(parts[-1], dir_fd=dir_fd)
                except FileNotFoundError:
                    pass
                except IsADirectoryError:
                    raise ValueError(f"input file {path!r} would replace a folder") from None
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
                fd = os.open(parts[-1], flags, mode & 0o777, dir_fd=dir_fd)
                try:
                    data = payload[offset : offset + size]
                    while data:
                        data = data[os.write(fd, data) :]
                    os.fchmod(fd, mode & 0o777)
                finally:
                    os.close(fd)
            finally:
                os.close(dir_fd)
            offset += size
    finally:
        os.close(root_fd)


def collect_files(workdir: str, patterns: list[str], limit: int) -> tuple[list[tuple[str, bytes]], bool]:
    """Regular files below ``workdir`` whose relative path matches a pattern, up to ``limit`` bytes in all."""
    found: list[tuple[str, bytes]] = []
    total, cut = 0, False
    if not patterns:
        return found, cut
    if not any(c in p for p in patterns for c in "*?["):  # plain paths: open them, no walk
        return _collect_named(workdir, patterns, limit)
    for dirpath, dirnames, filenames in os.walk(workdir, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, workdir)
            if not any(fnmatch.fnmatchcase(rel, p) or rel == p.strip("/") for p in patterns):
                continue
            try:
                fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    continue
                room = limit - total
                data = os.read(fd, room + 1) if room >= 0 else b""
                while len(data) <= room and (more := os.read(fd, room + 1 - len(data))):
                    data += more
            finally:
                os.close(fd)
            if len(data) > room:
                cut = True
                data = data[: max(room, 0)]
            total += len(data)
            found.append((rel, data))
    return found, cut


def list_modes(workdir: str, limit: int) -> tuple[dict[str, int], bool]:
    """Every entry below ``workdir`` (files, folders, links...) -> its ``lstat`` mode, and whether the
    listing was cut: it stops once the paths listed add up to ``limit`` bytes.

    Iterative (a folder chain of any depth costs its size), never follows a symbolic link, imports
    and runs nothing: the supervisor's own code reads the tree, not a process in the sandbox. A folder
    that cannot be listed (the code made it unreadable) contributes its own entry and nothing below it."""
    modes: dict[str, int] = {}
    total = 0
    pending = [""]
    while pending:
        rel = pending.pop()
        try:
            with os.scandir(os.path.join(workdir, rel) if rel else workdir) as entries:
                found = sorted((entry.name, entry.stat(follow_symlinks=False).st_mode) for entry in entries)
        except OSError:
            continue
        for name, mode in found:
            path = f"{rel}/{name}" if rel else name
            total += len(path) + 16
            if total > limit:
                return modes, True
            modes[path] = mode
            if stat.S_ISDIR(mode):
                pending.append(path)
    return modes, False


def _read_limited(fd: int, room: int) -> tuple[bytes, bool]:
    """Up to ``room`` bytes of ``fd``, and whether there was more."""
    data = os.read(fd, room + 1) if room >= 0 else b""
    while len(data) <= room and (more := os.read(fd, room + 1 - len(data))):
        data += more
    return data[: max(room, 0)], len(data) > room


def _collect_named(workdir: str, patterns: list[str], limit: int) -> tuple[list[tuple[str, bytes]], bool]:
    """:func:`collect_files` for patterns without wildcards: each is one path, opened without following a
    symbolic link at any level, in sorted order as the walk would give them."""
    found: list[tuple[str, bytes]] = []
    total, cut = 0, False
    names = set()
    for pattern in patterns:
        try:
            names.add("/".join(safe_parts(pattern.strip("/"))))
        except ValueError:
            continue
    root_fd = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for rel in sorted(names):
            parts = rel.split("/")
            try:
                dir_fd = _open_dir_beneath(root_fd, parts[:-1], create=False)
            except OSError:
                continue
            try:
                fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
            except OSError:
                continue
            finally:
                os.close(dir_fd)
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    continue
                data, more = _read_limited(fd, limit - total)
            finally:
                os.close(fd)
            cut = cut or more
            total += len(data)
            found.append((rel, data))
    finally:
        os.close(root_fd)
    return found, cut


def empty_folder(path: str, limit: int = 1 << 22) -> int:
    """Remove everything inside ``path`` (not ``path`` itself), never following a symbolic link;
    folders the code made unreadable are made readable first. Returns how many entries were removed.

    Iterative, with one folder open at a time (it climbs back through ``..``), so a chain of folders
    of any depth costs its size and nothing more: no recursion, no path that grows with the depth,
    no descriptor per level. ``OSError`` after ``limit`` entries. Only called between jobs, when
    every process of the previous job is dead, so nothing races it."""
    removed = 0
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    names: list[str] = []  # the folders below ``path`` that lead to the open one
    fd = os.open(path, flags)
    try:
        while True:
            below = None
            for name in os.listdir(fd):
                if removed >= limit:
                    raise OSError(f"more than {limit} entries to remove")
                if stat.S_ISDIR(os.lstat(name, dir_fd=fd).st_mode):
                    below = name
                    break
                os.unlink(name, dir_fd=fd)
                removed += 1
            if below is not None:  # lstat said a folder, and nothing runs to swap it
                os.chmod(below, 0o700, dir_fd=fd)
                inner = os.open(below, flags, dir_fd=fd)
                os.close(fd)
                fd = inner
                names.append(below)
                continue
            if not names:
                return removed
            parent = os.open("..", flags, dir_fd=fd)  # empty now: back up, and remove it
            os.close(fd)
            fd = parent
            os.rmdir(names.pop(), dir_fd=fd)
            removed += 1
    finally:
        os.close(fd)
