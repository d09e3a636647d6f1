"""Verification signals for verification-aware voting (T^3RL): the env's own, or a tool check of a candidate.

An env that can check an answer with a tool says so in its terminal ``info``:
``info["verified"]`` is a bool (``True``: tool evidence supports the final answer)
and ``info["details"]["verification"]`` holds the evidence. ``MATH*Tool`` sets it
when code that ran successfully in the sandbox printed the final answer and either (a templated
row) printed the answers of hidden fresh instances when re-run with their numbers, or (other rows)
wrote no number but the problem's (or one off), 0 and 1 and lost the answer when re-run with a problem number
changed (:mod:`rollgym.envs.math.evidence`);
``Search``/``SearchQA`` when the answer appears in a passage a tool returned.

For envs that cannot verify (single-turn MATH, any env without tools), a
:class:`Verifier` checks a candidate after the fact. It is any callable
``verifier(traj, group) -> bool | None`` (``None``: no opinion); :class:`CodeCheckVerifier`
is the T^3RL verifier: a checker (a function or an agent) writes a Python program
for the rollout, rollgym's sandbox runs it, and the rollout is verified when a
successful run printed, in one of its last lines, a value equal to its answer.

:func:`verdict` combines the two: the env's bool wins; otherwise the verifier's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Protocol

from rollgym.core.errors import ConfigError
from rollgym.rollout.types import RolloutGroup, Trajectory

MAX_EVIDENCE_LINES = 3
_CODE_BLOCK = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL | re.IGNORECASE)
_TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL | re.IGNORECASE)


class Verifier(Protocol):
    """Checks one rollout's answer with a tool: ``True`` verified, ``False`` not verified, ``None`` no opinion."""

    def __call__(self, traj: Trajectory, group: RolloutGroup) -> bool | None: ...


def env_verdict(traj: Trajectory) -> bool | None:
    """The env's typed signal, ``info["verified"]``, when it is a bool; ``None`` otherwise.

    Example:
        >>> env_verdict(Trajectory("t", "g", 0, "E-v0", "t", 0, info={"verified": True}))
        True
        >>> env_verdict(Trajectory("t", "g", 0, "E-v0", "t", 0, info={"verified": {"code_ran": True}})) is None
        True
    """
    value = traj.info.get("verified")
    return value if isinstance(value, bool) else None


def verdict(traj: Trajectory, group: RolloutGroup, verifier: Verifier | None = None) -> tuple[bool, str]:
    """Whether ``traj``'s answer is tool-verified, and by what (``"env"``, ``"verifier"`` or ``"none"``).

    The env's bool is used when present (it saw the tool runs of the episode itself); otherwise
    ``verifier`` is asked, and a verifier that raises counts as no verification.
    """
    own = env_verdict(traj)
    if own is not None:
        return own, "env"
    if verifier is None or not traj.usable:
        return False, "none"
    try:
        result = verifier(traj, group)
    except Exception:  # a broken checker must not break scoring; it simply verifies nothing
        return False, "verifier_error"
    return bool(result), "verifier" if result is not None else "none"


def code_from_reply(reply: str) -> str | None:
    """The Python source in a checker's reply: a ``python`` Hermes tool call, else the last fenced code block."""
    for block in reversed(_TOOL_CALL.findall(reply or "")):
        try:
            call = json.loads(block)
        except json.JSONDecodeError:
            continue
        if isinstance(call, dict) and call.get("name") == "python":
            code = (call.get("arguments") or {}).get("code")
            if isinstance(code, str):
                return code
    blocks = _CODE_BLOCK.findall(reply or "")
    return blocks[-1].strip("\n") if blocks else None


def _plain_equal(candidate: str, printed: str) -> bool:
    squash = lambda text: re.sub(r"\s+", "", text).strip("$.").lower()  # noqa: E731
    return bool(candidate) and squash(candidate) == squash(printed)


def math_equal(pairs: list[tuple[str, str]]) -> list[bool]:
    """Whether each ``(candidate, printed)`` pair is mathematically equal, by rollgym's MATH grader."""
    from rollgym.verifiers.math import MathVerifyConfig, answers_equal_many

    return [v.correct for v in answers_equal_many(pairs, MathVerifyConfig())]


