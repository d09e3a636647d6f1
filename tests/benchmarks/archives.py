"""Builders of hostile bundle archives for the archive, verification and leaderboard abuse tests."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

MIB = 1024 * 1024


def member(name: str, data: bytes = b"", kind: bytes = tarfile.REGTYPE, **attrs: Any) -> tuple[tarfile.TarInfo, bytes]:
    """A tar member: its header and its data."""
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    for key, value in attrs.items():
        setattr(info, key, value)
    return info, data


def tar_gz(members: list[tuple[tarfile.TarInfo, bytes]], fmt: int = tarfile.USTAR_FORMAT) -> bytes:
    """A gzip-compressed tar of ``members``, written by Python's tarfile."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=fmt) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return buffer.getvalue()


def bundle_members(folder: Path) -> list[tuple[tarfile.TarInfo, bytes]]:
    """The members of a genuine bundle folder, as pack_bundle would write them."""
    files = [folder / "manifest.json", folder / "summary.json", *sorted((folder / "transcripts").glob("*.jsonl"))]
    return [member(p.relative_to(folder).as_posix(), p.read_bytes()) for p in files if p.exists()]


def with_manifest(folder: Path, edit: Callable[[dict[str, Any]], None]) -> bytes:
    """A genuine bundle's archive with its manifest edited."""
    manifest = json.loads((folder / "manifest.json").read_text())
    edit(manifest)
    members = [m for m in bundle_members(folder) if m[0].name != "manifest.json"]
    return tar_gz([member("manifest.json", json.dumps(manifest).encode()), *members])


def zero_bomb(declared: int, prefix: list[tuple[tarfile.TarInfo, bytes]] | None = None,
              name: str = "transcripts/countdown.jsonl") -> bytes:
    """A valid .tar.gz whose last member is ``declared`` zero bytes, compressed about 1000 to 1.

    Built from concatenated gzip members (one per MiB of zeros), so a 980 MiB member costs
    about 1 MB on disk and no time to build.
    """
    body = b"".join(info.tobuf(tarfile.USTAR_FORMAT) + data + b"\0" * (-len(data) % 512)
                    for info, data in prefix or [])
    info = tarfile.TarInfo(name)
    info.size = declared
    one_mib = gzip.compress(b"\0" * MIB, 9)
    whole, rest = divmod(declared, MIB)
    tail = b"\0" * rest + b"\0" * (-declared % 512) + b"\0" * 1024
    return gzip.compress(body + info.tobuf(tarfile.USTAR_FORMAT)) + one_mib * whole + gzip.compress(tail)


def raw_header(name: str, kind: bytes, size: int) -> bytes:
    """A ustar header block with any type flag and declared size (for types tarfile will not write)."""
    block = bytearray(512)
    block[0:len(name)] = name.encode()
    block[100:108] = b"0000644\0"
    block[108:116] = b"0000000\0"
    block[116:124] = b"0000000\0"
    block[124:136] = f"{size:011o}\0".encode()
    block[136:148] = b"00000000000\0"
    block[156:157] = kind
    block[257:263] = b"ustar\0"
    block[263:265] = b"00"
    block[148:156] = b" " * 8
    block[148:156] = f"{sum(block):06o}\0 ".encode()
    return bytes(block)
