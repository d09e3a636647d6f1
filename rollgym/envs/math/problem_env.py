"""What the two MATH envs share: the problem set (task source, difficulty levels, id) and the grading.

:class:`MathProblemEnv` is the base of :class:`~rollgym.envs.math.env.MathEnv` (one
boxed answer) and :class:`~rollgym.envs.math.tool_env.MathToolEnv` (a python tool
first): its constructor takes the options both share, so both read their problems through
:meth:`MathDataConfig.source <rollgym.envs.math.config.MathDataConfig.source>`, name their id
with :func:`math_env_id`, show the same system prompt, and score the final answer with
:func:`rollgym.verifiers.math.verify_math` under a :class:`~rollgym.verifiers.math.MathVerifyConfig`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rollgym.core.config import check_known, configure, field_names
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
    The problem-set options are the fields of :class:`MathDataConfig` and the grading options those
    of :class:`MathVerifyConfig` named in :attr:`verify_options`: give them one by one, or as
    ``data=MathDataConfig(...)`` / ``verify=MathVerifyConfig(...)`` (options given one by one override
    the object's; ``dataset`` always names the set).
    """

    system_prompt = SYSTEM_PROMPT
    tool: ClassVar[bool] = False  # whether the id is a ``*Tool`` one
    ignore_code_blocks: bool = True  # boxes inside code blocks are not answers
    verify_config: MathVerifyConfig
    data_config: MathDataConfig
    _registered_id: str

    #: The options beside ``dataset``: those of :class:`MathDataConfig` and these of :class:`MathVerifyConfig`.
    verify_options: ClassVar[frozenset[str]] = frozenset(
        {"timeout_s", "budget_s", "box_policy", "allow_final_answer_line", "rules"})
    config_options: ClassVar[frozenset[str]] = field_names(MathDataConfig) | verify_options

    def __init__(
        self,
        dataset: str | None = "math500",
        *,
        data: MathDataConfig | None = None,
        verify: MathVerifyConfig | None = None,
        split: str = ONLY_SPLIT,
        render_mode: str | None = None,
        **options: Any,
    ) -> None:
        require_symbolic_dependencies()  # fail at construction, not in the middle of a run
        owner = type(self).__name__
        check_known(owner, options, self.config_options - {"dataset"})
        graded = {k: v for k, v in options.items() if k in self.verify_options}
        if "allow_final_answer_line" in graded:
            graded["allow_final_answer_line"] = bool(graded["allow_final_answer_line"])
        graded["ignore_code_blocks"] = bool(self.ignore_code_blocks)  # the env's, not an option
        self.verify_config = configure(owner, MathVerifyConfig, verify, graded)
        self._registered_id = math_env_id(dataset, tool=self.tool, rules=self.verify_config.rules)
        self.data_config = configure(owner, MathDataConfig, data, {
            **{k: v for k, v in options.items() if k not in self.verify_options}, "dataset": dataset})
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
