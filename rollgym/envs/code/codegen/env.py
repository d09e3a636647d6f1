"""``CodeGenEnv``: write a function from a generated description; hidden randomized tests decide."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from rollgym.core.difficulty import Difficulty, Level
from rollgym.core.env import SingleTurnEnv, StepResult
from rollgym.core.task import Score, Task
from rollgym.envs.code.codegen.source import DEFAULT_ENV_ID, CodeGenSource
from rollgym.envs.code.config import CODEGEN_FAMILIES, CODEGEN_LEVELS, CodeGenConfig, choices, ladder
from rollgym.envs.code.program import build_program, extract_code
from rollgym.envs.code.runner import CodeRunner, code_runner, failure_info, judge_expected, run_calls
from rollgym.sandbox import Limits

SYSTEM_PROMPT = (
    "You are an expert Python programmer. Read the task carefully, think about edge cases, and give the complete "
    "function in one ```python code block."
)


class CodeGenEnv(SingleTurnEnv):
    """CodeGen: procedurally generated programming tasks with hidden randomized tests.

    ## Description
    Each task asks for one Python function whose behaviour is a chain of ``steps``
    operations from one of six families: ``string`` (text transformations), ``list``
    (filters, maps, sorts, running sums), ``arithmetic`` (digit sums, Collatz steps,
    floor division...), ``dictionary`` (counting words, then filtering and scaling),
    ``recursion`` (a linear recurrence modulo a prime, which needs an iterative or
    memoized solution for large ``n``) and ``simulation`` (a robot following commands
    under extra rules). The prompt describes the operations and shows a few examples.
    Hidden tests call the function on random inputs up to ``input_size`` and, when
    ``tricky``, on edge cases (empty input, zero, one element, negatives); the expected
    values come from rollgym's reference solution, computed outside the sandbox.

    ## Action Space
    ``TextSpace(1_000_000)``: the model's text; the last fenced code block is the code
    (without one, the whole text is).

    ## Observation Space
    ``TextSpace(100_000)``: the task; ``""`` after the answer.

    ## Starting State
    ``reset(seed=s)`` draws a task of the split (``train`` by default; ``validation`` and
    ``test`` never share a task with it); ``options={"task_index": i, "split": ...}``;
    ``options={"difficulty": k}`` draws from level ``k`` of
    :data:`~rollgym.envs.code.config.CODEGEN_LEVELS` (0-4; 2 is the default configuration).

    ## Rewards
    1.0 when every hidden test returns the expected value with the expected types
    (``bool`` is not ``int``, a list is not a tuple), else 0.0.

    ## Episode End
    After one step: ``terminated=True, truncated=False``.

    ## Information
    ``task_meta``: ``family``, ``entry_point``, ``signature``, ``difficulty`` (``steps``,
    ``input_size``, ``tricky``), ``config``, ``n_tests``. ``step`` adds the score fields
    (``error``: ``None``, ``no_code``, ``syntax_error``, ``load_error``, ``missing_function``,
    ``wrong_answer``, ``wrong_type``, ``exception``, ``timeout``, ``crashed``, ``output_limit``;
    ``details``: ``tests``, ``passed``, ``failed``, ``failures``, ``timeouts``).

    ## Arguments
    * ``families`` (all six), ``steps`` (3, 1-6), ``input_size`` (20), ``n_tests`` (24),
      ``n_examples`` (3), ``tricky`` (True): see :class:`~rollgym.envs.code.config.CodeGenConfig`.
    * ``call_timeout_s`` (2.0), ``timeout_s`` (10.0): seconds per call and per answer.
    * ``split`` (``"train"``), ``render_mode``.

    ## Version History
    * v0: initial release.
    """

    default_env_id = DEFAULT_ENV_ID
    system_prompt = SYSTEM_PROMPT

    def __init__(
        self,
        *,
        families: Sequence[str] | str = CODEGEN_FAMILIES,
        steps: int = 3,
        input_size: int = 20,
        n_tests: int = 24,
        n_examples: int = 3,
        tricky: bool = True,
        call_timeout_s: float = 2.0,
        timeout_s: float = 10.0,
        split: str = "train",
        render_mode: str | None = None,
    ) -> None:
        self.config = CodeGenConfig(choices(families), steps,
                                    input_size, n_tests, n_examples, tricky)
        self.limits = Limits(wall_s=float(timeout_s), cpu_s=float(timeout_s), mem_mb=1024, max_output_bytes=8192)
        self.call_timeout_s = float(call_timeout_s)
        self.runner = code_runner(Limits(disk_mb=64, max_files=4096))
        super().__init__(CodeGenSource(self.config, self.default_env_id), split=split, render_mode=render_mode)

    @property
    def difficulty(self) -> Difficulty:
        """Five levels of ``steps``, ``input_size`` and ``tricky`` (1 step on inputs up to 10 without edge cases, up
        to 6 steps on inputs up to 100 with them); level 2 is the default."""
        return ladder(CODEGEN_LEVELS, self.config, "the reference solution's operations and the hidden inputs' size")

    def _level_source(self, env_id: str, level: Level) -> CodeGenSource:
        return CodeGenSource(replace(self.config, **level.knobs), env_id)

    def verify(self, task: Task, response: str) -> Score:
        """Run the answer on the hidden inputs in the sandbox; compare with the expected values here."""
        return grade_codegen(self.runner, [(task, response)], self.limits, self.call_timeout_s)[0]

    def verify_batch(self, items: Sequence[tuple[Task, str]]) -> list[Score]:
        """Grade many ``(task, response)`` pairs in one batch (what RL reward functions should call):
        the same scores as :meth:`verify` one by one, at a fraction of the cost."""
        return grade_codegen(self.runner, items, self.limits, self.call_timeout_s)

    def _advance(self, action: str) -> StepResult:
        observation, reward, terminated, truncated, info = super()._advance(action)
        return observation, reward, terminated, truncated, failure_info(info)  # a sandbox failure is retried


def grade_codegen(
    runner: CodeRunner, items: Sequence[tuple[Task, str]], limits: Limits, call_timeout_s: float
) -> list[Score]:
    """Scores of ``(task, response)`` pairs, one sandbox job per response, in order."""
    scores: list[Score | None] = [None] * len(items)
    work = []
    for i, (task, response) in enumerate(items):
        code = extract_code(response)
        if code is None:
            scores[i] = Score.fail("no_code", reason="no code found in the response")
            continue
        work.append((i, build_program("", code, task.meta["entry_point"])))
    outcomes = run_calls(
        runner, [(program, items[i][0].meta["entry_point"], items[i][0].answer["calls"]) for i, program in work],
        limits=limits, call_timeout_s=call_timeout_s,
    )
    for (i, program), outcome in zip(work, outcomes):
        scores[i] = judge_expected(outcome, items[i][0].answer["expected"], parsed=program)
    return [s if s is not None else Score.fail("verifier_error") for s in scores]
