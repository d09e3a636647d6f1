"""Reading an untrusted bundle archive: stream it, check every byte's budget, only then unpack.

A bundle archive is a gzip-compressed tar that holds exactly the bundle layout
(``manifest.json``, ``summary.json``, ``transcripts/<entry>.jsonl``), nothing else.
:func:`check_archive` reads the archive as a stream, through a decompressor
that counts every byte it hands out, and refuses it, with one sentence, on the
first of:

- a compressed file larger than :attr:`BundleLimits.max_archive_bytes`;
- anything but gzip (bzip2, xz and plain tar are refused);
- more than :attr:`BundleLimits.max_members` members, a total unpacked size over
  :attr:`BundleLimits.max_unpacked_bytes`, or a compression ratio over
  :attr:`BundleLimits.max_ratio` once more than :attr:`BundleLimits.ratio_grace_bytes`
  are unpacked (a gzip bomb is refused after a few MiB of work, not after a GiB);
- a member that is not a regular file or the ``transcripts`` folder: symbolic and
  hard links, devices, FIFOs, pax and GNU extension headers, sparse files;
- a member path that is absolute, holds ``..``, a backslash or a NUL, repeats an
  earlier member, or is not part of the bundle layout;
- a header with a bad checksum, an archive that ends early (in a member or before the
  gzip checksum), or anything but zero padding after the end-of-archive blocks.

The stream and the tar headers (the POSIX ustar layout, 512-byte blocks) are read by
:mod:`rollgym.core.tarstream`, the counted reader the Terminal env's archive check
shares, rather than by :mod:`tarfile`, which would read pax and GNU extension headers
of any declared size into memory before the caller sees a member. :func:`extract_archive`
runs the same checks over the whole archive first and writes files only after
they all passed. Both are synchronous and CPU-bound: a server runs them in a
worker thread, never on its event loop.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from rollgym.core.errors import ConfigError
from rollgym.core.tarstream import BLOCK, ArchiveError, ArchiveTooLarge, CountedGzip, TarHeader, parse_header

MANIFEST = "manifest.json"
SUMMARY = "summary.json"
TRANSCRIPTS = "transcripts"
_BLOCK = BLOCK
TRANSCRIPT_PATH = re.compile(r"^transcripts/[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}\.jsonl$")
_MIB = 1024 * 1024
_TYPE_NAMES = {
    b"1": "a hard link",
    b"2": "a symbolic link",
    b"3": "a character device",
    b"4": "a block device",
    b"6": "a FIFO",
    b"7": "a contiguous file",
    b"x": "a pax extended header",
    b"g": "a pax global header",
    b"L": "a GNU long-name header",
    b"K": "a GNU long-link header",
    b"S": "a GNU sparse file",
}


class BundleError(ConfigError):
    """A bundle that cannot be read: missing files, bad JSON, an unsafe or oversized archive."""


@dataclass(frozen=True)
class BundleLimits:
    """What an uploaded bundle may cost to read; one object shared by the server and the worker.

    Attributes:
        max_archive_bytes: Largest compressed archive (the upload limit).
        max_unpacked_bytes: Largest total unpacked size of all members.
        max_members: Most members (files and folders) in the archive.
        max_json_bytes: Largest ``manifest.json`` or ``summary.json``.
        max_ratio: Largest unpacked/compressed ratio, enforced once ``ratio_grace_bytes`` are unpacked.
            Real bundles measure 7x to 31x (``rollgym bench run quick``, ``search``, ``tools``, ``math``).
        ratio_grace_bytes: Unpacked bytes allowed before the ratio counts (small archives are mostly
            tar padding, which compresses without limit).

    Example:
        >>> BundleLimits(max_archive_bytes=1024 * 1024).max_unpacked_bytes // 2**20
        512
    """

    max_archive_bytes: int = 64 * _MIB
    max_unpacked_bytes: int = 512 * _MIB
    max_members: int = 256
    max_json_bytes: int = 8 * _MIB
    max_ratio: float = 200.0
    ratio_grace_bytes: int = 16 * _MIB

    def __post_init__(self) -> None:
        for name in ("max_archive_bytes", "max_unpacked_bytes", "max_members", "max_json_bytes", "ratio_grace_bytes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"BundleLimits.{name} must be a positive integer, got {value!r}.")
        if not isinstance(self.max_ratio, (int, float)) or not 1 <= self.max_ratio < float("inf"):
            raise ConfigError(f"BundleLimits.max_ratio must be a finite number >= 1, got {self.max_ratio!r}.")


DEFAULT_LIMITS = BundleLimits()


@dataclass(frozen=True)
class Member:
    """One checked archive member: its normalised path, whether it is a file, and its size."""

    name: str
    is_file: bool
    size: int


class _CountingGzip(CountedGzip):
    """The shared counted gzip stream (:class:`~rollgym.core.tarstream.CountedGzip`) with a bundle's limits and
    :class:`BundleError` sentences."""

    def __init__(self, raw: BinaryIO, limits: BundleLimits) -> None:
        # the unpacked budget, plus a header and padding block for every member and two end blocks
        super().__init__(raw, limits.max_unpacked_bytes + _BLOCK * (2 * limits.max_members + 2),
                         max_ratio=limits.max_ratio, ratio_grace_bytes=limits.ratio_grace_bytes)
        self.limits = limits

    def read_exact(self, n: int, what: str = "a member", *, may_end: bool = False) -> bytes:
        """Exactly ``n`` unpacked bytes (with ``may_end``, ``b""`` at a clean end), or a :class:`BundleError`."""
        try:
            return super().read_exact(n, what, may_end=may_end)
        except ArchiveError as exc:
            raise _bundle_error(exc, self.limits) from None

    def finish(self) -> None:
        """Read the stream to its end (the gzip checksum is checked there); only zero padding may be left."""
        try:
            clean = self.rest_is_zeros()
        except ArchiveError as exc:
            raise _bundle_error(exc, self.limits) from None
        if not clean:
            raise BundleError("The bundle archive has data after its end; pack it with `rollgym bench pack`.")


def _bundle_error(exc: ArchiveError, limits: BundleLimits) -> BundleError:
    if isinstance(exc, ArchiveTooLarge) and exc.reason == "ratio":
        return BundleError(f"The bundle archive expands more than {limits.max_ratio:g} times (a compression bomb); "
                           "pack real transcripts with `rollgym bench pack`.")
    if isinstance(exc, ArchiveTooLarge):
        return BundleError(f"The bundle unpacks to more than {limits.max_unpacked_bytes // _MIB} MiB; "
                           "it is too large.")
    return BundleError(f"The bundle archive {exc}.")


def _member_name(header: TarHeader) -> str:
    try:
        return header.name.decode("utf-8")
    except UnicodeDecodeError:
        raise BundleError("The bundle archive has a member name that is not UTF-8; pack it with "
                          "`rollgym bench pack`.") from None


def _normalise(name: str, is_file: bool) -> str:
    """The member's path inside the bundle, or a :class:`BundleError` for an unsafe or foreign one."""
    shown = repr(name[:80])
    if not name or name.startswith("/") or "\\" in name or "\0" in name or re.match(r"^[A-Za-z]:", name):
        raise BundleError(f"The bundle archive has an unsafe path {shown}; pack it with `rollgym bench pack`.")
    parts = name.split("/")
    while parts and parts[0] == ".":
        parts = parts[1:]
    if parts and parts[-1] == "" and not is_file:
        parts = parts[:-1]
    if any(part in ("..", "") for part in parts) or any(part == "." for part in parts):
        raise BundleError(f"The bundle archive has an unsafe path {shown}; pack it with `rollgym bench pack`.")
    path = "/".join(parts)
    if is_file:
        allowed = path in (MANIFEST, SUMMARY) or bool(TRANSCRIPT_PATH.match(path))
    else:
        allowed = path in ("", TRANSCRIPTS)
    if not allowed:
        raise BundleError(
            f"The bundle archive holds {shown}, which is not part of a bundle (only {MANIFEST}, {SUMMARY} and "
            f"{TRANSCRIPTS}/<entry>.jsonl are); pack it with `rollgym bench pack`."
        )
    return path


