"""The results file: a JSONL stream of finished episodes that survives a crash.

Layout, one JSON object per line::

    {"kind": "header", "format": 1, "env_id": ..., "spec_hash": ..., "split": ..., "seed": ...,
     "group_size": ..., "agent": ..., "env_kwargs": {...}, "max_steps": ..., "rollgym_version": ...}
    {"kind": "episode", "task_index": 0, "task": {...}, "trajectory": {...}}
    ...

The header is written with a temporary file and a rename, so a results file
either has a complete header or does not exist. Each episode is appended as soon
as it finishes, with one ``write`` of a complete line, so a killed process keeps
every episode it finished and leaves at most one torn line at the end; readers
ignore it and a resuming writer cuts it off before appending. The file is
fsynced at most every ``sync_interval_s`` (1 s by default) and when the writer
closes, so a power failure loses at most the last second's episodes (they are
played again on resume) while the collector does not wait on the disk per
episode. The file holds however many tasks were run: a run resumed with a larger
``n_tasks`` appends the new tasks' episodes.

Lines are encoded with ``orjson`` when it is installed (``pip install
'rollgym[fast]'``), else with the standard library; both write the same JSON
values and both read every file.
"""

from __future__ import annotations

import contextlib
import gc
import json
import math
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rollgym.core.closing import Closeable
from rollgym.core.errors import ConfigError
from rollgym.core.io import write_bytes_atomic
from rollgym.core.task import Task
from rollgym.rollout.types import RolloutGroup, Trajectory, to_jsonable

FORMAT_VERSION = 1

_orjson: Any = None
_orjson_checked = False


def _fast_json() -> Any:
    """The ``orjson`` module when installed (imported on first use), else ``None``."""
    global _orjson, _orjson_checked
    if not _orjson_checked:
        try:
            import orjson

            _orjson = orjson
        except ImportError:  # optional: the standard library writes the same JSON values
            _orjson = None
        _orjson_checked = True
    return _orjson


