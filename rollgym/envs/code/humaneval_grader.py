"""``HumanEvalGrader``: HumanEval's hidden ``check`` decides, out of the candidate's reach.

Three kinds of sandbox run, never mixing the candidate with the check or the reference (the
trusted runs, 1 and 3, go to sandboxes of their own that never run a candidate, before or after:
``CodeRunner.run(..., trusted=True)``):

1. **record** (once per problem and process; trusted code only): ``check`` runs against the
   canonical solution behind a recorder, which writes down each call's arguments and the
   reference's return value (:func:`rollgym.envs.code.checkreplay.record_main`).
2. **call** (one per sample, in a kept sandbox emptied first): the candidate's program is
   loaded and its function is called on the recorded arguments; each return value is
   encoded with type tags (:mod:`rollgym.envs.code.harness`). The run holds no test, no
   expected value and no reference.
3. **replay** (one per batch; no candidate code): where a candidate's answers differ from
   the reference's, ``check`` runs again with a stand-in that returns the candidate's
   answers as plain values, so HumanEval's own asserts and tolerances decide.

On the host, every answer must also have the reference's types (``bool`` is not ``int``,
a tuple is not a list; an ``int`` may stand for a ``float``): HumanEval's own harness
would accept ``6.0`` for ``6``; rollgym does not. A sample scores 1 only if every call
returned in time, every answer has the right types, and the check passes.
"""

from __future__ import annotations

import functools
import json
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rollgym.core.seeding import content_digest
from rollgym.core.task import Score, Task
from rollgym.envs.code.harness import conforms, kind
from rollgym.envs.code.program import build_program, extract_code
from rollgym.envs.code.runner import (
    BROKE_SANDBOX,
    HARNESS_SOURCE,
    MAX_CALLS,
    SANDBOX_ERROR,
    CallOutcome,
    CodeRunner,
    Stage,
    call_job,
    code_runner,
    parse_outcome,
    sandbox_failure,
)
from rollgym.sandbox import Job, Limits, RunResult

REPLAY_SOURCE = Path(__file__).with_name("checkreplay.py").read_text(encoding="utf-8").replace(
    "from __future__ import annotations\n", ""
)
TRUSTED_LIMITS = Limits(wall_s=600, cpu_s=600, mem_mb=2048, max_output_bytes=1 << 16)
MAX_DETAIL_REPLAYS = 16
LOAD_ERRORS = {"SyntaxError": "syntax_error", "IndentationError": "syntax_error", "TabError": "syntax_error",
               "missing_function": "missing_function", "Timeout": "timeout", BROKE_SANDBOX: BROKE_SANDBOX}
TRUSTED_PRELUDE = f"{HARNESS_SOURCE}\n{REPLAY_SOURCE}\n"  # encode/decode, then record and replay


@dataclass(frozen=True)
class Recording:
    """The hidden calls of one problem: arguments, the reference's answers, and whether its check passed."""

    key: str
    calls: list[Any]
    outputs: list[Any]
    ok: bool
    mutates: bool
    error: str | None = None
    seconds: float = 0.0  # how long the reference's check took: what a candidate's calls may take


_recordings: dict[str, Recording] = {}
_recordings_lock = threading.Lock()


def problem_key(task: Task) -> str:
    """What identifies a problem's hidden tests: a digest of prompt, entry point, solution and check."""
    answer = task.answer or {}
    return content_digest(
        task.meta["code_prompt"], task.meta["entry_point"], answer["canonical_solution"], answer["test"], length=16
    )


