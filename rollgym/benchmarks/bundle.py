"""The results bundle: a folder (or a ``.tar.gz`` of it) with transcripts, a manifest and a summary.

Layout::

    manifest.json            rollgym version, suite label and task hash, seeds, agent and model,
                             sampling settings, env spec hashes, machine, skipped entries
    summary.json             per-entry metrics, per-ladder ratings, the headline score
    transcripts/<entry>.jsonl  the results files of :func:`~rollgym.rollout.collect`: every prompt,
                             response and score (one line per episode)

:func:`pack_bundle` writes the archive; :func:`open_bundle` reads a folder or an
archive, refusing links, absolute paths, ``..`` and oversized members, so an
uploaded archive cannot write outside its folder.
"""

from __future__ import annotations

import io
import json
import math
import os
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rollgym.core.errors import ConfigError

BUNDLE_FORMAT = 1
MANIFEST = "manifest.json"
SUMMARY = "summary.json"
TRANSCRIPTS = "transcripts"
#: Largest unpacked bundle :func:`open_bundle` accepts by default.
MAX_UNPACKED_BYTES = 512 * 1024 * 1024


class BundleError(ConfigError):
    """A bundle that cannot be read: missing files, bad JSON, unsafe archive members."""


def clean_json(value: Any) -> Any:
    """``value`` with NaN and infinities replaced by ``None`` and tuples by lists, for strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): clean_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_json(v) for v in value]
    return value


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as indented strict JSON, atomically (temporary file, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(clean_json(data), handle, indent=2, sort_keys=True, allow_nan=False)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_json(path: Path) -> Any:
    """Read a JSON file, with a clear :class:`BundleError` when it is missing or invalid."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BundleError(f"The bundle has no {path.name}; it is incomplete (rerun `rollgym bench run`).") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BundleError(f"{path.name} in the bundle is not valid JSON ({exc}).") from None


@dataclass
class Bundle:
    """A bundle on disk: its folder, manifest and claimed summary."""

    root: Path
    manifest: dict[str, Any]
    summary: dict[str, Any] | None
    _cleanup: tempfile.TemporaryDirectory[str] | None = field(default=None, repr=False)

    def transcript(self, entry_name: str) -> Path:
        """The results file of one entry."""
        return self.root / TRANSCRIPTS / f"{entry_name}.jsonl"

    def close(self) -> None:
        """Remove the temporary folder of an unpacked archive."""
        if self._cleanup is not None:
            self._cleanup.cleanup()
            self._cleanup = None

    def __enter__(self) -> Bundle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def pack_bundle(folder: str | os.PathLike[str], archive: str | os.PathLike[str] | None = None) -> Path:
    """Pack a bundle folder into ``<folder>.tar.gz`` (or ``archive``) and return its path.

    Members are added in sorted order with fixed owners and times, so the same folder
    packs to the same bytes.
    """
    root = Path(folder)
    if not (root / MANIFEST).is_file():
        raise BundleError(f"{root} is not a bundle folder (no {MANIFEST}).")
    target = Path(archive) if archive is not None else root.with_name(root.name + ".tar.gz")
    files = sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))
    buffer = io.BytesIO()
    import gzip

    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        for path in files:
            data = path.read_bytes()
            member = tarfile.TarInfo(name=str(path.relative_to(root)))
            member.size = len(data)
            member.mode = 0o644
            tar.addfile(member, io.BytesIO(data))
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_bytes(buffer.getvalue())
    os.replace(tmp, target)
    return target


def _safe_extract(archive: Path, dest: Path, max_bytes: int) -> None:
    try:
        tar = tarfile.open(archive, mode="r:*")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise BundleError(f"{archive.name} is not a readable .tar.gz bundle ({exc}).") from None
    total = 0
    with tar:
        try:
            members = tar.getmembers()
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise BundleError(f"{archive.name} is a corrupt archive ({exc}).") from None
        for member in members:
            name = member.name
            parts = Path(name).parts
            if name.startswith(("/", "\\")) or ".." in parts or not parts:
                raise BundleError(f"The bundle archive has an unsafe path {name!r}; pack it with `rollgym bench pack`.")
            if member.isdir():
                continue
            if not member.isfile():
                raise BundleError(f"The bundle archive holds a link or device {name!r}; only plain files are allowed.")
            total += member.size
            if total > max_bytes:
                raise BundleError(f"The bundle unpacks to more than {max_bytes // 2**20} MiB; it is too large.")
            target = dest.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            if source is None:
                raise BundleError(f"Cannot read {name!r} from the bundle archive.")
            with source, open(target, "wb") as out:
                out.write(source.read())


def open_bundle(path: str | os.PathLike[str], max_bytes: int = MAX_UNPACKED_BYTES) -> Bundle:
    """Open a bundle folder or ``.tar.gz``; close the result (or use ``with``) to remove its temp folder.

    Raises:
        BundleError: for a missing path, an unsafe or corrupt archive, or a missing/invalid manifest.
    """
    source = Path(path)
    cleanup: tempfile.TemporaryDirectory[str] | None = None
    if source.is_dir():
        root = source
    elif source.is_file():
        cleanup = tempfile.TemporaryDirectory(prefix="rollgym-bundle-")
        root = Path(cleanup.name)
        try:
            _safe_extract(source, root, max_bytes)
        except BaseException:
            cleanup.cleanup()
            raise
    else:
        raise BundleError(f"Bundle {source} does not exist; pass the folder or .tar.gz that `rollgym bench run` wrote.")
    try:
        manifest = read_json(root / MANIFEST)
        if not isinstance(manifest, dict) or manifest.get("kind") != "rollgym-bundle":
            raise BundleError(f"{MANIFEST} is not a rollgym bundle manifest.")
        if manifest.get("format") != BUNDLE_FORMAT:
            raise BundleError(
                f"Bundle format {manifest.get('format')!r} is not {BUNDLE_FORMAT}; use a matching rollgym."
            )
        summary_path = root / SUMMARY
        summary = read_json(summary_path) if summary_path.exists() else None
    except BaseException:
        if cleanup is not None:
            cleanup.cleanup()
        raise
    return Bundle(root, manifest, summary, cleanup)
