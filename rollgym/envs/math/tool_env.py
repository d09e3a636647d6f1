"""``MathToolEnv``: competition math with a sandboxed Python tool (tool-integrated reasoning)."""

from __future__ import annotations

import re
from typing import Any

from rollgym.core.env import StepResult
from rollgym.core.task import Score, Task
from rollgym.core.toolcalls import ToolCall, format_tool_response, parse_tool_calls
from rollgym.envs.math.config import SANDBOX_BACKENDS, MathToolConfig
from rollgym.envs.math.evidence import fresh_instance_evidence, printed_lines, rerun_evidence
from rollgym.envs.math.problem_env import MathProblemEnv
from rollgym.envs.math.prompts import tool_instruction
from rollgym.envs.math.templates import FreshInstance
from rollgym.sandbox import Limits, RunResult, make_sandbox, shared_sandbox
from rollgym.verifiers.math import answers_equal_many

PYTHON_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "python",
        "description": (
            "Run Python 3 code in a fresh sandbox (no network, no files outside a temporary folder, "
            "limited time and memory) and return what it prints. The value of a final expression is printed."
        ),
        "parameters": {
            "type": "object",
            "properties": {"code": {"type": "string", "description": "The Python source to run."}},
            "required": ["code"],
        },
    },
}

_TOOL_BLOCK_RE = re.compile(r"<tool_call>.*?(?:</tool_call>|\Z)", re.DOTALL | re.IGNORECASE)
BACKENDS = SANDBOX_BACKENDS  # "local" is rollgym.sandbox's bubblewrap sandbox (or its fallback)


