"""What the two MATH envs share: the problem set (task source, difficulty levels, id) and the grading.

:class:`MathProblemEnv` is the base of :class:`~rollgym.envs.math.env.MathEnv` (one
boxed answer) and :class:`~rollgym.envs.math.tool_env.MathToolEnv` (a python tool
first): its constructor takes the options both share, so both read their problems through
:meth:`MathDataConfig.source <rollgym.envs.math.config.MathDataConfig.source>`, name their id
with :func:`math_env_id`, show the same system prompt, and score the final answer with
:func:`rollgym.verifiers.math.verify_math` under a :class:`~rollgym.verifiers.math.MathVerifyConfig`.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

from rollgym.core.difficulty import Difficulty, Level
from rollgym.core.env import TextEnv
from rollgym.core.errors import ConfigError
from rollgym.core.task import Score, Task
from rollgym.envs.math.config import MathDataConfig
from rollgym.envs.math.datasets import BUILTIN, ONLY_SPLIT, MathDataset
from rollgym.envs.math.levels import LevelSubset, math_difficulty
from rollgym.envs.math.prompts import SYSTEM_PROMPT
from rollgym.verifiers.math import MathVerifyConfig, verify_math
from rollgym.verifiers.math_pool import require_symbolic_dependencies


def dataset_source(dataset: str | None, *, env_id: str, **fields: Any) -> MathDataset:
    """Build the task source for a named set (``"math500"``, ``"aime24"``, ``"amc23"``) or a user's data.

    ``fields`` are the other fields of :class:`~rollgym.envs.math.config.MathDataConfig`: for
    ``dataset=None`` (``MATH-v1``) give ``path`` (a JSONL file) or ``hf_dataset`` (a Hugging Face
    dataset id); ``problem_field``/``answer_field``/``id_field`` name the fields. With neither,
    ``MATH-v1`` serves the MATH500 rows, so that a bare ``gym.make("MATH-v1")`` works.
    """
    return MathDataConfig(dataset=dataset, **fields).source(env_id)


def math_env_id(dataset: str | None, *, tool: bool, rules: str) -> str:
    """The registered id these arguments play: ``("math500", tool=True, rules="v1")`` -> ``MATH500Tool-v1``."""
    if rules not in ("v1", "v0"):
        raise ConfigError(f"rules must be 'v1' or 'v0', got {rules!r}.")
    base = BUILTIN[dataset].env_id.rsplit("-", 1)[0] if dataset in BUILTIN else "MATH"
    return f"{base}{'Tool' if tool else ''}-{rules}"


class MathProblemEnv(TextEnv):
    """A text env over a MATH problem set whose final answer is graded by ``verify_math``.

    Its constructor takes the options both envs share (the problem set, the grading, the split);
    a subclass takes its own options, sets what :meth:`_make_source` reads, and passes the rest on.
    """

    system_prompt = SYSTEM_PROMPT
    tool: ClassVar[bool] = False  # whether the id is a ``*Tool`` one
    ignore_code_blocks: bool = True  # boxes inside code blocks are not answers
    verify_config: MathVerifyConfig
    data_config: MathDataConfig
    _registered_id: str

    def __init__(
        self,
        dataset: str | None = "math500",
        *,
        path: str | os.PathLike[str] | None = None,
        hub: bool = True,
        hf_dataset: str | None = None,
        hf_split: str = "test",
        hf_config: str | None = None,
        problem_field: str = "problem",
        answer_field: str = "answer",
        id_field: str | None = None,
        prompt_template: str = "default",
        timeout_s: float = 5.0,
        budget_s: float = 10.0,
        box_policy: str = "all",
        allow_final_answer_line: bool = False,
        rules: str = "v1",
        split: str = ONLY_SPLIT,
        render_mode: str | None = None,
    ) -> None:
        require_symbolic_dependencies()  # fail at construction, not in the middle of a run
        self._registered_id = math_env_id(dataset, tool=self.tool, rules=rules)
        self.verify_config = MathVerifyConfig(
            timeout_s=timeout_s,
            budget_s=budget_s,
            box_policy=box_policy,  # type: ignore[arg-type]
            ignore_code_blocks=bool(self.ignore_code_blocks),
            allow_final_answer_line=bool(allow_final_answer_line),
            rules=rules,  # type: ignore[arg-type]
        )
        self.data_config = MathDataConfig(
            dataset=dataset, path=path, hub=hub, hf_dataset=hf_dataset, hf_split=hf_split, hf_config=hf_config,
            problem_field=problem_field, answer_field=answer_field, id_field=id_field, prompt_template=prompt_template,
        )
        super().__init__(split=split, render_mode=render_mode)
        self.source.size(self.split)  # only "test" exists; anything else is a clear ConfigError

    @property
    def env_id(self) -> str:
        """The id this env was made with, or the registered id of its dataset outside ``gym.make``."""
        return self.spec.id if self.spec is not None else self._registered_id

    def _make_source(self, env_id: str) -> MathDataset:
        return self.data_config.source(env_id)

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
