"""Loading MATH-style evaluation sets: an explicit path, ``ROLLGYM_DATA_DIR``, or the Hugging Face hub.

rollgym ships no copy of MATH500, AIME24 or AMC23. :func:`load_rows` looks, in
this order, at

1. an explicit ``path`` (a JSONL file, one JSON object per line),
2. ``$ROLLGYM_DATA_DIR/<file name>`` (``math500.jsonl``, ``aime24.jsonl``, ``amc23.jsonl``),
3. the Hugging Face hub through ``datasets`` (``pip install 'rollgym[math]'``),
   only when ``ROLLGYM_DATA_DIR`` is unset, ``hub=True``, ``HF_HUB_OFFLINE`` is
   not set and the hub answers a 2-second connection probe,

and raises one :class:`~rollgym.core.errors.DataNotFoundError` (one sentence:
what is missing and how to fix it) when none works. Setting ``ROLLGYM_DATA_DIR``
means "the data is here": a missing file is reported at once, with no download
attempt and no retries. Rows are loaded once per process and cached, so env
instances are cheap.

Splits: these are test sets. Every row is in the ``"test"`` split; asking for
``"train"`` or ``"validation"`` raises :class:`~rollgym.core.errors.ConfigError`
(an evaluation set must not leak into training by accident).

Task ids are stable: ``<dataset>/<row id>`` from the row's ``unique_id`` or
``id`` field (``math500/test/precalculus/807.json``, ``aime24/60``), or, for a
user's file without an id field, a digest of the problem text.
"""

from __future__ import annotations

import os
import socket
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from rollgym.core.errors import ConfigError, DataNotFoundError
from rollgym.core.evalset import ONLY_SPLIT, EvaluationSet, jsonl_rows
from rollgym.core.seeding import content_digest
from rollgym.core.task import Task
from rollgym.envs.math.evidence import problem_numbers
from rollgym.envs.math.prompts import format_prompt
from rollgym.envs.math.templates import FreshInstance, parse_template

DATA_DIR_ENV = "ROLLGYM_DATA_DIR"


@dataclass(frozen=True)
class DatasetSpec:
    """Where a MATH-style set lives and how its rows map to tasks.

    Attributes:
        name: Short name used in task ids, e.g. ``"math500"``.
        filename: File name looked up in ``ROLLGYM_DATA_DIR``.
        hub_id: Hugging Face dataset id, or ``None`` when there is no hub copy.
        hub_split: Split of the hub dataset to read.
        hub_config: Configuration name of the hub dataset, if it has several.
        problem_field: Field holding the problem statement.
        answer_field: Field holding the gold final answer.
        id_fields: Fields tried, in order, for a stable row id.
        meta_fields: Fields copied into ``Task.meta`` when present (difficulty, subject).
        template_field: The field of a generated row's template and fresh instances (never shown to the
            agent; see :mod:`rollgym.envs.math.templates`).
    """

    name: str
    filename: str | None = None
    hub_id: str | None = None
    hub_split: str = "test"
    hub_config: str | None = None
    problem_field: str = "problem"
    answer_field: str = "answer"
    id_fields: tuple[str, ...] = ("unique_id", "id")
    meta_fields: tuple[str, ...] = ("subject", "level")
    template_field: str = "template"
    env_id: str = field(default="MATH-v1", compare=False)


MATH500 = DatasetSpec("math500", "math500.jsonl", "HuggingFaceH4/MATH-500", env_id="MATH500-v1")
# The hub copy keeps all 30 rows in a split it calls "train"; rollgym still calls them "test".
AIME24 = DatasetSpec("aime24", "aime24.jsonl", "HuggingFaceH4/aime_2024", hub_split="train", env_id="AIME24-v1")
AMC23 = DatasetSpec("amc23", "amc23.jsonl", "math-ai/amc23", env_id="AMC23-v1")
BUILTIN: dict[str, DatasetSpec] = {s.name: s for s in (MATH500, AIME24, AMC23)}

_CACHE: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
_CACHE_LOCK = threading.Lock()


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [row for _, row in jsonl_rows(path)]


HUB_PROBE_TIMEOUT_S = 2.0