class MathToolEnv(MathProblemEnv):
    """Competition math where the agent may run Python through a ``python`` tool before answering.

    ## Description
    The tasks are those of :class:`~rollgym.envs.math.env.MathEnv` (MATH500, AIME24,
    AMC23 or your own set). Each turn the agent either calls the tool with a Hermes
    block, ``<tool_call>{"name": "python", "arguments": {"code": "print(2**10)"}}</tool_call>``,
    and gets what the code printed back as a ``<tool_response name="python">``
    observation, or answers without a tool call; its final answer is scored like
    ``MathEnv`` (last ``\\boxed{}``). Code runs in a sandbox (``sandbox="local"``:
    :class:`rollgym.sandbox.Sandbox`, a fresh bubblewrap sandbox per call with no
    network, no processes, no host files and a small private tmpfs; ``"docker"``: a
    container); see ``SECURITY.md`` for what is enforced.

    ## Action Space
    ``TextSpace(1_000_000)``: the model's text, with zero or more tool calls.

    ## Observation Space
    ``TextSpace(100_000)``: first the problem, the boxing instruction and how to call
    the tool; after a tool turn, the tool responses (stdout, then stderr and the
    status when something went wrong, each cut to ``max_output_chars``); after
    the final answer, ``""``.

    ## Starting State
    As ``MathEnv``: one ``"test"`` split; ``reset(seed=s)``, ``options={"task_index": i}``
    or ``options={"task": task}``.

    ## Rewards
    0.0 on tool turns; on the answer turn, 1.0 for a correct final answer, else 0.0.

    ## Episode End
    ``terminated=True`` when the agent answers without a tool call.
    ``truncated=True`` (reward 0.0, ``error="turn_limit"``) when its ``max_turns``-th
    message still calls a tool; those calls are not run.

    ## Information
    The common keys, plus ``tools`` (the OpenAI function schema of ``python``). Tool
    turns add ``tool_results`` (per call: ``ok``, ``exit_code``, ``timed_out``,
    ``duration_s``, ``label`` (what went wrong: ``"exit"``, ``"timeout"``, ``"memory"``,
    ``"cpu"``, ``"output"``, ``"disk"``, ``"sandbox_error"``... or ``None``) and
    ``exception`` (an uncaught exception's class), or ``error`` for a malformed call).
    The answer turn adds the score fields (``reward``,
    ``correct``, ``parsed``, ``error``, ``details``) and ``verified``, a bool for
    verification-aware voting (T^3RL): ``True`` only when tool evidence ties the final
    boxed answer to the problem. A successful call must have printed a value equal to the
    answer in one of its last three lines; then, for a generated row with a ``template``
    (:mod:`rollgym.envs.math.templates`), the call's code re-run with the numbers of two
    hidden fresh instances in place of the problem's must print each instance's answer on
    that line; for other rows, every number the code writes must be a number of the
    problem (or one off one), 0 or 1, and the code re-run with one problem number ``n``
    (not 0 or 1) changed to ``n + 1`` must succeed, print, and no longer print the answer
    (nor ``n + 1`` when the answer is ``n``). So ``print(999)``, ``print(992 + 7)`` and ``print(999 if 7 % 2 else 0)``
    followed by ``\\boxed{999}`` are not verified; see :mod:`rollgym.envs.math.evidence` for
    the exact rules and what each guarantees. The evidence is in ``details["verification"]``:
    ``method`` (``"fresh_instance"`` or ``"python_rerun"``), ``calls``,
    ``successful_calls``, ``code_ran``, ``printed_answer``, ``matching_calls`` (calls
    that printed the answer), ``computed_calls`` (those that passed), ``reruns`` (per re-run)
    and ``foreign_numbers`` (calls refused for writing other numbers). A truncated episode
    has ``verified=False`` and the same
    evidence. The signal never changes the reward.

    ## Arguments
    Those of ``MathEnv`` (``path``, ``hub``, ``hf_dataset``..., ``timeout_s``,
    ``budget_s``, ``box_policy``, ``allow_final_answer_line``, ``rules``), plus:

    * ``max_turns`` (default 6): agent messages per episode, the answer included.
    * ``max_calls_per_turn`` (default 4): tool calls run per message; more get an error.
    * ``sandbox`` (``"local"`` or ``"docker"``), ``sandbox_timeout_s`` (10),
      ``sandbox_memory_mb`` (1024), ``max_output_chars`` (4000).

    ## Version History
    * v1: scored by the v1 rules of :class:`~rollgym.envs.math.env.MathEnv` (relations,
      several values, percentages, exact decimals, a 10 s budget per response; the
      ``printed_answer`` evidence shares that budget).
    * v0: initial release (kept to reproduce its results). In both versions
      ``info["verified"]`` became a bool with the evidence moved to
      ``details["verification"]``; tasks and rewards are unchanged, so the ids stay.
      Later, in both versions, ``verified`` stopped trusting the agent's printout alone
      (printing a guess and boxing it had counted as verified): the code is re-run with a
      problem number changed, as above, and the evidence's ``method`` became
      ``"python_rerun"``. Tasks and rewards are again unchanged.
      Later still (issue 41), in both versions: templated rows are checked on fresh instances
      (``method="fresh_instance"``), and elsewhere code that writes a number other than
      the problem's (or one off one), 0 and 1 is not verified (``print(992 + 7)`` had
      passed). Tasks and rewards are unchanged.
    """

    default_env_id = "MATH500Tool-v1"

    tool = True

    def __init__(
        self,
        dataset: str | None = "math500",
        *,
        max_turns: int = 6,
        max_calls_per_turn: int = 4,
        sandbox: str = "local",
        sandbox_timeout_s: float = 10.0,
        sandbox_memory_mb: int = 1024,
        max_output_chars: int = 4000,
        **options: Any,
    ) -> None:
        self.tool_config = MathToolConfig(
            max_turns=max_turns, max_calls_per_turn=max_calls_per_turn, sandbox=sandbox,
            sandbox_timeout_s=sandbox_timeout_s, sandbox_memory_mb=sandbox_memory_mb, max_output_chars=max_output_chars,
        )
        self.max_output_chars = max_output_chars
        self.limits = Limits(
            wall_s=float(sandbox_timeout_s),
            cpu_s=max(1, int(sandbox_timeout_s)),
            mem_mb=int(sandbox_memory_mb),
            max_output_bytes=4 * max_output_chars,  # UTF-8: at most 4 bytes a character
            disk_mb=16,
            max_files=1024,
        )
        self.max_turns = max_turns
        self.max_calls_per_turn = max_calls_per_turn
        self.sandbox_backend = sandbox
        super().__init__(dataset, **options)  # the options of MathProblemEnv, listed under Arguments
        # built once the problems are known to load, so that a machine without the required isolation
        # fails here, not in step(); local envs share one warm sandbox pool per configuration, with sympy
        # imported ahead
        if sandbox == "local":
            self._sandbox: Any = shared_sandbox(self.limits, pool_size=1, preload=("sympy",))
        else:
            self._sandbox = make_sandbox(sandbox, self.limits)
        self._turns = 0
        self._runs: list[tuple[str, RunResult]] = []

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The OpenAI function schema of the ``python`` tool."""
        return [PYTHON_TOOL]

    @property
    def sandbox(self) -> Any:
        """The sandbox that runs tool code (:class:`rollgym.sandbox.Sandbox`, or the Docker one)."""
        return self._sandbox

    def _start(self, task: Task) -> str:
        self._turns = 0
        self._runs = []
        return f"{task.prompt}\n\n{tool_instruction(self.max_calls_per_turn * (self.max_turns - 1))}"

    def _advance(self, action: str) -> StepResult:
        assert self.task is not None
        self._turns += 1
        parsed = parse_tool_calls(action)
        if not parsed.found:
            return self._answer(action)
        if self._turns >= self.max_turns:
            info = {
                "reward": 0.0,
                "correct": False,
                "parsed": None,
                "error": "turn_limit",
                "details": {"turns": self._turns, "verification": self._evidence(None)},
                "verified": False,
            }
            return f"Turn limit ({self.max_turns}) reached without a final answer.", 0.0, False, True, info
        responses: list[str] = []
        results: list[dict[str, Any]] = []
        for error in parsed.errors:
            responses.append(format_tool_response("python", f"error: {error.message}"))
            results.append({"error": error.message})
        for i, call in enumerate(parsed.calls):
            if i >= self.max_calls_per_turn:
                message = f"error: at most {self.max_calls_per_turn} tool calls per message; this one was not run"
                responses.append(format_tool_response(call.name, message))
                results.append({"error": "too_many_calls"})
                continue
            text, result = self._call(call)
            responses.append(format_tool_response(call.name, text))
            results.append(result)
        return "\n".join(responses), 0.0, False, False, {"tool_results": results}

    def _call(self, call: ToolCall) -> tuple[str, dict[str, Any]]:
        if call.name != "python":
            return f"error: unknown tool {call.name!r}; the only tool is 'python'", {"error": "unknown_tool"}
        code = call.arguments.get("code")
        extra = set(call.arguments) - {"code"}
        if not isinstance(code, str) or extra:
            message = "error: python takes exactly one argument, 'code', a string of Python source"
            return message, {"error": "bad_arguments"}
        result = self.sandbox.run_python(code)
        self._runs.append((code, result))
        summary = {
            "ok": result.ok,
            "exit_code": result.exit_code,
            "timed_out": result.timed_out,
            "duration_s": round(result.elapsed_s, 4),
            "label": result.label,
            "exception": result.exception,
        }
        if result.error is not None:
            summary["error"] = result.error
        return result.as_text(self.max_output_chars), summary

    def _answer(self, action: str) -> StepResult:
        assert self.task is not None
        text = _TOOL_BLOCK_RE.sub(" ", action)
        try:
            score = self.verify(self.task, text)
        except Exception as exc:  # a verifier bug must not crash a training run
            score = Score.fail("verifier_error", exception=f"{type(exc).__name__}: {exc}")
        evidence = self._evidence(score.parsed)
        info = score.to_info()
        info["details"] = {**info["details"], "verification": evidence}
        info["verified"] = bool(evidence["computed_calls"])
        return "", score.reward, True, False, info

    def _evidence(self, answer: str | None) -> dict[str, Any]:
        """What the tool runs say about ``answer``: did code print it, and was it computed from the problem?

        See :mod:`rollgym.envs.math.evidence` for the rule; ``info["verified"]`` is ``bool(computed_calls)``.
        """
        successful = [i for i, (_, r) in enumerate(self._runs) if r.ok]
        evidence: dict[str, Any] = {
            "method": "python_rerun",
            "calls": len(self._runs),
            "successful_calls": len(successful),
            "code_ran": bool(successful),
            "printed_answer": False,
            "matching_calls": [],
            "computed_calls": [],
            "reruns": [],
            "foreign_numbers": [],
        }
        if not answer or not successful:
            return evidence
        max_chars = self.verify_config.max_answer_chars
        pairs: list[tuple[str, str]] = []
        owners: list[int] = []
        for i in successful:
            for line in printed_lines(self._runs[i][1].stdout, max_chars):
                pairs.append((answer, line))
                owners.append(i)
        try:
            verdicts = self._equal(pairs)
            matches = sorted({owners[k] for k, eq in enumerate(verdicts) if eq})
            evidence["printed_answer"] = bool(matches)
            evidence["matching_calls"] = matches
            instances = self._fresh_instances()
            if matches and instances:
                evidence["method"] = "fresh_instance"
                evidence.update(fresh_instance_evidence(self._runs, matches, answer, instances, self.sandbox,
                                                        self._equal, max_chars))
            elif matches:
                problem = self.task.prompt if self.task is not None else ""
                evidence.update(rerun_evidence(self._runs, matches, answer, problem, self.sandbox, self._equal,
                                               max_chars))
        except Exception as exc:  # evidence is advisory; it must never break the episode
            evidence["error"] = f"{type(exc).__name__}: {exc}"[:200]
        return evidence

    def _fresh_instances(self) -> tuple[FreshInstance, ...]:
        """Fresh instances of the current task's template (empty unless its row is templated)."""
        lookup = getattr(self.source, "fresh_instances", None)
        return tuple(lookup(self.task)) if self.task is not None and callable(lookup) else ()

    def _equal(self, pairs: list[tuple[str, str]]) -> list[bool]:
        verdicts = answers_equal_many(pairs, self.verify_config, budget_s=self.verify_config.budget_s)
        return [v.correct for v in verdicts]

    def close(self) -> None:
        if self.sandbox_backend != "local":  # the local pool is shared by every env of this process
            self._sandbox.close()
        super().close()
