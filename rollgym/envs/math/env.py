"""``MathEnv``: answer a competition math problem once, with the final answer in ``\\boxed{}``."""

from __future__ import annotations

from typing import Any

from rollgym.core.env import SingleTurnEnv
from rollgym.envs.math.problem_env import MathProblemEnv, dataset_source, math_env_id

__all__ = ["MathEnv", "dataset_source", "math_env_id"]


class MathEnv(MathProblemEnv, SingleTurnEnv):
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
    * ``data``, ``verify``: the options above as one :class:`~rollgym.envs.math.config.MathDataConfig`
      (problem set) or :class:`~rollgym.verifiers.math.MathVerifyConfig` (grading); options given one
      by one override theirs.
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

    def __init__(self, dataset: str | None = "math500", *, ignore_code_blocks: bool = True, **options: Any) -> None:
        self.ignore_code_blocks = ignore_code_blocks
        super().__init__(dataset, **options)  # the options of MathProblemEnv, listed under Arguments