def _iter_members(stream: _CountingGzip, limits: BundleLimits) -> Iterator[tuple[Member, int]]:
    """Yield each checked member and its padded data length; the caller reads or skips the data."""
    seen: set[str] = set()
    total = 0
    count = 0
    while True:
        try:
            header = parse_header(stream.read_exact(_BLOCK, "a header", may_end=True) or b"\0" * _BLOCK)
        except ArchiveError as exc:
            raise _bundle_error(exc, limits) from None
        if header is None:
            return  # end of archive: nothing after it is read
        count += 1
        if count > limits.max_members:
            raise BundleError(f"The bundle archive has more than {limits.max_members} members; it is not a bundle.")
        kind = header.kind
        if kind in _TYPE_NAMES:
            name = header.name.decode("utf-8", "replace")
            raise BundleError(f"The bundle archive holds {_TYPE_NAMES[kind]} ({name[:80]!r}); only plain files "
                              "are allowed (pack it with `rollgym bench pack`).")
        if kind not in (b"0", b"\0", b"5"):
            raise BundleError(f"The bundle archive holds a member of unknown type {kind!r}; only plain files are "
                              "allowed.")
        is_file = kind != b"5"
        size = header.size
        path = _normalise(_member_name(header), is_file)
        if not is_file and size:
            raise BundleError("The bundle archive has a folder entry with data; it is corrupt.")
        if path in seen:
            raise BundleError(f"The bundle archive holds {path!r} twice; pack it with `rollgym bench pack`.")
        seen.add(path)
        if path in (MANIFEST, SUMMARY) and size > limits.max_json_bytes:
            raise BundleError(f"{path} in the bundle is larger than {limits.max_json_bytes // _MIB} MiB.")
        total += size
        if total > limits.max_unpacked_bytes:
            raise BundleError(f"The bundle unpacks to more than {limits.max_unpacked_bytes // _MIB} MiB; "
                              "it is too large.")
        yield Member(path, is_file, size), header.padded


