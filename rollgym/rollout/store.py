"""The results file: a JSONL stream of finished episodes that survives a crash.

Layout, one JSON object per line::

    {"kind": "header", "format": 1, "env_id": ..., "spec_hash": ..., "split": ..., "seed": ...,
     "group_size": ..., "agent": ..., "env_kwargs": {...}, "max_steps": ..., "rollgym_version": ...}
    {"kind": "episode", "task_index": 0, "task": {...}, "trajectory": {...}}
    ...

The header is written with a temporary file and a rename, so a results file
either has a complete header or does not exist. Each episode is appended with
one ``write`` of a complete line, then flushed and fsynced, so a crash leaves
at most one torn line at the end; readers ignore it and a resuming writer cuts
it off before appending. The file holds however many tasks were run: a run
resumed with a larger ``n_tasks`` appends the new tasks' episodes.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rollgym.core.errors import ConfigError
from rollgym.core.io import write_bytes_atomic
from rollgym.core.task import Task
from rollgym.rollout.types import RolloutGroup, Trajectory, to_jsonable

FORMAT_VERSION = 1

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
            "task": None if self.task is None else to_jsonable(self.task.to_dict()),
            "trajectory": self.trajectory.to_dict(),
        }
        return (json.dumps(data, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EpisodeRecord:
        """Build a record from a parsed episode line."""
        task = data.get("task")
        return cls(
            task_index=int(data["task_index"]),
            task=None if task is None else Task.from_dict(task),
            trajectory=Trajectory.from_dict(data["trajectory"]),
        )


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


def _split_lines(raw: bytes, path: Path) -> tuple[list[dict[str, Any]], int]:
    """Parse complete lines; return them and the byte length of the intact prefix."""
    lines: list[dict[str, Any]] = []
    position = 0
    number = 0
    while position < len(raw):
        end = raw.find(b"\n", position)
        if end == -1:  # a torn last line from an interrupted write
            break
        number += 1
        chunk = raw[position:end]
        if chunk.strip():
            try:
                lines.append(json.loads(chunk))
            except json.JSONDecodeError:
                if end + 1 >= len(raw):  # a complete but garbled last line: treat as torn
                    break
                raise ConfigError(
                    f"{path} line {number} is not valid JSON; the file is corrupt, so start a new results file."
                ) from None
        position = end + 1
    return lines, position


def read_results(path: str | os.PathLike[str]) -> tuple[Results, int]:
    """Read a results file; return its contents and the byte length of its intact prefix.

    Raises:
        ConfigError: when the file has no header or a corrupt line before the last.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"Results file {path} does not exist; check the path.") from None
    lines, intact = _split_lines(raw, path)
    if not lines or lines[0].get("kind") != "header":
        raise ConfigError(f"{path} is not a rollgym results file (its first line is not a header).")
    header = lines[0]
    if header.get("format") != FORMAT_VERSION:
        raise ConfigError(
            f"{path} has results format {header.get('format')!r}; this rollgym reads format {FORMAT_VERSION}."
        )
    seen: dict[str, int] = {}
    episodes: list[EpisodeRecord] = []
    for data in lines[1:]:
        if data.get("kind") != "episode":
            continue
        record = EpisodeRecord.from_json(data)
        first = seen.get(record.trajectory.traj_id)
        if first is None:  # keep the first copy of a repeated episode ...
            seen[record.trajectory.traj_id] = len(episodes)
            episodes.append(record)
        elif episodes[first].trajectory.info.get("failure", {}).get("retry_on_resume"):
            episodes[first] = record  # ... unless it failed for want of its env server and was played again
    return Results(header, episodes), intact


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
        f"{name} {old.get(name)!r} vs {new.get(name)!r}" for name in IDENTITY_FIELDS if old.get(name) != new.get(name)
    ]
    return "; ".join(diffs)


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


class ResultsWriter:
    """Appends episode records to a results file, creating or resuming it.

    Example:
        >>> writer, done = ResultsWriter.open("run.jsonl", header)  # doctest: +SKIP
        >>> writer.append(record)  # doctest: +SKIP
        >>> writer.close()  # doctest: +SKIP
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = os.open(path, os.O_RDWR | os.O_APPEND)
        _lock(self._fd, path)

    @classmethod
    def open(cls, path: str | os.PathLike[str], header: dict[str, Any]) -> tuple[ResultsWriter, list[EpisodeRecord]]:
        """Create ``path`` with ``header``, or resume it; return the writer and the episodes already there.

        The file is locked while the writer is open, so two runs never interleave in one file.

        Raises:
            ConfigError: when the file was written by a run with different arguments, or another
                run is writing to it.
        """
        path = Path(path)
        header = to_jsonable({"kind": "header", "format": FORMAT_VERSION, **header})
        if not path.exists() or path.stat().st_size == 0:
            write_bytes_atomic(path, _header_line(header))
            return cls(path), []
        writer = cls(path)
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
        """Append one episode as a single complete line, flushed to disk."""
        if self._fd is None:
            raise RuntimeError("This results writer is closed.")
        line = record.to_line()
        written = os.write(self._fd, line)
        if written != len(line):  # os.write may be partial on odd filesystems; finish the line
            view = memoryview(line)[written:]
            while view:
                view = view[os.write(self._fd, view) :]
        os.fsync(self._fd)

    def close(self) -> None:
        """Close the file; further appends raise."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