def _trusted_jobs(runner: CodeRunner, main: str, spec_name: str, spec: list[Any], out_name: str) -> list[Job]:
    """Jobs that run trusted code (record or replay; never a candidate's) on ``spec``, in parts. Each
    output line's ``"s"`` (an index into ``spec``) is kept global.

    Several parts per sandbox, each its own round trip: a sandbox that finishes a part takes the next,
    so one slow problem (a reference that takes a tenth of a second) does not hold up the others."""
    parts = max(1, min(8 * runner.workers, len(spec)))
    size = -(-len(spec) // parts)
    return [Job.python(f"{main}({first})\n", prelude=TRUSTED_PRELUDE, audit_hook=False, limits=TRUSTED_LIMITS,
                       files={spec_name: json.dumps(spec[first : first + size])}, return_files=(out_name,), echo=False)
            for first in range(0, len(spec), size)]


def _trusted_lines(result: RunResult, main: str, out_name: str) -> list[dict[str, Any]]:
    """The output lines of one trusted run; :class:`RuntimeError` if it failed."""
    if result.error is not None or not result.ok:
        raise RuntimeError(f"the {main} run failed: {result.error or result.label}: {result.stderr[-500:]}")
    text = result.files.get(out_name, b"").decode("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _trusted(runner: CodeRunner, main: str, spec_name: str, spec: list[Any], out_name: str) -> list[dict[str, Any]]:
    """Run trusted code on ``spec`` over the runner's sandboxes (:func:`_trusted_jobs`); the output lines."""
    jobs = _trusted_jobs(runner, main, spec_name, spec, out_name)
    results = runner.run(jobs, batch=1, trusted=True)
    return [line for result in results for line in _trusted_lines(result, main, out_name)]


def _record_spec(missing: dict[str, Task]) -> list[dict[str, Any]]:
    return [
        {
            "key": key,
            "program": f"{t.meta['code_prompt']}{t.answer['canonical_solution']}\n\n{t.answer['test']}\n",
            "entry_point": t.meta["entry_point"],
        }
        for key, t in missing.items()
    ]


def _keep(line: dict[str, Any]) -> Recording:
    """Store one recorded problem (process-wide) and return it."""
    recording = Recording(line["key"], line["calls"], line["outputs"], bool(line["ok"]), bool(line["mutates"]),
                          line.get("exc"), float(line.get("t", 0.0)))
    with _recordings_lock:
        _recordings[recording.key] = recording
    return recording


class HumanEvalGrader:
    """Grades HumanEval completions in batches; see the module docstring for how.

    Args:
        runner: Where code runs (default: the process-wide runner of these limits).
        call_timeout_s: Seconds one call of the candidate's function may take.
        timeout_s: Seconds one sample's run may take in all (loading, every call).
        mem_mb: Address space of the candidate's process.

    Example:
        >>> grader = HumanEvalGrader()  # doctest: +SKIP
        >>> grader.grade([(task, "```python\\n...\\n```")])[0].correct  # doctest: +SKIP
        True
    """

    def __init__(
        self,
        runner: CodeRunner | None = None,
        *,
        call_timeout_s: float = 3.0,
        timeout_s: float = 10.0,
        mem_mb: int = 1024,
        require_code_block: bool = False,
    ) -> None:
        self.limits = Limits(wall_s=timeout_s, cpu_s=timeout_s, mem_mb=mem_mb, max_output_bytes=8192)
        self.runner = runner or code_runner(Limits(disk_mb=64, max_files=4096))
        self.call_timeout_s = call_timeout_s
        self.require_code_block = require_code_block

    # -- recordings -------------------------------------------------------------------------------
    def recordings(self, tasks: Sequence[Task]) -> list[Recording]:
        """The hidden calls of each task, recorded once per process (one sandbox run for all missing)."""
        keys = [problem_key(t) for t in tasks]
        with _recordings_lock:
            missing = {k: t for k, t in zip(keys, tasks) if k not in _recordings}
        if missing:
            for line in _trusted(self.runner, "record_main", "problems.json", _record_spec(missing), "recorded.jsonl"):
                _keep(line)
        with _recordings_lock:
            return [_recordings[k] for k in keys]

    # -- grading ----------------------------------------------------------------------------------
    def program(self, task: Task, response: str) -> str | None:
        """The program a response gives for ``task`` (prompt and extracted code), or ``None`` without code."""
        code = extract_code(response, require_block=self.require_code_block)
        return None if code is None else build_program(task.meta["code_prompt"], code, task.meta["entry_point"])

    def grade(self, items: Sequence[tuple[Task, str]], *, details: bool = True) -> list[Score]:
        """Scores of ``(task, response)`` pairs, in order; never raises on a response.

        ``details=False`` skips the per-call replays that only name which tests failed.
        """
        programs = [self.program(task, text) for task, text in items]
        return self.grade_programs([(task, p) for (task, _), p in zip(items, programs)], details=details)

    def grade_programs(self, items: Sequence[tuple[Task, str | None]], *, details: bool = True) -> list[Score]:
        """Scores of ``(task, whole program)`` pairs (``None``: no code was found)."""
        scores: list[Score | None] = [None] * len(items)
        runnable = [i for i, (_, program) in enumerate(items) if program is not None]
        for i, (_, program) in enumerate(items):
            if program is None:
                scores[i] = Score.fail("no_code", reason="no code found in the response")
        keys = {i: problem_key(items[i][0]) for i in runnable}
        waiting: dict[str, list[int]] = {}
        for i in runnable:
            waiting.setdefault(keys[i], []).append(i)
        with _recordings_lock:
            known = {k: _recordings[k] for k in waiting if k in _recordings}
            missing = {k: items[ids[0]][0] for k, ids in waiting.items() if k not in known}
        recs: dict[int, Recording] = {}
        outcomes: dict[int, CallOutcome] = {}
        lock = threading.Lock()

        def calls(ready: list[Recording]) -> list[Stage]:
            """The call jobs of the samples whose problems are recorded now, in round trips of the runner's size."""
            work = []
            for rec in ready:
                for i in waiting.get(rec.key, []):
                    if not rec.ok:
                        reason = f"the reference fails its own check: {rec.error}"
                        scores[i] = Score.fail("verifier_error", reason=reason)
                        continue
                    recs[i] = rec
                    calls_ = rec.calls[:MAX_CALLS]
                    job, nonce = call_job(items[i][1] or "", items[i][0].meta["entry_point"], calls_, self.limits,
                                          self.call_timeout_s)
                    work.append((i, job, nonce, len(calls_)))
            size = self.runner.batch
            chunks = [work[k : k + size] for k in range(0, len(work), size)]
            return [Stage([job for _, job, _, _ in chunk], functools.partial(parsed, chunk),
                          sum(recs[i].seconds for i, _, _, _ in chunk) + 1e-3 * len(chunk)) for chunk in chunks]

        def parsed(chunk: list[tuple[int, Job, str, int]], results: list[RunResult]) -> list[Stage]:
            with lock:
                for (i, _, nonce, n), result in zip(chunk, results):
                    outcomes[i] = parse_outcome(result, nonce, n)
            return []

        def recorded(results: list[RunResult]) -> list[Stage]:
            return calls([_keep(line) for line in _trusted_lines(results[0], "record_main", "recorded.jsonl")])

        record = _trusted_jobs(self.runner, "record_main", "problems.json", _record_spec(missing), "recorded.jsonl") \
            if missing else []
        # the recording first (it unlocks the rest), then the samples already recorded; each recorded part
        # queues its samples' calls while the other sandboxes go on
        recording = [Stage([job], recorded, math.inf, trusted=True) for job in record]
        self.runner.run_stages([*recording, *calls(list(known.values()))])
        work = [(i, recs[i]) for i in runnable if i in recs]
        judged = [_Judgement(rec, outcomes[i]) for i, rec in work]
        self._replay(items, work, judged, details)
        for (i, _), judgement in zip(work, judged):
            scores[i] = judgement.score(items[i][1])
        return [s if s is not None else Score.fail("verifier_error") for s in scores]

    def _replay(
        self, items: Sequence[tuple[Task, str | None]], work: list[tuple[int, Recording]],
        judged: list[_Judgement], details: bool,
    ) -> None:
        entries, owners = [], []
        for (i, rec), judgement in zip(work, judged):
            modes = judgement.replay_modes(details)
            if not modes:
                continue
            task = items[i][0]
            answers = [v if e is None else ["!", e] for v, e in zip(judgement.outcome.values, judgement.outcome.errors)]
            entries.append({
                "program": f"{task.meta['code_prompt']}\n\n{task.answer['test']}\n",
                "calls": rec.calls, "reference": rec.outputs, "outputs": answers, "modes": modes,
            })
            owners.append(judgement)
        if not entries:
            return
        for line in _trusted(self.runner, "replay_main", "replays.json", entries, "replayed.jsonl"):
            owners[line["s"]].replayed[line["m"]] = (line["r"], line.get("exc"), line.get("at", -1))


class _Judgement:
    """One sample's calls judged on the host: type checks now, check verdicts after the replay."""

    def __init__(self, rec: Recording, outcome: CallOutcome) -> None:
        self.rec = rec
        self.outcome = outcome
        self.failures: dict[int, tuple[str, str | None]] = {}
        self.differing: list[int] = []
        self.replayed: dict[int, tuple[str, str | None, int]] = {}
        if outcome.load != "ok":
            return
        for index, (value, error, expected) in enumerate(zip(outcome.values, outcome.errors, rec.outputs)):
            if error == "missing":
                self.failures[index] = ("not_run", None)
            elif error == "Timeout":
                self.failures[index] = ("timeout", None)
            elif error == "UnencodableResult" or (error is None and kind(value) == "?"):
                self.failures[index] = ("wrong_type", value[1] if error is None else None)
            elif error is not None:
                self.failures[index] = ("exception", error)
            elif not conforms(value, expected):
                self.failures[index] = ("wrong_type", None)
            elif value != expected:
                self.differing.append(index)

    def replay_modes(self, details: bool) -> list[int]:
        if self.outcome.load != "ok" or not self.differing:
            return []
        modes = [] if self.failures else [-1]
        if details or self.failures:
            modes += self.differing[: MAX_DETAIL_REPLAYS if details else 0]
        return modes

    def score(self, program: str | None) -> Score:
        outcome, n = self.outcome, len(self.rec.calls)
        run_label = outcome.run
        if outcome.load == SANDBOX_ERROR:
            return sandbox_failure(outcome, program, n)
        if outcome.load != "ok":
            if outcome.load == "no_result":
                error = "timeout" if run_label == "timeout" else "output_limit" if run_label == "output" else "crashed"
            else:
                error = LOAD_ERRORS.get(outcome.load, "load_error")
            return Score.fail(error, parsed=program, tests=n, passed=0, exception=outcome.load, run=run_label)
        failures = dict(self.failures)
        for index in self.differing:
            verdict = self.replayed.get(index)
            if verdict is not None and verdict[0] != "pass":
                failures[index] = _replay_failure(verdict)
        overall = self.replayed.get(-1)
        passed_all = not failures and (not self.differing or (overall is not None and overall[0] == "pass"))
        unknown = [i for i in self.differing if i not in self.replayed and i not in failures]
        details: dict[str, Any] = {
            "tests": n,
            "passed": n - len(failures) - len(unknown) if not passed_all else n,
            "failed": sorted(failures)[:50],
            "failures": [{"test": i, "reason": r, "exception": e} for i, (r, e) in sorted(failures.items())[:10]],
            "timeouts": sum(1 for r, _ in failures.values() if r in ("timeout", "not_run")),
            "run": run_label,
        }
        if passed_all:
            return Score.success(parsed=program, **details)
        if not failures and overall is not None:  # every answer alone is fine, together they are not
            failures[overall[2]] = _replay_failure(overall)
            details["failed"] = sorted(failures)[:50]
        reasons = {r for r, _ in failures.values()}
        for error in ("timeout", "not_run", "wrong_type", "exception", "wrong_answer"):
            if error in reasons:
                label = error
                if error == "not_run":  # the run ended before these calls reported
                    label = {"timeout": "timeout", "cpu": "timeout", "output": "output_limit"}.get(
                        run_label or "", "crashed")
                return Score.fail(label, parsed=program, **details)
        return Score.fail("wrong_answer", parsed=program, **details)


def _replay_failure(verdict: tuple[str, str | None, int]) -> tuple[str, str | None]:
    """A failed replay as a failure reason. A check that asks for calls that were not recorded
    ("diverged") does so only after an answer differed, e.g. an assert message that calls the
    function again; it is a wrong answer. A check that ran out of time is labelled so."""
    if verdict[0] == "timeout":
        return "timeout", "check"
    if verdict[0] == "diverged":
        return "wrong_answer", "diverged"
    return "wrong_answer", verdict[1]