def _open_stream(path: Path, limits: BundleLimits) -> tuple[BinaryIO, _CountingGzip]:
    try:
        size = path.stat().st_size
        raw = open(path, "rb")
    except OSError as exc:
        raise BundleError(f"Cannot read the bundle archive {path.name} ({exc.strerror}).") from None
    if size > limits.max_archive_bytes:
        raw.close()
        raise BundleError(f"The bundle archive is larger than {limits.max_archive_bytes // _MIB} MiB.")
    magic = raw.read(2)
    raw.seek(0)
    if magic != b"\x1f\x8b":
        raw.close()
        raise BundleError(f"{path.name} is not a readable .tar.gz bundle (not gzip data); pack it with "
                          "`rollgym bench pack`.")
    return raw, _CountingGzip(raw, limits)


def check_archive(path: str | os.PathLike[str], limits: BundleLimits = DEFAULT_LIMITS) -> list[Member]:
    """Stream the archive and check every member against ``limits``; write nothing.

    Returns:
        The members (files and folders) in archive order.

    Raises:
        BundleError: with one sentence for the first problem found.

    Example:
        >>> [m.name for m in check_archive("runs/oracle.tar.gz")]  # doctest: +SKIP
        ['manifest.json', 'summary.json', 'transcripts/countdown.jsonl', ...]
    """
    raw, stream = _open_stream(Path(path), limits)
    members: list[Member] = []
    with raw:
        for member, padded in _iter_members(stream, limits):
            stream.skip(padded, repr(member.name))
            members.append(member)
        stream.finish()
    if not any(m.name == MANIFEST for m in members):
        raise BundleError(f"The bundle archive has no {MANIFEST}; pack the bundle folder with `rollgym bench pack`.")
    return members


def extract_archive(path: str | os.PathLike[str], dest: str | os.PathLike[str],
                    limits: BundleLimits = DEFAULT_LIMITS) -> list[Member]:
    """Check the whole archive (:func:`check_archive`), then unpack it into the empty folder ``dest``.

    Nothing is written unless every member passed; the unpacking pass checks again as it goes.
    """
    checked = check_archive(path, limits)
    root = Path(dest)
    raw, stream = _open_stream(Path(path), limits)
    with raw:
        for member, padded in _iter_members(stream, limits):
            target = root.joinpath(*member.name.split("/")) if member.name else root
            if not member.is_file:
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            left = member.size
            with open(target, "xb") as out:
                while left:
                    data = stream.read_exact(min(left, _MIB), repr(member.name))
                    out.write(data)
                    left -= len(data)
            stream.skip(padded - member.size, repr(member.name))
    return checked


def read_member(path: str | os.PathLike[str], name: str, limits: BundleLimits = DEFAULT_LIMITS) -> bytes | None:
    """The bytes of one small member (``manifest.json`` or ``summary.json``) of a checked archive; ``None`` if absent.

    The whole archive is checked first (:func:`check_archive`); nothing is written to disk.
    """
    if name not in (MANIFEST, SUMMARY):
        raise ValueError(f"read_member reads {MANIFEST} or {SUMMARY}, not {name!r}")
    check_archive(path, limits)
    raw, stream = _open_stream(Path(path), limits)
    with raw:
        for member, padded in _iter_members(stream, limits):
            if member.name == name:
                return stream.read_exact(member.size, repr(name))
            stream.skip(padded, repr(member.name))
    return None
