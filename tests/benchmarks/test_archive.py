"""Untrusted bundle archives: every hostile shape is refused before anything is unpacked.

Each archive here is a real .tar.gz; the checks run on the real files, and the "nothing
unpacked" claims are checked on a real destination folder.
"""

from __future__ import annotations

import bz2
import gzip
import json
import tarfile
from pathlib import Path

import pytest

from rollgym.bundles.archive import (
    BundleError,
    BundleLimits,
    _CountingGzip,
    _iter_members,
    check_archive,
    extract_archive,
    read_member,
)
from rollgym.bundles.format import open_bundle, pack_bundle
from tests.benchmarks.archives import MIB, bundle_members, member, raw_header, tar_gz, zero_bomb


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _refused(path: Path, needle: str, limits: BundleLimits | None = None) -> str:
    with pytest.raises(BundleError) as info:
        check_archive(path, limits or BundleLimits())
    assert needle in str(info.value), str(info.value)
    return str(info.value)


def test_a_genuine_archive_passes_and_unpacks(oracle_bundle: Path, tmp_path: Path) -> None:
    archive = pack_bundle(oracle_bundle, tmp_path / "b.tar.gz")
    names = [m.name for m in check_archive(archive)]
    assert names[:2] == ["manifest.json", "summary.json"] and all(n.startswith("transcripts/") for n in names[2:])
    out = tmp_path / "out"
    out.mkdir()
    extract_archive(archive, out)
    for name in names:
        assert (out / name).read_bytes() == (oracle_bundle / name).read_bytes() or name.endswith(".jsonl")
    assert json.loads(read_member(archive, "manifest.json") or b"{}")["kind"] == "rollgym-bundle"
    # GNU tar's "./" prefixes and folder entries are fine too
    gnu = tar_gz([member("./", kind=tarfile.DIRTYPE), member("./transcripts/", kind=tarfile.DIRTYPE),
                  *[(m[0].replace(name="./" + m[0].name), m[1]) for m in bundle_members(oracle_bundle)]],
                 fmt=tarfile.GNU_FORMAT)
    assert [m.name for m in check_archive(_write(tmp_path, "gnu.tar.gz", gnu)) if m.is_file] == names


def test_a_compression_bomb_is_refused_after_little_work(oracle_bundle: Path, tmp_path: Path) -> None:
    manifest = member("manifest.json", (oracle_bundle / "manifest.json").read_bytes())
    # the bomb: about 1 MB that unpacks to 980 MiB; refused on the member's declared size
    big = _write(tmp_path, "big.tar.gz", zero_bomb(980 * MIB, [manifest]))
    assert big.stat().st_size < 1.2 * MIB
    _refused(big, "unpacks to more than 512 MiB")
    # under the size cap but 1000:1: refused by the ratio once 16 MiB are unpacked, not after 400 MiB
    ratio = _write(tmp_path, "ratio.tar.gz", zero_bomb(400 * MIB, [manifest]))
    _refused(ratio, "expands more than 200 times")
    with open(ratio, "rb") as raw:
        stream = _CountingGzip(raw, BundleLimits())
        with pytest.raises(BundleError, match="expands"):
            for _member, padded in _iter_members(stream, BundleLimits()):
                stream.read_exact(padded, "data")
        assert stream.unpacked < 18 * MIB
    # many members
    many = tar_gz([manifest] + [member(f"transcripts/e{i}.jsonl", b"{}\n") for i in range(300)])
    _refused(_write(tmp_path, "many.tar.gz", many), "more than 256 members")
    # an oversized manifest
    fat = tar_gz([member("manifest.json", b" " * (9 * MIB))])
    _refused(_write(tmp_path, "fat.tar.gz", fat), "manifest.json in the bundle is larger than 8 MiB")
    # a pax header that declares 900 MiB is never read into memory
    pax = gzip.compress(raw_header("PaxHeader/x", b"x", 900 * MIB)) + gzip.compress(b"\0" * MIB, 9) * 4
    _refused(_write(tmp_path, "pax.tar.gz", pax), "pax extended header")
    # the limit object is honoured as given (a server's --max-unpacked-mb)
    small = pack_bundle(oracle_bundle, tmp_path / "small.tar.gz")
    _refused(small, "unpacks to more than 0 MiB", BundleLimits(max_unpacked_bytes=1000))
    _refused(small, "larger than 0 MiB", BundleLimits(max_archive_bytes=100))


