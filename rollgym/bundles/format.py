"""The results bundle: a folder (or a ``.tar.gz`` of it) with one results file per entry, a manifest and a summary.

Layout::

    manifest.json            rollgym version, suite label and task hash, seeds, agent and model,
                             sampling settings, env spec hashes, machine, skipped entries
    summary.json             per-entry metrics, per-ladder ratings, the headline score
    transcripts/<entry>.jsonl  each entry's results file, as :func:`~rollgym.rollout.collect` writes it: every
                             prompt, response and score (one line per episode)

"Results file" is the one name for these JSON-lines files, in the rollout collector and in a bundle alike
(the folder keeps its name, ``transcripts/``, so that bundles of format 1 still read; ``transcript`` survives
only as deprecated aliases: :meth:`Bundle.transcript`, :func:`strip_transcript_answers`).

Results files omit every task's hidden answer (``Task.answer``): a bundle is meant to
be published, and a published bundle must not hand out a suite's answers.
Verification does not need them: it regenerates each task from the suite and
compares the rest. (No hash of the answer is kept either: the answers of many
tasks, a number or a 4x4 grid, are few enough to invert any unkeyed hash.)

:func:`pack_bundle` writes the archive (the bundle layout only, answers removed);
:func:`open_bundle` reads a folder or an archive. An archive is streamed and
checked member by member before anything is unpacked
(:mod:`rollgym.bundles.archive`), and the manifest is checked field by field
(:func:`check_manifest`), so an uploaded bundle cannot write outside its folder,
exhaust memory or disk, or crash the reader with a wrong type.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import os
import tarfile
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rollgym.bundles.archive import (
    DEFAULT_LIMITS,
    MANIFEST,
    SUMMARY,
    TRANSCRIPT_PATH,
    TRANSCRIPTS,
    BundleError,
    BundleLimits,
    extract_archive,
)
from rollgym.core.closing import Closeable
from rollgym.core.deprecation import REMOVED_IN, renamed
from rollgym.core.io import write_bytes_atomic

__all__ = [
    "BUNDLE_FORMAT",
    "DEFAULT_LIMITS",
    "MANIFEST",
    "SUMMARY",
    "TRANSCRIPTS",
    "Bundle",
    "BundleError",
    "BundleLimits",
    "check_manifest",
    "clean_json",
    "open_bundle",
    "pack_bundle",
    "public_task",
    "read_json",
    "strip_results_file",
    "strip_transcript_answers",
    "write_json",
]

BUNDLE_FORMAT = 1
#: Longest self-reported label (agent label, model name) a manifest may carry.
MAX_LABEL_CHARS = 200


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
    text = json.dumps(clean_json(data), indent=2, sort_keys=True, allow_nan=False) + "\n"
    write_bytes_atomic(path, text.encode("utf-8"))


def read_json(path: Path, max_bytes: int | None = None) -> Any:
    """Read a JSON file, with a clear :class:`BundleError` when it is missing, too large or invalid."""
    try:
        if max_bytes is not None and path.stat().st_size > max_bytes:
            raise BundleError(f"{path.name} in the bundle is larger than {max_bytes // 2**20} MiB.")
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BundleError(f"The bundle has no {path.name}; it is incomplete (rerun `rollgym bench run`).") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BundleError(f"{path.name} in the bundle is not valid JSON ({exc}).") from None
    except RecursionError:
        raise BundleError(f"{path.name} in the bundle is nested too deeply to be a bundle file.") from None


# -- hidden answers -------------------------------------------------------------------------


def public_task(task: dict[str, Any]) -> dict[str, Any]:
    """A task dict as a bundle shows it: everything but the hidden ``answer``.

    Example:
        >>> public_task({"id": "t", "env_id": "E-v0", "prompt": "2+2?", "answer": "4", "meta": {}})
        {'id': 't', 'env_id': 'E-v0', 'prompt': '2+2?', 'meta': {}}
    """
    return {k: v for k, v in task.items() if k != "answer"}


def _strip_line(line: bytes) -> bytes:
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return line  # a torn or corrupt line stays as it is; verification reports it
    task = data.get("task") if isinstance(data, dict) else None
    if not isinstance(task, dict) or "answer" not in task:
        return line
    data["task"] = public_task(task)
    return (json.dumps(data, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def strip_answers(results: bytes | None = None, *, transcript: bytes | None = None) -> bytes:
    """A results file's bytes with the hidden answer removed from every episode's task.

    ``transcript=`` is the old name of ``results`` (deprecated).

    Example:
        >>> strip_answers(b'{"task": {"id": "t", "answer": "4"}}\\n')
        b'{"task": {"id": "t"}}\\n'
    """
    if transcript is not None:
        renamed("strip_answers", "transcript", "results")
        results = transcript
    if results is None:
        raise TypeError("strip_answers() needs the results file's bytes.")
    return b"".join(_strip_line(line) for line in results.splitlines(keepends=True))


def strip_results_file(path: str | os.PathLike[str]) -> None:
    """Remove the hidden answers from a results file in place (atomically; a no-op when none are left)."""
    target = Path(path)
    data = target.read_bytes()
    stripped = strip_answers(data)
    if stripped != data:
        write_bytes_atomic(target, stripped)


def strip_transcript_answers(path: str | os.PathLike[str]) -> None:
    """Deprecated name of :func:`strip_results_file` (it goes in rollgym 0.3.0)."""
    _warn_renamed("strip_transcript_answers", "strip_results_file")
    strip_results_file(path)


def _warn_renamed(old: str, new: str) -> None:
    warnings.warn(f"rollgym.bundles.format.{old} is now {new} (the old name goes in rollgym {REMOVED_IN}).",
                  DeprecationWarning, stacklevel=3)


# -- the manifest ---------------------------------------------------------------------------


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_int(value: Any, low: int = 0) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def _label(value: Any) -> bool:
    return value is None or (
        isinstance(value, str) and 0 < len(value) <= MAX_LABEL_CHARS and value.isprintable()
    )


def check_manifest(manifest: Any) -> dict[str, Any]:
    """Check the fields of a manifest that anything reads; return it, or raise :class:`BundleError`.

    Only types and bounds are checked here; whether the values are *true* is what
    :func:`~rollgym.leaderboard.verify.verify_bundle` decides.
    """

    def bad(field_name: str, expected: str, value: Any) -> BundleError:
        return BundleError(f"{MANIFEST}: {field_name} must be {expected}, got {_short(value)}.")

    if not isinstance(manifest, dict) or manifest.get("kind") != "rollgym-bundle":
        raise BundleError(f"{MANIFEST} is not a rollgym bundle manifest.")
    if manifest.get("format") != BUNDLE_FORMAT:
        raise BundleError(f"Bundle format {_short(manifest.get('format'))} is not {BUNDLE_FORMAT}; use a matching "
                          "rollgym.")
    suite = manifest.get("suite")
    if not isinstance(suite, dict):
        raise bad("suite", "an object with name, version and label", suite)
    if not isinstance(suite.get("name"), str) or not 0 < len(suite["name"]) <= 64:
        raise bad("suite.name", "the name of a built-in suite", suite.get("name"))
    if not _is_int(suite.get("version"), 1):
        raise bad("suite.version", "an integer >= 1", suite.get("version"))
    for key in ("label", "task_hash"):
        if suite.get(key) is not None and (not isinstance(suite[key], str) or len(suite[key]) > 100):
            raise bad(f"suite.{key}", "a short string", suite[key])
    for key, low in (("seed", 0), ("limit", 1)):
        if manifest.get(key) is not None and not _is_int(manifest[key], low):
            raise bad(key, f"null or an integer >= {low}", manifest[key])
    only = manifest.get("only")
    if only is not None and (not isinstance(only, list) or not all(isinstance(n, str) for n in only)):
        raise bad("only", "null or a list of entry names", only)
    if not isinstance(manifest.get("complete", False), bool):
        raise bad("complete", "true or false", manifest.get("complete"))
    entries = manifest.get("entries")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise bad("entries", "a list of objects", entries)
    agent = manifest.get("agent")
    if not isinstance(agent, dict):
        raise bad("agent", "an object", agent)
    if agent.get("kind") not in ("reference", "model"):
        raise bad("agent.kind", "'reference' or 'model'", agent.get("kind"))
    for key in ("label", "agent", "model"):
        if not _label(agent.get(key)):
            raise bad(f"agent.{key}", f"null or 1 to {MAX_LABEL_CHARS} printable characters", agent.get(key))
    size = agent.get("model_size_b")
    if size is not None and (
        isinstance(size, bool) or not isinstance(size, (int, float)) or not 0 < size < 1e6
    ):
        raise bad("agent.model_size_b", "null or a number of billions of parameters (0 to 1e6)", size)
    for key in ("skipped",):
        if manifest.get(key) is not None and not isinstance(manifest[key], list):
            raise bad(key, "a list", manifest[key])
    for key in ("machine",):
        if manifest.get(key) is not None and not isinstance(manifest[key], dict):
            raise bad(key, "an object", manifest[key])
    return manifest


# -- bundles --------------------------------------------------------------------------------


@dataclass
class Bundle(Closeable):
    """A bundle on disk: its folder, manifest and claimed summary."""

    root: Path
    manifest: dict[str, Any]
    summary: dict[str, Any] | None
    _cleanup: tempfile.TemporaryDirectory[str] | None = field(default=None, repr=False)

    def results_file(self, entry_name: str) -> Path:
        """The results file of one entry (``transcripts/<entry>.jsonl``)."""
        return self.root / TRANSCRIPTS / f"{entry_name}.jsonl"

    def transcript(self, entry_name: str) -> Path:
        """Deprecated name of :meth:`results_file` (it goes in rollgym 0.3.0)."""
        _warn_renamed("Bundle.transcript", "results_file")
        return self.results_file(entry_name)

    def close(self) -> None:
        """Remove the temporary folder of an unpacked archive."""
        if self._cleanup is not None:
            self._cleanup.cleanup()
            self._cleanup = None


def _layout_files(root: Path) -> list[Path]:
    """The files of a bundle folder that belong in its archive, sorted."""
    files = [root / MANIFEST] + [root / SUMMARY] * (root / SUMMARY).is_file()
    folder = root / TRANSCRIPTS
    if folder.is_dir():
        files += [p for p in folder.iterdir() if p.is_file() and TRANSCRIPT_PATH.match(f"{TRANSCRIPTS}/{p.name}")]
    return sorted(files)


def pack_bundle(folder: str | os.PathLike[str], archive: str | os.PathLike[str] | None = None) -> Path:
    """Pack a bundle folder into ``<folder>.tar.gz`` (or ``archive``) and return its path.

    Only the bundle layout is packed (``manifest.json``, ``summary.json``,
    ``transcripts/*.jsonl``), with every task's hidden answer removed from the
    results files. Members are added in sorted order with fixed owners and times, so
    the same folder packs to the same bytes.
    """
    root = Path(folder)
    if not (root / MANIFEST).is_file():
        raise BundleError(f"{root} is not a bundle folder (no {MANIFEST}).")
    target = Path(archive) if archive is not None else root.with_name(root.name + ".tar.gz")
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        for path in _layout_files(root):
            data = path.read_bytes()
            if path.suffix == ".jsonl":
                data = strip_answers(data)
            member = tarfile.TarInfo(name=path.relative_to(root).as_posix())
            member.size = len(data)
            member.mode = 0o644
            tar.addfile(member, io.BytesIO(data))
    write_bytes_atomic(target, buffer.getvalue())
    return target


def open_bundle(path: str | os.PathLike[str], limits: BundleLimits = DEFAULT_LIMITS) -> Bundle:
    """Open a bundle folder or ``.tar.gz``; close the result (or use ``with``) to remove its temp folder.

    An archive is checked in full against ``limits`` before anything is unpacked.

    Raises:
        BundleError: for a missing path, an unsafe, oversized or corrupt archive, or a missing or
            invalid manifest.
    """
    source = Path(path)
    cleanup: tempfile.TemporaryDirectory[str] | None = None
    if source.is_dir():
        root = source
    elif source.is_file():
        cleanup = tempfile.TemporaryDirectory(prefix="rollgym-bundle-")
        root = Path(cleanup.name)
        try:
            extract_archive(source, root, limits)
        except BaseException:
            cleanup.cleanup()
            raise
    else:
        raise BundleError(f"Bundle {source} does not exist; pass the folder or .tar.gz that `rollgym bench run` wrote.")
    try:
        manifest = check_manifest(read_json(root / MANIFEST, limits.max_json_bytes))
        summary_path = root / SUMMARY
        summary = read_json(summary_path, limits.max_json_bytes) if summary_path.exists() else None
        if summary is not None and not isinstance(summary, dict):
            raise BundleError(f"{SUMMARY} in the bundle is not a JSON object.")
    except BaseException:
        if cleanup is not None:
            cleanup.cleanup()
        raise
    return Bundle(root, manifest, summary, cleanup)
