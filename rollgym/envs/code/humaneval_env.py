"""``HumanEval-v0`` (one completion) and ``HumanEvalTool-v0`` (run code and the visible examples first)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Unpack

from rollgym.core.env import SingleTurnEnv, StepResult
from rollgym.core.errors import ConfigError
from rollgym.core.task import Score, Task
from rollgym.core.toolcalls import ToolCall
from rollgym.envs.code.humaneval_data import ONLY_SPLIT, HumanEvalSource
from rollgym.envs.code.humaneval_grader import HumanEvalGrader
from rollgym.envs.code.program import build_program, extract_code
from rollgym.envs.code.runner import code_runner, failure_info
from rollgym.envs.code.tool_env import CodeToolEnv, ToolLoopOptions, tool_schema
from rollgym.sandbox import Job, Limits

SYSTEM_PROMPT = (
    "You are an expert Python programmer. Write correct, efficient code. Give your final solution as the "
    "complete function in one ```python code block."
)
TOOL_SYSTEM_PROMPT = (
    SYSTEM_PROMPT + " You may first run code with the tools; a message without a tool call is your final answer."
)
PYTHON_TOOL = tool_schema(
    "python",
    "Run Python 3 code in a fresh sandbox (no network, no files of the host, limited time and memory) and "
    "return what it prints; the value of a final expression is printed.",
    {"code": {"type": "string", "description": "Python source to run."}},
    ["code"],
)
EXAMPLES_TOOL = tool_schema(
    "run_examples",
    "Run the docstring examples (the >>> lines) of the problem against your code and report which fail. "
    "Only the visible examples run; the hidden tests stay hidden.",
    {"code": {"type": "string", "description": "Your solution: the complete function, or its body."}},
    ["code"],
)
_DOCTEST = (
    "\nimport doctest as _doctest, io as _io, contextlib as _contextlib\n"
    "_f = globals().get({name!r})\n"
    "_examples = _doctest.DocTestParser().get_examples(getattr(_f, '__doc__', None) or '')\n"
    "_failed = 0\n"
    "for _ex in _examples:\n"
    "    _buffer = _io.StringIO()\n"
    "    try:\n"
    "        with _contextlib.redirect_stdout(_buffer):\n"
    "            exec(compile(_ex.source, '<example>', 'single'), globals())\n"
    "        _got = _buffer.getvalue()\n"
    "    except Exception as _exc:\n"
    "        _got = f'{{type(_exc).__name__}}: {{_exc}}\\n'\n"
    "    if _got.split() != _ex.want.split():\n"
    "        _failed += 1\n"
    "        print(f'FAILED: {{_ex.source.strip()}}\\n  expected: {{_ex.want.strip()}}'\n"
    "              f'\\n  got:      {{_got.strip()}}')\n"
    "if _f is None:\n"
    "    print('your code does not define {name}')\n"
    "elif not _examples:\n"
    "    print('no >>> examples in the docstring; test with the python tool')\n"
    "else:\n"
    "    print(f'{{len(_examples) - _failed}} of {{len(_examples)}} visible examples pass')\n"
)


def _grader(call_timeout_s: float, timeout_s: float, memory_mb: int, require_code_block: bool) -> HumanEvalGrader:
    for name, value, high in (("call_timeout_s", call_timeout_s, 60), ("timeout_s", timeout_s, 600)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= high:
            raise ConfigError(f"{name} must be a number of seconds in (0, {high}], got {value!r}.")
    if isinstance(memory_mb, bool) or not isinstance(memory_mb, int) or not 128 <= memory_mb <= 16384:
        raise ConfigError(f"memory_mb must be an integer from 128 to 16384, got {memory_mb!r}.")
    return HumanEvalGrader(call_timeout_s=float(call_timeout_s), timeout_s=float(timeout_s), mem_mb=memory_mb,
                           require_code_block=bool(require_code_block))


class HumanEvalEnv(SingleTurnEnv):
    """HumanEval: complete a Python function from its signature and docstring; hidden tests decide.

    ## Description
    The 164 problems of HumanEval (Chen et al. 2021), loaded from ``path``,
    ``$ROLLGYM_DATA_DIR/humaneval.jsonl`` or the hub (``openai/openai_humaneval``). The
    agent answers once with code. The hidden ``check`` of the problem decides, but it
    never runs with the agent's code: the agent's function is called in a sandbox on
    the inputs the check uses, its answers come back as typed values, and the check
    runs on those values in another sandbox (see
    :mod:`rollgym.envs.code.humaneval_grader`).

    ## Action Space
    ``TextSpace(1_000_000)``: the model's text. The last fenced code block is the code
    (without a fenced block, the whole text is a completion of the function body,
    HumanEval's original format, unless ``require_code_block=True``). Code that defines
    the function replaces the prompt's; other code continues the prompt's function.

    ## Observation Space
    ``TextSpace(100_000)``: an instruction and the problem's prompt (signature and docstring)
    in a code block; ``""`` after the answer.

    ## Starting State
    One ``"test"`` split of 164 problems; ``reset(seed=s)``, ``options={"task_index": i}``
    or ``options={"task": task}``.

    ## Rewards
    1.0 when every hidden test passes: every call returns within ``call_timeout_s``,
    with the reference's types (an ``int`` may stand for a ``float``; ``bool`` never for
    ``int``), and the check accepts the answers. Else 0.0.

    ## Episode End
    After one step: ``terminated=True, truncated=False``.

    ## Information
    The common keys; ``task_meta`` has ``entry_point``, ``signature``, ``code_prompt``.
    ``step`` adds the score fields: ``error`` is ``None`` or one of ``no_code``,
    ``syntax_error``, ``load_error``, ``missing_function``, ``wrong_answer``, ``wrong_type``,
    ``exception``, ``timeout``, ``crashed`` (the program ended before reporting, e.g.
    ``os._exit``), ``output_limit``; ``details`` has ``tests``, ``passed``, ``failed``
    (indices of failed hidden tests), ``failures`` (``test``, ``reason``, ``exception``
    class), ``timeouts`` and ``run`` (the sandbox's label).

    ## Arguments
    * ``path`` (str): a HumanEval JSONL file; ``hub`` (bool, default True): allow the hub.
    * ``call_timeout_s`` (3.0): seconds per call; ``timeout_s`` (10.0): seconds per sample.
    * ``memory_mb`` (1024): address space of the candidate's process.
    * ``require_code_block`` (False): only read fenced code.

    ## Version History
    * v0: initial release.
    """

    default_env_id = "HumanEval-v0"
    system_prompt = SYSTEM_PROMPT

    def __init__(
        self,
        *,
        path: str | os.PathLike[str] | None = None,
        hub: bool = True,
        call_timeout_s: float = 3.0,
        timeout_s: float = 10.0,
        memory_mb: int = 1024,
        require_code_block: bool = False,
        split: str = ONLY_SPLIT,
        render_mode: str | None = None,
    ) -> None:
        self.grader = _grader(call_timeout_s, timeout_s, memory_mb, require_code_block)
        source = HumanEvalSource(self.default_env_id, path=path, hub=hub)
        source.size(split)
        super().__init__(source, split=split, render_mode=render_mode)

    def verify(self, task: Task, response: str) -> Score:
        """Grade ``response`` with :class:`~rollgym.envs.code.humaneval_grader.HumanEvalGrader`."""
        return self.grader.grade([(task, response)])[0]

    def verify_batch(self, items: Sequence[tuple[Task, str]]) -> list[Score]:
        """Grade many ``(task, response)`` pairs in one batch (what RL reward functions should call):
        the same scores as :meth:`verify` one by one, at a fraction of the cost."""
        return self.grader.grade(items)

    def _advance(self, action: str) -> StepResult:
        observation, reward, terminated, truncated, info = super()._advance(action)
        return observation, reward, terminated, truncated, failure_info(info)  # a sandbox failure is retried


class HumanEvalToolEnv(CodeToolEnv):
    """HumanEval with tools: run code and the visible docstring examples before the final answer.

    ## Description
    The problems and grading of :class:`HumanEvalEnv`. Before answering, the agent may
    call ``python`` (run any code in a fresh sandbox) and ``run_examples`` (run the
    docstring's ``>>>`` examples against its code with ``doctest``). The hidden tests,
    their inputs and the reference are never in those sandboxes.

    ## Action Space
    ``TextSpace(1_000_000)``: text with ``<tool_call>{"name": ..., "arguments": {"code": ...}}</tool_call>``
    blocks, or, without a tool call, the final answer (graded as in ``HumanEval-v0``).

    ## Observation Space
    ``TextSpace(100_000)``: the problem and how to use the tools; then ``<tool_response>``
    blocks (output cut to ``max_output_chars``); ``""`` after the answer.

    ## Starting State
    As ``HumanEval-v0``.

    ## Rewards
    0.0 on tool turns; the final answer scores as in ``HumanEval-v0``.

    ## Episode End
    ``terminated=True`` at the final answer; ``truncated=True`` (reward 0, ``error="turn_limit"``)
    when the ``max_turns``-th message still calls tools.

    ## Information
    The common keys and ``tools``; tool turns add ``tool_results`` (``tool``, ``ok``,
    ``label``, ``exception`` or ``error``) and ``turn``; the final step adds the score fields.

    ## Arguments
    Those of ``HumanEval-v0``, plus ``max_turns`` (8), ``max_calls_per_turn`` (4) and
    ``max_output_chars`` (4000).

    ## Version History
    * v0: initial release.
    """

    default_env_id = "HumanEvalTool-v0"
    system_prompt = TOOL_SYSTEM_PROMPT
    loop_defaults = ToolLoopOptions(max_turns=8, split=ONLY_SPLIT)

    def __init__(
        self,
        *,
        path: str | os.PathLike[str] | None = None,
        hub: bool = True,
        call_timeout_s: float = 3.0,
        timeout_s: float = 10.0,
        memory_mb: int = 1024,
        require_code_block: bool = False,
        **loop: Unpack[ToolLoopOptions],
    ) -> None:
        self.grader = _grader(call_timeout_s, timeout_s, memory_mb, require_code_block)
        self.runner = code_runner(Limits(disk_mb=64, max_files=4096))
        source = HumanEvalSource(self.default_env_id, path=path, hub=hub)
        super().__init__(source, **self.with_defaults(loop))
        source.size(self.split)
        self.tool_limits = Limits(wall_s=float(timeout_s), cpu_s=float(timeout_s), mem_mb=memory_mb,
                                  max_output_bytes=4 * self.max_output_chars)

    @property
    def tools(self) -> list[dict[str, Any]]:
        """``python`` and ``run_examples``."""
        return [PYTHON_TOOL, EXAMPLES_TOOL]

    def _begin(self, task: Task) -> str:
        return (
            f"{task.prompt}\n\nTools: call python with {{\"code\": ...}} to run code, or run_examples with "
            "{\"code\": <your solution>} to run the docstring examples against it, as "
            '<tool_call>{"name": "run_examples", "arguments": {"code": "..."}}</tool_call>. '
            f"You have {self.max_turns} messages; the first without a tool call is your final answer."
        )

    def _call(self, call: ToolCall) -> tuple[str, dict[str, Any]]:
        assert self.task is not None
        if call.name not in ("python", "run_examples"):
            return f"error: unknown tool {call.name!r}; use python or run_examples", {"error": "unknown_tool"}
        code = call.arguments.get("code")
        if not isinstance(code, str) or set(call.arguments) != {"code"}:
            return "error: this tool takes exactly one argument, 'code', a string", {"error": "bad_arguments"}
        if call.name == "run_examples":
            entry = self.task.meta["entry_point"]
            code = build_program(self.task.meta["code_prompt"], extract_code(code) or "", entry)
            code += _DOCTEST.format(name=entry)
        result = self.runner.run_one(Job.python(code, limits=self.tool_limits))
        summary = {"ok": result.ok, "label": result.label, "exception": result.exception}
        return result.as_text(self.max_output_chars), summary

    def _grade(self, action: str) -> Score:
        assert self.task is not None
        return self.grader.grade([(self.task, action)])[0]