class CodeCheckVerifier:
    """T^3RL's verifier: a checker writes a program for the rollout; it is verified when the program prints its answer.

    Args:
        checker: Writes the check. Either a function ``checker(traj, group, candidate) -> str | None`` that
            returns Python source, or an agent (``act(observation, info) -> str``, e.g. a
            :class:`~rollgym.agents.chat.ChatAgent`) that is shown the problem, the rollout's last message
            and the candidate, and answers with a ``python`` tool call or a fenced code block.
        answer_fn: The candidate answer of a rollout (default: the verifier-parsed answer, ``info["parsed"]``).
        equal: Compares ``(candidate, printed line)`` pairs; default :func:`math_equal` (rollgym's MATH
            grader), with plain string equality when the math extra is missing.
        sandbox: Anything with ``run_python(code)`` returning an object with ``ok`` and ``stdout``;
            default: rollgym's shared sandbox (``rollgym.sandbox``) with ``wall_s`` seconds a run.
        wall_s: Wall-clock limit of one check.

    Each distinct ``(task, candidate, rollout text)`` is checked once per verifier; the evidence of the
    last check of a rollout is kept in ``self.evidence[traj_id]``.
    """

    def __init__(self, checker: Any, *, answer_fn: Callable[[Trajectory], Any] | None = None,
                 equal: Callable[[list[tuple[str, str]]], list[bool]] | None = None, sandbox: Any = None,
                 wall_s: float = 10.0) -> None:
        if not (callable(checker) or callable(getattr(checker, "act", None))):
            raise ConfigError("checker must be a function (traj, group, candidate) -> code, or an agent with act().")
        self.checker = checker
        self.answer_fn = answer_fn
        self.equal = equal
        self.wall_s = float(wall_s)
        self._sandbox = sandbox
        self._cache: dict[tuple[str, str, str], bool] = {}
        self.evidence: dict[str, dict[str, Any]] = {}
        self.checks = 0

    @property
    def sandbox(self) -> Any:
        """The sandbox that runs checks (built on first use)."""
        if self._sandbox is None:
            from rollgym.sandbox import Limits, shared_sandbox

            self._sandbox = shared_sandbox(Limits(wall_s=self.wall_s, cpu_s=max(1, int(self.wall_s)), mem_mb=1024,
                                                  max_output_bytes=16_000, disk_mb=16, max_files=1024),
                                           pool_size=1, preload=("sympy",))
        return self._sandbox

    def _candidate(self, traj: Trajectory) -> str | None:
        if self.answer_fn is not None:
            value = self.answer_fn(traj)
        else:
            value = traj.info.get("parsed")
        return None if value is None else str(value)

    def _write(self, traj: Trajectory, group: RolloutGroup, candidate: str) -> str | None:
        if callable(getattr(self.checker, "act", None)):
            problem = group.task.prompt if group.task is not None else ""
            last = next((m["content"] for m in reversed(traj.messages) if m.get("role") == "assistant"), "")
            observation = (f"Check a candidate answer with Python.\n\nProblem:\n{problem}\n\nA solution ended:\n"
                           f"{last[-2000:]}\n\nCandidate answer: {candidate}\n\nWrite Python that computes the "
                           "answer independently and prints it on its last line.")
            reset = getattr(self.checker, "reset", None)
            if callable(reset):
                reset(seed=0)
            return code_from_reply(str(self.checker.act(observation, {"tools": []})))
        code = self.checker(traj, group, candidate)
        return code if isinstance(code, str) else None

    def __call__(self, traj: Trajectory, group: RolloutGroup) -> bool | None:
        """Check ``traj``'s answer; ``None`` when it has no answer to check."""
        candidate = self._candidate(traj)
        if not candidate:
            return None
        last = next((m["content"] for m in reversed(traj.messages) if m.get("role") == "assistant"), "")
        key = (traj.task_id or "", candidate, last)
        if key in self._cache:
            return self._cache[key]
        code = self._write(traj, group, candidate)
        evidence: dict[str, Any] = {"method": "code_check", "code_written": code is not None, "code_ran": False,
                                    "printed_answer": False}
        if code is not None:
            self.checks += 1
            run = self.sandbox.run_python(code)
            evidence["code_ran"] = bool(run.ok)
            if run.ok:
                lines = [ln.strip() for ln in str(run.stdout).splitlines() if ln.strip()][-MAX_EVIDENCE_LINES:]
                pairs = [(candidate, ln[:200]) for ln in lines]
                evidence["printed_answer"] = any(self._equal(pairs)) if pairs else False
        self.evidence[traj.traj_id] = evidence
        self._cache[key] = bool(evidence["printed_answer"])
        return self._cache[key]

    def _equal(self, pairs: list[tuple[str, str]]) -> list[bool]:
        if self.equal is not None:
            return list(self.equal(pairs))
        try:
            return math_equal(pairs)
        except ImportError:  # no sympy: exact text only
            return [_plain_equal(a, b) for a, b in pairs]
