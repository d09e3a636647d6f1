"""``MathEnv``: answer a competition math problem once, with the final answer in ``\\boxed{}``."""

from __future__ import annotations

import os
from dataclasses import replace

from rollgym.core.difficulty import Difficulty, Level
from rollgym.core.env import SingleTurnEnv
from rollgym.core.errors import ConfigError
from rollgym.core.task import Score, Task
from rollgym.envs.math.config import MathDataConfig
from rollgym.envs.math.datasets import BUILTIN, ONLY_SPLIT, DatasetSpec, MathDataset
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


class MathEnv(SingleTurnEnv):
    """Competition math with one boxed final answer (MATH500, AIME24, AMC23, or your own set).

    ## Description
    Each task is one problem from a fixed evaluation set. The agent answers once;
    the last ``\\boxed{...}`` (or ``\\fbox{...}``) of its text is compared with the
    gold answer by :func:`rollgym.verifiers.math.verify_math`: exact checks for
    numbers, words and bases in-process, math-verify and sympy in a shared worker
    pool with a hard timeout for everything else. The data is never shipped: it is
    read from ``path``, from ``$ROLLGYM_DATA_DIR`` or from the Hugging Face hub.

    ## Action Space
    ``TextSpace(1_000_000)``: the model's text. Boxes inside code blocks do not
    count (``ignore_code_blocks``); with several boxes, every distinct boxed answer
    must be correct (``box_policy="all"``), so hedging scores 0.

    ## Observation Space
    ``TextSpace(100_000)``: the problem followed by the instruction to reason and
    box the final answer (see :mod:`rollgym.envs.math.prompts`). The observation
    after the answer is ``""``.

    ## Starting State
    The sets have one split, ``"test"`` (all rows). ``reset(seed=s)`` draws a row
    from the env's RNG; ``options={"task_index": i}`` picks row ``i``;
    ``options={"task": task}`` plays a given task. ``split="train"`` or
    ``"validation"`` raises :class:`~rollgym.core.errors.ConfigError`.

    ## Rewards
    1.0 for a correct final answer, else 0.0. No partial credit.

    ## Episode End
    After one step: ``terminated=True, truncated=False``.

    ## Information
    ``task_id`` (``math500/<unique_id>``, ``aime24/<id>``, ...), ``env_id``,
    ``spec_hash``, ``split``, ``task_index``, ``system_prompt`` and ``task_meta``
    (``dataset``, and ``subject`` and ``level`` for MATH500; never the answer).
    ``step`` adds ``reward``, ``correct``, ``parsed`` (the last boxed answer),
    ``error`` (``no_answer``, ``malformed``, ``empty_answer``, ``answer_too_long``,
    ``too_many_answers``, ``conflicting_answers``, ``equation``, ``relation``,
    ``several_values``, ``percent``, ``too_complex``, ``timeout``, ``time_budget``,
    ``unparsed``, ``wrong`` or ``None``) and ``details`` (``answers``, ``boxes``, ``method``).

    ## Arguments
    * ``path``: a JSONL file to read instead of ``$ROLLGYM_DATA_DIR``/the hub.
    * ``hub`` (default ``True``): allow downloading from the Hugging Face hub.
    * ``hf_dataset``, ``hf_split``, ``hf_config``: a hub dataset (``MATH-v1``; with neither
      ``path`` nor ``hf_dataset``, ``MATH-v1`` serves the MATH500 rows).
    * ``problem_field``, ``answer_field``, ``id_field``: field names (``MATH-v1``).
    * ``prompt_template``: ``"default"`` (instruction to box the answer) or ``"plain"``.
    * ``timeout_s`` (default 5.0): hard limit on the symbolic check of one answer.
    * ``budget_s`` (default 10.0): limit on the symbolic checks of one response, all boxes together.
    * ``box_policy`` (``"all"`` or ``"last"``), ``ignore_code_blocks`` (default ``True``),
      ``allow_final_answer_line`` (default ``False``): see :class:`~rollgym.verifiers.math.MathVerifyConfig`.
    * ``rules``: ``"v1"`` or ``"v0"``, set by the id (see Version History).
    * ``split``: only ``"test"``.
    * ``render_mode``: ``None``, ``"ansi"`` or ``"human"``.

    ## Version History
    * v1: answers that assert a relation the gold does not (``3 \\approx 4``, ``x < 5``,
      ``y = 2x + 3 = 7``), several values or a set around a single gold value
      (``3 \\text{, } 4``, ``\\{3\\}``), or a percentage where neither the gold nor the
      problem is one (``300\\%`` for 3) are wrong; decimals are exact (``0.57735026919``
      is not ``\\frac{\\sqrt3}{3}``); one response gets 10 s of symbolic work in total.
      Fixed in place: every spelling of "equals" the relation table knows (``\\doteq``,
      ``\\coloneqq``, ``\\eqqcolon``, ``≐``, ``≔``, ``≜``) is an equation, as ``=`` always was
      (``3 \\doteq 4`` had been credited for 4, against the rule above).
    * v0: initial release (kept to reproduce its results; it accepts the answers above).
    """

    default_env_id = "MATH500-v1"
    system_prompt = SYSTEM_PROMPT

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
        ignore_code_blocks: bool = True,
        allow_final_answer_line: bool = False,
        rules: str = "v1",
        split: str = ONLY_SPLIT,
        render_mode: str | None = None,
    ) -> None:
        require_symbolic_dependencies()  # fail at construction, not in the middle of a run
        self.verify_config = MathVerifyConfig(
            timeout_s=timeout_s,
            budget_s=budget_s,
            box_policy=box_policy,  # type: ignore[arg-type]
            ignore_code_blocks=bool(ignore_code_blocks),
            allow_final_answer_line=bool(allow_final_answer_line),
            rules=rules,  # type: ignore[arg-type]
        )
        self._registered_id = math_env_id(dataset, tool=False, rules=rules)
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