def _hub_unreachable() -> str | None:
    """Why the hub cannot be reached (offline, no DNS, no route), or ``None``; at most ~2 s.

    ``datasets`` retries a dead network for ~25 s and logs every retry, so
    rollgym asks first with one short TCP connection.
    """
    endpoint = urlsplit(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    host = endpoint.hostname or "huggingface.co"
    try:
        port = endpoint.port or (80 if endpoint.scheme == "http" else 443)
    except ValueError:
        return f"HF_ENDPOINT={endpoint.geturl()} has no valid port"
    result: list[str | None] = []

    def probe() -> None:
        try:
            socket.create_connection((host, port), timeout=HUB_PROBE_TIMEOUT_S).close()
            result.append(None)
        except OSError as exc:
            result.append(f"{host} is unreachable ({exc.strerror or type(exc).__name__})")

    thread = threading.Thread(target=probe, daemon=True)  # name lookup has no timeout of its own
    thread.start()
    thread.join(HUB_PROBE_TIMEOUT_S)
    return result[0] if result else f"{host} did not answer within {HUB_PROBE_TIMEOUT_S:.0f} s"


def _load_hub(spec: DatasetSpec) -> list[dict[str, Any]]:
    """Rows from the Hugging Face hub; raises with the reason it could not."""
    if spec.hub_id is None:
        raise LookupError("this dataset has no Hugging Face hub id")
    offline = {"1", "true", "yes", "on"}
    if any(os.environ.get(name, "").lower() in offline for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")):
        raise LookupError("HF_HUB_OFFLINE is set")
    try:
        import datasets  # heavy, optional
    except ImportError as exc:
        raise LookupError("the datasets package is not installed (pip install 'rollgym[math]')") from exc
    unreachable = _hub_unreachable()
    if unreachable is not None:
        raise LookupError(unreachable)
    try:
        data = datasets.load_dataset(spec.hub_id, spec.hub_config, split=spec.hub_split)
    except Exception as exc:  # network errors, missing dataset, auth: all mean "not available"
        raise LookupError(f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}") from exc
    return [dict(row) for row in data]


def load_rows(spec: DatasetSpec, path: str | os.PathLike[str] | None = None, hub: bool = True) -> list[dict[str, Any]]:
    """The rows of a dataset, from ``path``, ``ROLLGYM_DATA_DIR`` or the hub (cached per process).

    Raises:
        DataNotFoundError: naming the three places when none has the data.
        ConfigError: when a file exists but a row is not valid JSON.
    """
    if path is not None:
        file = Path(path).expanduser()
        if not file.is_file():
            raise DataNotFoundError(
                f"Data file {file} does not exist; pass the path of a JSONL file with one row per line."
            )
        return _cached(("file", str(file.resolve()), file.stat().st_mtime_ns), lambda: _read_jsonl(file))
    data_dir = os.environ.get(DATA_DIR_ENV, "")
    if data_dir and spec.filename:
        folder = Path(data_dir).expanduser()
        file = folder / spec.filename
        if file.is_file():
            return _cached(("file", str(file.resolve()), file.stat().st_mtime_ns), lambda: _read_jsonl(file))
        where = f"{folder} does not exist" if not folder.is_dir() else f"{folder} has no {spec.filename}"
        raise DataNotFoundError(
            f"No data for {spec.name}: {DATA_DIR_ENV} is set but {where}; put {spec.filename} there, "
            f"point {DATA_DIR_ENV} at the folder that has it, or unset it to download from the Hugging Face hub."
        )
    hub_reason = "disabled (hub=False)"
    if hub and spec.hub_id:
        key = ("hub", spec.hub_id, spec.hub_config, spec.hub_split)
        with _CACHE_LOCK:
            if key in _CACHE:
                return _CACHE[key]
        try:
            return _cached(key, lambda: _load_hub(spec))
        except LookupError as exc:
            hub_reason = str(exc)
    elif not spec.hub_id:
        hub_reason = "no hub id given"
    hub_text = (
        f"the Hugging Face hub dataset {spec.hub_id}" if spec.hub_id else "the Hugging Face hub (pass hf_dataset=...)"
    )
    raise DataNotFoundError(
        f"No data for {spec.name}: pass path='.../{spec.filename or 'data.jsonl'}' to gym.make, "
        f"set {DATA_DIR_ENV} to a folder with {spec.filename or 'the file'}, "
        f"or install 'rollgym[math]' and allow network access for {hub_text} ({hub_reason})."
    )


def _cached(key: tuple[Any, ...], load: Any) -> list[dict[str, Any]]:
    with _CACHE_LOCK:
        if key in _CACHE:
            return _CACHE[key]
    rows = load()
    with _CACHE_LOCK:
        _CACHE.setdefault(key, rows)
        return _CACHE[key]


def answer_text(value: Any) -> str:
    """A gold answer as a string: ``27.0`` becomes ``"27"``; strings are stripped."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


_LIVE: weakref.WeakSet[MathDataset] = weakref.WeakSet()


def gold_answer(task_id: str) -> str:
    """The published gold answer of a task, looked up by its id in the loaded datasets (for the oracle).

    Searches every dataset an env of this process has loaded, then the built-in
    sets by the id's prefix (``math500/...``).

    Raises:
        ConfigError: when no loaded dataset has a task with this id.
    """
    for dataset in list(_LIVE):
        answer = dataset.answer_of(task_id)
        if answer is not None:
            return answer
    name = task_id.split("/", 1)[0]
    if name in BUILTIN:
        answer = MathDataset(BUILTIN[name]).answer_of(task_id)
        if answer is not None:
            return answer
    raise ConfigError(f"No loaded MATH dataset has task {task_id!r}; make the env that serves it first.")


class MathDataset(EvaluationSet):
    """A fixed evaluation set as a :class:`~rollgym.core.env.TaskSource` (only a ``"test"`` split).

    Example:
        >>> ds = MathDataset(MATH500)  # doctest: +SKIP
        >>> ds.size("test"), ds.task(0).id  # doctest: +SKIP
        (500, 'math500/test/precalculus/807.json')
    """

    family = "math"
    count_phrase = "all {n} rows"

    def __init__(
        self,
        spec: DatasetSpec,
        *,
        path: str | os.PathLike[str] | None = None,
        hub: bool = True,
        prompt_template: str = "default",
    ) -> None:
        self.spec = spec
        self.env_id = spec.env_id
        self.prompt_template = prompt_template
        format_prompt("", prompt_template)  # validates the template name before any loading
        rows = load_rows(spec, path, hub)
        self._rows = self._check(rows, path)
        self._ids = [self._row_id(i, row) for i, row in enumerate(self._rows)]
        if len(set(self._ids)) != len(self._ids):
            self._ids = [f"{rid}#{i}" for i, rid in enumerate(self._ids)]
        self._index = {task_id: i for i, task_id in enumerate(self._ids)}
        self._fresh = self._templates(path)
        _LIVE.add(self)

    def _check(self, rows: Sequence[dict[str, Any]], path: Any) -> list[dict[str, Any]]:
        where = path or self.spec.name
        if not rows:
            raise ConfigError(f"{where} has no rows; give a file with one JSON object per line.")
        for name in (self.spec.problem_field, self.spec.answer_field):
            missing = [i for i, row in enumerate(rows) if row.get(name) in (None, "")]
            if missing:
                raise ConfigError(
                    f"{where}: row {missing[0]} has no {name!r} field; name the right field with "
                    f"{'problem_field' if name == self.spec.problem_field else 'answer_field'}=..."
                )
        return list(rows)

    def _templates(self, path: Any) -> dict[int, tuple[FreshInstance, ...]]:
        """The fresh instances of every templated row, checked once at load."""
        found: dict[int, tuple[FreshInstance, ...]] = {}
        for i, row in enumerate(self._rows):
            if row.get(self.spec.template_field) is None:
                continue
            problem = str(row[self.spec.problem_field])
            found[i] = parse_template(row[self.spec.template_field], problem_numbers(problem),
                                      answer_text(row[self.spec.answer_field]), f"{path or self.spec.name}: row {i}")
        return found

    def fresh_instances(self, task: Task) -> tuple[FreshInstance, ...]:
        """Fresh instances of ``task``'s template (empty when its row has none or ``task`` is not this set's own).

        A task passed to ``reset(options={"task": ...})`` with a row's id but another prompt gets none.
        """
        index = self._index.get(task.id)
        if index is None or index not in self._fresh:
            return ()
        if format_prompt(str(self._rows[index][self.spec.problem_field]), self.prompt_template) != task.prompt:
            return ()
        return self._fresh[index]

    def _row_id(self, index: int, row: dict[str, Any]) -> str:
        for name in self.spec.id_fields:
            if row.get(name) not in (None, ""):
                return f"{self.spec.name}/{row[name]}"
        return f"{self.spec.name}/{content_digest(str(row[self.spec.problem_field]))}"

    def _count(self) -> int:
        return len(self._rows)

    def task(self, index: int, split: str = ONLY_SPLIT) -> Task:
        """Task ``index`` of the test split: prompt, hidden gold answer and public metadata."""
        row = self._rows[self._checked_index(index, split)]
        meta = {name: row[name] for name in self.spec.meta_fields if name in row}
        meta["dataset"] = self.spec.name
        problem = str(row[self.spec.problem_field])
        return Task(
            id=self._ids[index],
            env_id=self.spec.env_id,
            prompt=format_prompt(problem, self.prompt_template),
            answer=answer_text(row[self.spec.answer_field]),
            meta=meta,
        )

    def index_of(self, task_id: str) -> int:
        """The index of the row with this task id (for tools such as answer lookups in tests)."""
        if task_id not in self._index:
            raise ConfigError(f"No task {task_id!r} in {self.spec.name}.")
        return self._index[task_id]

    def answer_of(self, task_id: str) -> str | None:
        """The gold answer of the task with this id, or ``None`` when this set has no such task."""
        index = self._index.get(task_id)
        return None if index is None else answer_text(self._rows[index][self.spec.answer_field])