@pytest.mark.parametrize(("name", "needle"), [
    ("../escape.json", "unsafe path"),
    ("/tmp/rollgym-absolute.json", "unsafe path"),
    ("transcripts/../../escape.jsonl", "unsafe path"),
    ("./../escape.json", "unsafe path"),
    ("transcripts\\..\\..\\escape.jsonl", "unsafe path"),
    ("C:/escape.json", "unsafe path"),
    ("transcripts//countdown.jsonl", "unsafe path"),
    ("evil.py", "not part of a bundle"),
    ("transcripts/sub/countdown.jsonl", "not part of a bundle"),
    ("transcripts/countdown.txt", "not part of a bundle"),
])
def test_traversal_and_foreign_paths_are_refused(oracle_bundle: Path, tmp_path: Path, name: str,
                                                 needle: str) -> None:
    archive = _write(tmp_path, "a.tar.gz", tar_gz([*bundle_members(oracle_bundle), member(name, b"{}\n")]))
    _refused(archive, needle)
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(BundleError):
        extract_archive(archive, dest)
    assert list(dest.iterdir()) == []  # the genuine members before it were not unpacked either
    assert not (tmp_path / "escape.json").exists() and not Path("/tmp/rollgym-absolute.json").exists()


@pytest.mark.parametrize(("kind", "needle"), [
    (tarfile.SYMTYPE, "symbolic link"),
    (tarfile.LNKTYPE, "hard link"),
    (tarfile.CHRTYPE, "character device"),
    (tarfile.BLKTYPE, "block device"),
    (tarfile.FIFOTYPE, "FIFO"),
    (tarfile.CONTTYPE, "contiguous file"),
])
def test_links_and_devices_are_refused(oracle_bundle: Path, tmp_path: Path, kind: bytes, needle: str) -> None:
    bad = member("transcripts/countdown.jsonl", kind=kind, linkname="/etc/shadow")
    members = [m for m in bundle_members(oracle_bundle) if m[0].name != "transcripts/countdown.jsonl"]
    archive = _write(tmp_path, "a.tar.gz", tar_gz([*members, bad], fmt=tarfile.GNU_FORMAT))
    _refused(archive, needle)
    with pytest.raises(BundleError, match=needle):
        open_bundle(archive)


def test_extension_headers_duplicates_and_broken_archives_are_refused(oracle_bundle: Path, tmp_path: Path) -> None:
    members = bundle_members(oracle_bundle)
    long_name = member("transcripts/" + "x" * 120 + ".jsonl", b"{}\n")
    _refused(_write(tmp_path, "gnu.tar.gz", tar_gz([*members, long_name], fmt=tarfile.GNU_FORMAT)), "GNU long-name")
    _refused(_write(tmp_path, "pax.tar.gz", tar_gz([*members, long_name], fmt=tarfile.PAX_FORMAT)), "pax extended")
    twice = tar_gz([*members, members[0]])
    _refused(_write(tmp_path, "twice.tar.gz", twice), "'manifest.json' twice")
    genuine = pack_bundle(oracle_bundle, tmp_path / "g.tar.gz").read_bytes()
    for cut in (10, len(genuine) // 2, len(genuine) - 9):
        _refused(_write(tmp_path, f"cut{cut}.tar.gz", genuine[:cut]), "corrupt or truncated")
    flipped = bytearray(genuine)
    flipped[len(flipped) // 2] ^= 0xFF
    _refused(_write(tmp_path, "flip.tar.gz", bytes(flipped)), "corrupt")
    bad_sum = bytearray(gzip.decompress(genuine))
    bad_sum[150] = ord("7") if bad_sum[150] != ord("7") else ord("6")
    _refused(_write(tmp_path, "sum.tar.gz", gzip.compress(bytes(bad_sum))), "bad checksum")
    plain = gzip.decompress(genuine)
    _refused(_write(tmp_path, "plain.tar", plain), "not gzip data")
    _refused(_write(tmp_path, "b.tar.bz2", bz2.compress(plain)), "not gzip data")
    _refused(_write(tmp_path, "empty.tar.gz", b""), "not gzip data")
    _refused(_write(tmp_path, "junk.tar.gz", b"\x1f\x8bnot really gzip"), "corrupt or truncated")
    no_manifest = tar_gz([m for m in members if m[0].name != "manifest.json"])
    _refused(_write(tmp_path, "nomanifest.tar.gz", no_manifest), "has no manifest.json")
    folder_with_data = gzip.compress(raw_header("transcripts/", b"5", 10) + b"x" * 512 + b"\0" * 1024)
    _refused(_write(tmp_path, "dirdata.tar.gz", folder_with_data), "folder entry with data")


def test_pack_writes_only_the_layout(oracle_bundle: Path, tmp_path: Path) -> None:
    import shutil

    folder = tmp_path / "b"
    shutil.copytree(oracle_bundle, folder)
    (folder / "notes.txt").write_text("private")
    (folder / "transcripts" / "scratch.txt").write_text("private")
    archive = pack_bundle(folder, tmp_path / "b.tar.gz")
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert "notes.txt" not in names and "transcripts/scratch.txt" not in names
    assert check_archive(archive)


def test_limits_are_validated() -> None:
    with pytest.raises(ValueError, match="max_members"):
        BundleLimits(max_members=0)
    with pytest.raises(ValueError, match="max_ratio"):
        BundleLimits(max_ratio=float("inf"))
