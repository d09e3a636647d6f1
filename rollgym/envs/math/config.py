"""The options of the MATH envs as frozen, self-checking config dataclasses.

:class:`MathDataConfig` says where the problems come from (both envs);
:class:`MathToolConfig` bounds the python tool of the ``*Tool-v0`` envs. How
answers are checked is :class:`rollgym.verifiers.math.MathVerifyConfig`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any

from rollgym.core.config import check_bool, check_choice, check_int, check_number
from rollgym.core.errors import ConfigError
from rollgym.envs.math.datasets import BUILTIN, DatasetSpec, MathDataset
from rollgym.envs.math.prompts import TEMPLATES

SANDBOX_BACKENDS = ("local", "docker")


def _check_text(name: str, value: Any, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{name} must be a non-empty string{' or None' if allow_none else ''}, got {value!r}.")


@dataclass(frozen=True)
class MathDataConfig:
    """Where a MATH env's problems come from.

    Attributes:
        dataset: ``"math500"``, ``"aime24"``, ``"amc23"``, or ``None`` for a user's set (``path`` or ``hf_dataset``).
        path: A JSONL file to read instead of ``$ROLLGYM_DATA_DIR`` or the hub.
        hub: Allow downloading from the Hugging Face hub.
        hf_dataset, hf_split, hf_config: A hub dataset, its split and configuration.
        problem_field, answer_field, id_field: The rows' field names.
        prompt_template: ``"default"`` (instruction to box the answer) or ``"plain"``.

    Example:
        >>> MathDataConfig(dataset="math5000")
        Traceback (most recent call last):
        ...
        rollgym.core.errors.ConfigError: dataset must be one of 'math500', 'aime24', 'amc23' or None, got 'math5000'; did you mean 'math500'?
    """  # noqa: E501

    dataset: str | None = "math500"
    path: str | os.PathLike[str] | None = None
    hub: bool = True
    hf_dataset: str | None = None
    hf_split: str = "test"
    hf_config: str | None = None
    problem_field: str = "problem"
    answer_field: str = "answer"
    id_field: str | None = None
    prompt_template: str = "default"

    def __post_init__(self) -> None:
        check_choice("dataset", self.dataset, tuple(BUILTIN), allow_none=True)
        if self.path is not None and not isinstance(self.path, (str, os.PathLike)):
            raise ConfigError(f"path must be a file path or None, got {self.path!r}.")
        check_bool("hub", self.hub)
        _check_text("hf_dataset", self.hf_dataset, allow_none=True)
        _check_text("hf_split", self.hf_split)
        _check_text("hf_config", self.hf_config, allow_none=True)
        _check_text("problem_field", self.problem_field)
        _check_text("answer_field", self.answer_field)
        _check_text("id_field", self.id_field, allow_none=True)
        check_choice("prompt_template", self.prompt_template, tuple(TEMPLATES))

    def source(self, env_id: str) -> MathDataset:
        """The task source of these problems, whose tasks carry ``env_id``.

        A named set keeps its file and hub copy unless ``hf_dataset`` names another; a user's
        set (``dataset=None``) is named after its file or hub dataset. With neither ``path`` nor
        ``hf_dataset``, ``dataset=None`` serves the MATH500 rows, so that a bare
        ``gym.make("MATH-v1")`` works.
        """
        dataset = self.dataset
        if dataset is None and self.path is None and self.hf_dataset is None:
            dataset = "math500"
        hub: dict[str, Any] = {"hub_id": self.hf_dataset, "hub_split": self.hf_split, "hub_config": self.hf_config}
        if dataset is not None:
            spec = BUILTIN[dataset]
            if self.hf_dataset is None:
                hub = {}  # the named set's own hub copy
        else:
            name = "math" if self.path is None else os.path.splitext(os.path.basename(str(self.path)))[0] or "math"
            if self.hf_dataset is not None and self.path is None:
                name = self.hf_dataset.rsplit("/", 1)[-1]
            id_fields = (self.id_field,) if self.id_field else ("unique_id", "id")
            spec = DatasetSpec(name, problem_field=self.problem_field, answer_field=self.answer_field,
                               id_fields=id_fields)
        spec = replace(spec, env_id=env_id, **hub)
        return MathDataset(spec, path=self.path, hub=self.hub, prompt_template=self.prompt_template)


@dataclass(frozen=True)
class MathToolConfig:
    """The python tool of the ``*Tool-v0`` envs.

    Attributes:
        max_turns: Replies per episode (1 to 100).
        max_calls_per_turn: Tool calls run per reply (1 to 32).
        sandbox: ``"local"`` or ``"docker"``.
        sandbox_timeout_s: Wall-clock limit of one run, in seconds (above 0, at most 600).
        sandbox_memory_mb: Memory limit of one run (at least 64 MB: Python needs it to start).
        max_output_chars: Characters of output shown back (at least 1).
    """

    max_turns: int = 6
    max_calls_per_turn: int = 4
    sandbox: str = "local"
    sandbox_timeout_s: float = 10.0
    sandbox_memory_mb: int = 1024
    max_output_chars: int = 4000

    def __post_init__(self) -> None:
        check_int("max_turns", self.max_turns, 1, 100)
        check_int("max_calls_per_turn", self.max_calls_per_turn, 1, 32)
        check_choice("sandbox", self.sandbox, SANDBOX_BACKENDS)
        check_number("sandbox_timeout_s", self.sandbox_timeout_s, above=0, high=600)
        check_int("sandbox_memory_mb", self.sandbox_memory_mb, 64)
        check_int("max_output_chars", self.max_output_chars, 1, 1_000_000)
