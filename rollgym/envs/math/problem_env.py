"""What the two MATH envs share: the problem set (task source, difficulty levels, id) and the grading.

:class:`MathProblemEnv` is the base of :class:`~rollgym.envs.math.env.MathEnv` (one
boxed answer) and :class:`~rollgym.envs.math.tool_env.MathToolEnv` (a python tool
first): both read their problems through :func:`dataset_source`, name their id with
:func:`math_env_id`, show the same system prompt, and score the final answer with
:func:`rollgym.verifiers.math.verify_math` under a :class:`~rollgym.verifiers.math.MathVerifyConfig`.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from rollgym.core.difficulty import Difficulty, Level
from rollgym.core.env import TextEnv
from rollgym.core.errors import ConfigError
from rollgym.core.task import Score, Task
from rollgym.envs.math.config import MathDataConfig
from rollgym.envs.math.datasets import BUILTIN, DatasetSpec, MathDataset
from rollgym.envs.math.levels import LevelSubset, math_difficulty
from rollgym.envs.math.prompts import SYSTEM_PROMPT
from rollgym.verifiers.math import MathVerifyConfig, verify_math
from rollgym.verifiers.math_pool import require_symbolic_dependencies


def dataset_source(
    dataset: str | None,
    *,
    env_id: str,
    path: str | os.PathLike[str] | None = None,
    hf_dataset: str | None = None,
    hf_split: str = "test",
    hf_config: str | None = None,
    problem_field: str = "problem",
    answer_field: str = "answer",
    id_field: str | None = None,
    hub: bool = True,
    prompt_template: str = "default",
) -> MathDataset:
    """Build the task source for a named set (``"math500"``, ``"aime24"``, ``"amc23"``) or a user's data.

    For ``dataset=None`` (``MATH-v1``) give ``path`` (a JSONL file) or ``hf_dataset``
    (a Hugging Face dataset id); ``problem_field``/``answer_field``/``id_field`` name the fields.
    With neither, ``MATH-v1`` serves the MATH500 rows, so that a bare ``gym.make("MATH-v1")`` works.
    """
    if dataset is None and path is None and hf_dataset is None:
        dataset = "math500"
    if dataset is not None:
        if dataset not in BUILTIN:
            raise ConfigError(f"Unknown dataset {dataset!r}; use one of {', '.join(sorted(BUILTIN))}.")
        spec = replace(BUILTIN[dataset], env_id=env_id)
        if hf_dataset is not None:
            spec = replace(spec, hub_id=hf_dataset, hub_split=hf_split, hub_config=hf_config)
    else:
        name = "math" if path is None else os.path.splitext(os.path.basename(str(path)))[0] or "math"
        if hf_dataset is not None and path is None:
            name = hf_dataset.rsplit("/", 1)[-1]
        spec = DatasetSpec(
            name=name,
            filename=None,
            hub_id=hf_dataset,
            hub_split=hf_split,
            hub_config=hf_config,
            problem_field=problem_field,
            answer_field=answer_field,
            id_fields=(id_field,) if id_field else ("unique_id", "id"),
            env_id=env_id,
        )
    return MathDataset(spec, path=path, hub=hub, prompt_template=prompt_template)


def math_env_id(dataset: str | None, *, tool: bool, rules: str) -> str:
    """The registered id these arguments play: ``("math500", tool=True, rules="v1")`` -> ``MATH500Tool-v1``."""
    if rules not in ("v1", "v0"):
        raise ConfigError(f"rules must be 'v1' or 'v0', got {rules!r}.")
    base = BUILTIN[dataset].env_id.rsplit("-", 1)[0] if dataset in BUILTIN else "MATH"
    return f"{base}{'Tool' if tool else ''}-{rules}"


class MathProblemEnv(TextEnv):
    """A text env over a MATH problem set whose final answer is graded by ``verify_math``.

    Subclasses call :meth:`_configure` in ``__init__`` before ``TextEnv.__init__``; it checks the
    symbolic dependencies, the data options and the grading options, and names the registered id.
    """

    system_prompt = SYSTEM_PROMPT
    verify_config: MathVerifyConfig
    data_config: MathDataConfig
    _registered_id: str

    def _configure(
        self,
        dataset: str | None,
        *,
        tool: bool,
        rules: str,
        timeout_s: float,
        budget_s: float,
        box_policy: str,
        ignore_code_blocks: bool,
        allow_final_answer_line: bool,
        **data: Any,
    ) -> None:
        """Set ``verify_config``, ``data_config`` and the registered id; raise ``ConfigError`` on a bad option."""
        require_symbolic_dependencies()  # fail at construction, not in the middle of a run
        self._registered_id = math_env_id(dataset, tool=tool, rules=rules)
        self.verify_config = MathVerifyConfig(
            timeout_s=timeout_s,
            budget_s=budget_s,
            box_policy=box_policy,  # type: ignore[arg-type]
            ignore_code_blocks=bool(ignore_code_blocks),
            allow_final_answer_line=bool(allow_final_answer_line),
            rules=rules,  # type: ignore[arg-type]
        )
        self.data_config = MathDataConfig(dataset=dataset, **data)

    @property
    def env_id(self) -> str:
        """The id this env was made with, or the registered id of its dataset outside ``gym.make``."""
        return self.spec.id if self.spec is not None else self._registered_id

    def _make_source(self, env_id: str) -> MathDataset:
        return dataset_source(env_id=env_id, **self.data_config.source_kwargs())

    @property
    def difficulty(self) -> Difficulty | None:
        """One level per ``level`` label of the set (MATH500: 1-5); ``None`` for unlabelled sets (AIME24, AMC23)."""
        if not hasattr(self, "_difficulty"):  # read from the data once
            self._difficulty = math_difficulty(self.source, self.split)  # type: ignore[arg-type]
        return self._difficulty

    def _level_source(self, env_id: str, level: Level) -> LevelSubset:
        return LevelSubset(self.source, self.split, int(level.knobs["level"]))  # type: ignore[arg-type]

    def verify(self, task: Task, response: str) -> Score:
        """Score ``response`` with :func:`~rollgym.verifiers.math.verify_math` and this env's options."""
        return verify_math(task, response, self.verify_config)
