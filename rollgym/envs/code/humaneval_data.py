"""HumanEval as a task source: loaded from a path, ``ROLLGYM_DATA_DIR`` or the Hugging Face hub.

rollgym ships no copy of HumanEval (Chen et al. 2021, MIT licence). :func:`load_humaneval`
looks, in order, at an explicit ``path`` (JSONL with ``task_id``, ``prompt``,
``canonical_solution``, ``test``, ``entry_point``), ``$ROLLGYM_DATA_DIR/humaneval.jsonl``,
and the hub dataset ``openai/openai_humaneval`` (``pip install datasets``; skipped when
``hub=False`` or ``HF_HUB_OFFLINE=1``), and raises one
:class:`~rollgym.core.errors.DataNotFoundError` naming all three when none works.

It is an evaluation set: every problem is in the ``"test"`` split. The task's
hidden ``answer`` holds the canonical solution and the ``check`` function; neither
is ever shown to the agent nor put into a sandbox with the agent's code.
"""

from __future__ import annotations

import ast
import os
import threading
from pathlib import Path
from typing import Any

from rollgym.core.errors import ConfigError, DataNotFoundError
from rollgym.core.evalset import ONLY_SPLIT, EvaluationSet, jsonl_rows
from rollgym.core.task import Task

DATA_DIR_ENV = "ROLLGYM_DATA_DIR"
FILENAME = "humaneval.jsonl"
HUB_ID = "openai/openai_humaneval"
FIELDS = ("task_id", "prompt", "canonical_solution", "test", "entry_point")

INSTRUCTION = (
    "Complete the Python function below so that it does what its docstring says. Reply with the "
    "complete function (you may keep the imports and helpers above it) in one ```python code block. "
    "Hidden tests will call it; they check return values and their types."
)

_cache: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
_lock = threading.Lock()


def _read(file: Path) -> list[dict[str, Any]]:
    rows = []
    for number, row in jsonl_rows(file):
        missing = [name for name in FIELDS if not isinstance(row.get(name), str)]
        if missing:
            raise ConfigError(f"{file} line {number} lacks the text field(s) {', '.join(missing)}.")
        rows.append({name: row[name] for name in FIELDS})
    if not rows:
        raise ConfigError(f"{file} has no rows; give a JSONL file with one HumanEval problem per line.")
    return rows


def _hub() -> list[dict[str, Any]]:
    if os.environ.get("HF_HUB_OFFLINE", "") in {"1", "true", "TRUE"} or os.environ.get("HF_DATASETS_OFFLINE") == "1":
        raise LookupError("HF_HUB_OFFLINE is set")
    try:
        import datasets
    except ImportError as exc:
        raise LookupError("the datasets package is not installed") from exc
    try:
        data = datasets.load_dataset(HUB_ID, split="test")
    except Exception as exc:  # network errors, missing dataset: all mean "not available"
        raise LookupError(f"{type(exc).__name__}: {str(exc)[:200]}") from exc
    return [{name: str(row[name]) for name in FIELDS} for row in data]


def load_humaneval(path: str | os.PathLike[str] | None = None, *, hub: bool = True) -> list[dict[str, Any]]:
    """The HumanEval rows, from ``path``, ``ROLLGYM_DATA_DIR`` or the hub (cached per process).

    Raises:
        DataNotFoundError: naming the three places when none has the data.
    """
    if path is not None:
        file = Path(path).expanduser()
        if not file.is_file():
            raise DataNotFoundError(f"HumanEval file {file} does not exist; pass the path of humaneval.jsonl.")
    else:
        data_dir = os.environ.get(DATA_DIR_ENV, "")
        file = Path(data_dir).expanduser() / FILENAME if data_dir else Path()
    if file.name and file.is_file():
        key: tuple[Any, ...] = ("file", str(file.resolve()), file.stat().st_mtime_ns)
        with _lock:
            if key not in _cache:
                _cache[key] = _read(file)
            return _cache[key]
    reason = "disabled (hub=False)"
    if hub:
        with _lock:
            if ("hub",) in _cache:
                return _cache[("hub",)]
        try:
            rows = _hub()
            with _lock:
                _cache[("hub",)] = rows
            return rows
        except LookupError as exc:
            reason = str(exc)
    where = os.environ.get(DATA_DIR_ENV) or "(unset)"
    raise DataNotFoundError(
        f"No HumanEval data: pass path='.../{FILENAME}' to gym.make, put {FILENAME} in the folder named by "
        f"{DATA_DIR_ENV} (now {where}), or pip install datasets and allow network access for {HUB_ID} ({reason})."
    )


def signature(prompt: str, entry_point: str) -> str:
    """The entry function's parameter list and return annotation as written, e.g. ``"(s: str) -> int"``."""
    try:
        tree = ast.parse(prompt)
    except SyntaxError:
        return ""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == entry_point:
            returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
            return f"({ast.unparse(node.args)}){returns}"
    return ""


def format_prompt(row: dict[str, Any]) -> str:
    """The observation of a HumanEval problem: the instruction, then the function to complete."""
    return f"{INSTRUCTION}\n\n```python\n{row['prompt'].rstrip()}\n```"


class HumanEvalSource(EvaluationSet):
    """HumanEval as a :class:`~rollgym.core.env.TaskSource` with one ``"test"`` split.

    Example:
        >>> source = HumanEvalSource()  # doctest: +SKIP
        >>> source.size("test"), source.task(0).id  # doctest: +SKIP
        (164, 'HumanEval/0')
    """

    family = "code"
    count_phrase = "{n} problems"

    def __init__(
        self, env_id: str = "HumanEval-v0", *, path: str | os.PathLike[str] | None = None, hub: bool = True
    ) -> None:
        self.env_id = env_id
        self.rows = load_humaneval(path, hub=hub)

    def _count(self) -> int:
        return len(self.rows)

    def task(self, index: int, split: str = ONLY_SPLIT) -> Task:
        """Problem ``index``: the prompt in the observation; canonical solution and ``check`` hidden."""
        row = self.rows[self._checked_index(index, split)]
        return Task(
            id=row["task_id"],
            env_id=self.env_id,
            prompt=format_prompt(row),
            answer={"canonical_solution": row["canonical_solution"], "test": row["test"]},
            meta={
                "dataset": "humaneval",
                "entry_point": row["entry_point"],
                "code_prompt": row["prompt"],
                "signature": signature(row["prompt"], row["entry_point"]),
            },
        )
