"""Reading an untrusted ``.tar.gz`` as a stream in which every inflated byte is counted.

:mod:`tarfile` inflates without limit and reads a pax or GNU extension header of any
declared size into memory before its caller sees a member, so a caller's cap on member
sizes never sees the bytes that cost the most. Here the gzip stream is read through
:class:`CountedGzip`, which counts every byte it inflates (headers, extension records and
padding included) and raises :class:`ArchiveTooLarge` before it hands out one byte past
its budget; the tar headers (the POSIX ustar layout, 512-byte blocks) are parsed by
:func:`parse_header`. Callers decide which members they accept: the leaderboard's bundle
reader (:mod:`rollgym.bundles.archive`) refuses extension headers outright, the
Terminal env's check reads them (:func:`iter_members`) under a small cap of their own.

Errors are :class:`ArchiveError` with a predicate for the caller's subject
(``f"The bundle archive {exc}."``), never :mod:`tarfile` or :mod:`zlib` exceptions.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import BinaryIO

BLOCK = 512
_CHUNK = 1024 * 1024
FILE_KINDS = (b"0", b"\0", b"7")  # regular, old regular, contiguous
DIR_KIND = b"5"
EXTENSION_KINDS = (b"x", b"g", b"L", b"K")  # pax extended and global headers, GNU long name and long link


class ArchiveError(ValueError):
    """A ``.tar.gz`` that cannot be read: corrupt, truncated, or not a tar inside gzip.

    The message is a predicate (``"is corrupt or truncated (BadGzipFile)"``): the caller names its subject.
    """


class ArchiveTruncated(ArchiveError):
    """The inflated stream ended inside a header or a member (the gzip stream itself was whole)."""


class ArchiveTooLarge(ArchiveError):
    """The archive passed a budget: inflated bytes (``reason="size"``), ratio (``"ratio"``), headers
    (``"members"``) or one extension header's size (``"header"``).

    Attributes:
        reason: ``"size"``, ``"ratio"``, ``"members"`` or ``"header"``.
        limit: The budget that was passed (bytes, a ratio or a count of headers).
    """

    def __init__(self, reason: str, limit: float) -> None:
        self.reason = reason
        self.limit = limit
        super().__init__({"size": f"inflates to more than {int(limit)} bytes",
                          "ratio": f"expands more than {limit:g} times (a compression bomb)",
                          "members": f"has more than {int(limit)} members",
                          "header": f"has an extension header larger than {int(limit)} bytes"}[reason])


class CountedGzip:
    """A gzip stream that counts every byte it inflates and refuses to inflate past ``max_bytes``.

    Args:
        raw: The compressed bytes (a binary file or :class:`io.BytesIO`).
        max_bytes: Most bytes the whole stream may inflate to, headers and padding included.
        max_ratio: If given, the most inflated/compressed ratio, checked once ``ratio_grace_bytes``
            are inflated (small archives are mostly tar padding, which compresses without limit).
        ratio_grace_bytes: Inflated bytes allowed before the ratio counts.

    Example:
        >>> import gzip, io
        >>> stream = CountedGzip(io.BytesIO(gzip.compress(b"a" * 600)), max_bytes=512)
        >>> len(stream.read_exact(512))
        512
        >>> stream.read_exact(88)
        Traceback (most recent call last):
        ...
        rollgym.core.tarstream.ArchiveTooLarge: inflates to more than 512 bytes
    """

    def __init__(self, raw: BinaryIO, max_bytes: int, *, max_ratio: float | None = None,
                 ratio_grace_bytes: int = 0) -> None:
        self.raw = raw
        self.max_bytes = max_bytes
        self.max_ratio = max_ratio
        self.ratio_grace_bytes = ratio_grace_bytes
        self.gzip = gzip.GzipFile(fileobj=raw, mode="rb")
        self.unpacked = 0
        self.gzip_failed = False  # the compressed stream itself was corrupt, not the tar inside it

    def read_exact(self, n: int, what: str = "a member", *, may_end: bool = False) -> bytes:
        """Exactly ``n`` inflated bytes; with ``may_end``, ``b""`` if the stream ends before the first of them.

        Raises:
            ArchiveTooLarge: ``n`` more bytes would pass the budget (nothing is inflated then).
            ArchiveError: the stream is corrupt, or it ends inside the ``n`` bytes (named by ``what``).
        """
        if self.unpacked + n > self.max_bytes:
            raise ArchiveTooLarge("size", self.max_bytes)
        chunks = []
        wanted = n
        while wanted:
            data = self._inflate(min(wanted, _CHUNK))
            if not data:
                if may_end and wanted == n:
                    return b""
                raise ArchiveTruncated(f"ends in the middle of {what}; it is truncated")
            chunks.append(data)
            wanted -= len(data)
        return b"".join(chunks)

    def skip(self, n: int, what: str = "a member") -> None:
        """Inflate and drop ``n`` bytes, a chunk at a time (counted like any other)."""
        while n:
            step = min(n, _CHUNK)
            self.read_exact(step, what)
            n -= step

    def rest_is_zeros(self) -> bool:
        """Inflate the rest of the stream (its gzip checksum is checked at the end): whether it is all zeros."""
        while True:
            if self.unpacked >= self.max_bytes:
                raise ArchiveTooLarge("size", self.max_bytes)
            data = self._inflate(min(_CHUNK, self.max_bytes - self.unpacked))
            if not data:
                return True
            if data.count(0) != len(data):
                return False

    def _inflate(self, n: int) -> bytes:
        try:
            data = self.gzip.read(n)
        except (OSError, EOFError, zlib.error) as exc:
            self.gzip_failed = True
            raise ArchiveError(f"is corrupt or truncated ({type(exc).__name__})") from None
        self.unpacked += len(data)
        if self.max_ratio is not None and self.unpacked > self.ratio_grace_bytes \
                and self.unpacked > self.max_ratio * max(1, self.raw.tell()):
            raise ArchiveTooLarge("ratio", self.max_ratio)
        return data


@dataclass(frozen=True)
class TarHeader:
    """One checked 512-byte tar header.

    Attributes:
        name: The member's path as stored (ustar prefix joined; a pax ``path`` or GNU long name applied
            by :func:`iter_members`), undecoded.
        kind: The type flag (``b"0"`` a file, ``b"5"`` a folder, ``b"x"`` a pax header, ...).
        size: The declared length of the data that follows the header.
    """

    name: bytes
    kind: bytes
    size: int

    @property
    def padded(self) -> int:
        """The data's length in the archive, rounded up to whole blocks."""
        return -(-self.size // BLOCK) * BLOCK

    @property
    def is_file(self) -> bool:
        """A regular file (a plain, old-style or contiguous one), as :mod:`tarfile` counts them, sparse aside."""
        return self.kind in FILE_KINDS and not (self.kind == b"\0" and self.name.endswith(b"/"))

    @property
    def is_dir(self) -> bool:
        """A folder entry."""
        return self.kind == DIR_KIND or (self.kind == b"\0" and self.name.endswith(b"/"))


def _octal(field: bytes, what: str) -> int:
    if field[:1] and field[0] & 0x80:  # GNU base-256: only for values far beyond any budget here
        raise ArchiveError(f"declares a {what} too large to read")
    text = field.split(b"\0", 1)[0].strip(b" ")
    if not text:
        return 0
    if not re.fullmatch(rb"[0-7]{1,12}", text):
        raise ArchiveError(f"has a corrupt header (its {what} is not an octal number)")
    return int(text, 8)


def parse_header(block: bytes) -> TarHeader | None:
    """The header in one 512-byte ``block``; ``None`` for an end-of-archive (all-zero) block.

    Raises:
        ArchiveError: a bad checksum or a field that is not a number.
    """
    if block == b"\0" * BLOCK:
        return None
    stored = _octal(block[148:156], "checksum")
    unsigned = sum(block[:148]) + 8 * 32 + sum(block[156:])
    signed = unsigned - 256 * sum(1 for b in block[:148] + block[156:] if b > 127)  # old tars sum signed bytes
    if stored not in (unsigned, signed):
        raise ArchiveError("has a corrupt header (bad checksum); it is damaged or not a tar")
    name = block[0:100].split(b"\0", 1)[0]
    kind = block[156:157]
    prefix = block[345:500].split(b"\0", 1)[0]
    if prefix and kind not in (b"L", b"K", b"S"):  # ustar keeps a path's leading folders there (as tarfile reads it)
        name = prefix + b"/" + name
    return TarHeader(name, kind, _octal(block[124:136], "size"))


def _pax_records(data: bytes) -> dict[bytes, bytes]:
    """The ``key=value`` records of a pax extended header (``"%d %s=%s\\n"`` each)."""
    records: dict[bytes, bytes] = {}
    pos = 0
    while pos < len(data) and data[pos] != 0:
        match = re.match(rb"(\d{1,7}) ", data[pos:pos + 8])
        length = int(match.group(1)) if match else 0
        record = data[pos:pos + length]
        if not match or length <= len(match.group(0)) or len(record) != length or not record.endswith(b"\n") \
                or b"=" not in record:
            raise ArchiveError("has a corrupt pax header")
        key, value = record[len(match.group(0)):-1].split(b"=", 1)
        records[key] = value
        pos += length
    return records


def iter_members(stream: CountedGzip, *, max_members: int, max_extension_bytes: int,
                 lenient_end: bool = False) -> Iterator[TarHeader]:
    """Yield each member's header, with pax ``path``/``size`` and GNU long names applied to it.

    Extension headers (pax ``x`` and ``g``, GNU ``L`` and ``K``) are read, each up to
    ``max_extension_bytes``, and not yielded. The caller reads or skips each member's data
    (``header.size`` bytes, then ``header.padded - header.size`` of padding) before asking for
    the next one. Iteration ends at the first all-zero block or a clean end of stream; with
    ``lenient_end``, also at a header after the first that is cut off or fails its checksum, as
    :mod:`tarfile` reads archives (so that a check that used it scores the same archives the same).

    Raises:
        ArchiveTooLarge: an extension header over its cap, more than ``max_members`` headers, or the
            stream's own budget.
        ArchiveError: a corrupt or truncated archive.
    """
    pending: dict[bytes, bytes] = {}
    count = 0
    while True:
        try:
            header = parse_header(stream.read_exact(BLOCK, "a header", may_end=True) or b"\0" * BLOCK)
        except ArchiveTruncated:
            if lenient_end and count:
                return
            raise
        except ArchiveTooLarge:
            raise
        except ArchiveError:
            if lenient_end and count and not stream.gzip_failed:
                return
            raise
        if header is None:
            return
        count += 1
        if count > max_members:
            raise ArchiveTooLarge("members", max_members)
        if header.kind not in EXTENSION_KINDS:
            if b"path" in pending:
                header = replace(header, name=pending[b"path"])
            if b"size" in pending:
                if not re.fullmatch(rb"\d{1,12}", pending[b"size"]):
                    raise ArchiveError("has a corrupt pax header (its size is not a number)")
                header = replace(header, size=int(pending[b"size"]))
            pending = {}
            yield header
            continue
        if header.size > max_extension_bytes:
            raise ArchiveTooLarge("header", max_extension_bytes)
        data = stream.read_exact(header.padded, "an extension header")[:header.size]
        if header.kind == b"x":
            pending.update(_pax_records(data))
        elif header.kind == b"L":
            pending[b"path"] = data.split(b"\0", 1)[0]