def dumps_line(data: Any, *, finite: bool = False) -> bytes:
    """``data`` as one UTF-8 JSON line, newline included; raises ``ValueError`` on NaN or infinity.

    ``finite=True`` says the caller has checked that ``data`` holds no NaN or infinite float
    (``orjson`` would write them as ``null``), so the fast encoder may be used.
    """
    orjson = _fast_json()
    if finite and orjson is not None:
        try:
            return orjson.dumps(data, option=orjson.OPT_APPEND_NEWLINE)  # type: ignore[no-any-return]
        except TypeError:  # an integer beyond 64 bits, a non-string key: the standard library decides
            pass
    return (json.dumps(data, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def loads_line(line: bytes) -> Any:
    """Parse one JSON line (bytes); raises ``json.JSONDecodeError`` on a malformed one."""
    orjson = _fast_json()
    if orjson is not None:
        try:
            return orjson.loads(line)
        except orjson.JSONDecodeError:
            pass  # the standard library reads what orjson refuses (lone surrogates) or raises the same error
    return json.loads(line)


def task_dict(task: Task) -> dict[str, Any]:
    """A task's JSON-safe dict (what ``to_jsonable(task.to_dict())`` gives, without a deep copy first)."""
    return to_jsonable(  # type: ignore[no-any-return]
        {"id": task.id, "env_id": task.env_id, "prompt": task.prompt, "answer": task.answer, "meta": task.meta}
    )


def _finite(trajectory: Trajectory) -> bool:
    """Whether every float a trajectory stores outside its (already JSON-safe) info and metrics is finite."""
    # one sum: a NaN or infinity anywhere makes it non-finite (a finite overflow only costs the slow encoder)
    total = (sum(trajectory.logprobs) + sum(trajectory.step_rewards) + (trajectory.reward or 0.0)
             + sum(trajectory.reward_components.values()))
    for turn in trajectory.turns:
        total += sum(turn.output_logprobs) + (turn.reward or 0.0)
    return math.isfinite(total)

#: Header fields that must match for a run to resume into an existing file.
IDENTITY_FIELDS: tuple[str, ...] = (
    "env_id",
    "spec_hash",
    "split",
    "seed",
    "group_size",
    "agent",
    "env_kwargs",
    "max_steps",
    "reset_options",  # absent (None) unless the run had fixed reset options, e.g. one difficulty level
    "task_indices",  # absent (None) unless the run named its tasks by index (RunSpec.task_indices)
)


@dataclass
class EpisodeRecord:
    """One line of the results file: a finished rollout and the task it played."""

    task_index: int
    task: Task | None
    trajectory: Trajectory

    def to_line(self) -> bytes:
        """The record as one UTF-8 JSON line, newline included."""
        data = {
            "kind": "episode",
            "task_index": self.task_index,
            "task": None if self.task is None else task_dict(self.task),
            "trajectory": self.trajectory.to_dict(),
        }
        return dumps_line(data, finite=_finite(self.trajectory))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EpisodeRecord:
        """Build a record from a parsed episode line."""
        task, trajectory = data.get("task"), Trajectory.from_dict(data["trajectory"])
        return cls(int(data["task_index"]), None if task is None else Task.from_dict(task), trajectory)


@dataclass
class Results:
    """The contents of a results file: its header and every complete episode line."""

    header: dict[str, Any]
    episodes: list[EpisodeRecord] = field(default_factory=list)

    def groups(self, n_tasks: int | None = None) -> list[RolloutGroup]:
        """The episodes assembled into groups, ordered by task index then sample index.

        Args:
            n_tasks: Keep only tasks ``0 .. n_tasks-1``; all tasks when ``None``.
        """
        return assemble_groups(self.episodes, int(self.header.get("group_size", 1)), n_tasks)


def assemble_groups(episodes: list[EpisodeRecord], group_size: int, n_tasks: int | None = None) -> list[RolloutGroup]:
    """Group episode records by task index into :class:`RolloutGroup` objects."""
    by_task: dict[int, list[EpisodeRecord]] = {}
    for record in episodes:
        if n_tasks is None or record.task_index < n_tasks:
            by_task.setdefault(record.task_index, []).append(record)
    groups = []
    for index in sorted(by_task):
        records = sorted(by_task[index], key=lambda r: r.trajectory.sample_idx)
        task = next((r.task for r in records if r.task is not None), None)
        trajectories = [r.trajectory for r in records]
        groups.append(RolloutGroup(trajectories[0].group_id, task, group_size, trajectories))
    return groups


def _parse_lines(raw: bytes, path: Path, intact: list[int]) -> Iterator[dict[str, Any]]:
    """Parse complete lines one by one; leave the byte length of the intact prefix in ``intact[0]``."""
    position = 0
    number = 0
    intact[0] = 0
    while position < len(raw):
        end = raw.find(b"\n", position)
        if end == -1:  # a torn last line from an interrupted write
            break
        number += 1
        chunk = raw[position:end]
        if chunk.strip():
            try:
                data = loads_line(chunk)
            except (json.JSONDecodeError, UnicodeDecodeError):
                if end + 1 >= len(raw):  # a complete but garbled last line: treat as torn
                    break
                raise ConfigError(
                    f"{path} line {number} is not valid JSON; the file is corrupt, so start a new results file."
                ) from None
            position = end + 1
            intact[0] = position
            yield data
        else:
            position = end + 1
            intact[0] = position


@contextlib.contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: a bulk load makes no cycles, and the collector would scan
    everything loaded so far again and again (three quarters of the load time, measured)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def read_results(path: str | os.PathLike[str]) -> tuple[Results, int]:
    """Read a results file; return its contents and the byte length of its intact prefix.

    Lines are parsed and turned into records one at a time, so a large file never holds
    its parsed JSON all at once.

    Raises:
        ConfigError: when the file has no header or a corrupt line before the last.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"Results file {path} does not exist; check the path.") from None
    intact = [0]
    lines = _parse_lines(raw, path, intact)
    header = next(lines, None)
    if header is None or header.get("kind") != "header":
        raise ConfigError(f"{path} is not a rollgym results file (its first line is not a header).")
    if header.get("format") != FORMAT_VERSION:
        raise ConfigError(
            f"{path} has results format {header.get('format')!r}; this rollgym reads format {FORMAT_VERSION}."
        )
    seen: dict[str, int] = {}
    episodes: list[EpisodeRecord] = []
    with _cyclic_gc_paused():
        for data in lines:
            if data.get("kind") != "episode":
                continue
            record = EpisodeRecord.from_json(data)
            first = seen.get(record.trajectory.traj_id)
            if first is None:  # keep the first copy of a repeated episode ...
                seen[record.trajectory.traj_id] = len(episodes)
                episodes.append(record)
            elif episodes[first].trajectory.info.get("failure", {}).get("retry_on_resume"):
                episodes[first] = record  # ... unless it failed for want of its env server and was played again
    return Results(header, episodes), intact[0]


def load_results(path: str | os.PathLike[str]) -> Results:
    """Load a results file written by :func:`~rollgym.rollout.collect`, ignoring a torn last line.

    Example:
        >>> results = load_results("results.jsonl")  # doctest: +SKIP
        >>> groups = results.groups()
    """
    return read_results(path)[0]


def _header_line(header: dict[str, Any]) -> bytes:
    return (json.dumps(to_jsonable(header), ensure_ascii=False) + "\n").encode("utf-8")


def _describe_mismatch(old: dict[str, Any], new: dict[str, Any]) -> str:
    diffs = [
        f"{name} {old.get(name)!r} vs {new.get(name)!r}"
        for name in IDENTITY_FIELDS
        if old.get(name) != new.get(name) and not (name == "spec_hash" and _re_pinned(old, new))
    ]
    return "; ".join(diffs)


def _re_pinned(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether the file's spec hash is one the same id had before a re-pin (same tasks and scores by rule)."""
    from rollgym.core.registration import earlier_hashes

    return old.get("env_id") == new.get("env_id") and old.get("spec_hash") in earlier_hashes(str(new.get("env_id")))


def _lock(fd: int, path: Path) -> None:
    """Take an exclusive lock on the open file, so two runs never interleave episodes in one file."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX; resume still works, without the guard
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise ConfigError(f"Another run is writing to {path}; wait for it to finish or choose another file.") from None


class ResultsWriter(Closeable):
    """Appends episode records to a results file, creating or resuming it.

    Example:
        >>> writer, done = ResultsWriter.open("run.jsonl", header)  # doctest: +SKIP
        >>> writer.append(record)  # doctest: +SKIP
        >>> writer.close()  # doctest: +SKIP
    """

    def __init__(self, path: Path, *, sync_interval_s: float = 1.0) -> None:
        self.path = path
        self.sync_interval_s = sync_interval_s
        self._fd: int | None = os.open(path, os.O_RDWR | os.O_APPEND)
        self._synced = time.monotonic()
        self._dirty = False
        _lock(self._fd, path)

    @classmethod
    def open(cls, path: str | os.PathLike[str], header: dict[str, Any], *,
             sync_interval_s: float = 1.0) -> tuple[ResultsWriter, list[EpisodeRecord]]:
        """Create ``path`` with ``header``, or resume it; return the writer and the episodes already there.

        The file is locked while the writer is open, so two runs never interleave in one file.
        ``sync_interval_s`` is the longest time between fsyncs (0: fsync after every episode).

        A file recorded under an env's spec hash from before a re-pin (``rollgym/core/spec_lineage.json``)
        resumes, and keeps its header: the file's episodes all count as played on that hash.

        Raises:
            ConfigError: when the file was written by a run with different arguments, or another
                run is writing to it.
        """
        path = Path(path)
        header = to_jsonable({"kind": "header", "format": FORMAT_VERSION, **header})
        if not path.exists() or path.stat().st_size == 0:
            write_bytes_atomic(path, _header_line(header))
            return cls(path, sync_interval_s=sync_interval_s), []
        writer = cls(path, sync_interval_s=sync_interval_s)
        try:
            results, intact = read_results(path)
            mismatch = _describe_mismatch(results.header, header)
            if mismatch:
                raise ConfigError(
                    f"{path} holds a different run ({mismatch}); rerun with the same arguments to resume, "
                    "or choose another output file."
                )
            assert writer._fd is not None
            if os.fstat(writer._fd).st_size > intact:  # cut a torn last line before appending
                os.ftruncate(writer._fd, intact)
                os.fsync(writer._fd)
        except BaseException:
            writer.close()
            raise
        return writer, results.episodes

    def append(self, record: EpisodeRecord) -> None:
        """Append one episode as a single complete line (in the OS's hands at once; on disk within the interval)."""
        self.append_line(record.to_line())

    def append_line(self, line: bytes) -> None:
        """Append one complete, newline-terminated results line (e.g. from a remote worker)."""
        if self._fd is None:
            raise RuntimeError("This results writer is closed.")
        written = os.write(self._fd, line)
        if written != len(line):  # os.write may be partial on odd filesystems; finish the line
            view = memoryview(line)[written:]
            while view:
                view = view[os.write(self._fd, view) :]
        self._dirty = True
        if time.monotonic() - self._synced >= self.sync_interval_s:
            self.sync()

    def sync(self) -> None:
        """Flush every appended line to disk now."""
        if self._fd is not None and self._dirty:
            os.fsync(self._fd)
            self._dirty = False
        self._synced = time.monotonic()

    def close(self) -> None:
        """Flush to disk and close the file; further appends raise."""
        if self._fd is not None:
            try:
                self.sync()
            finally:
                os.close(self._fd)
                self._fd = None
