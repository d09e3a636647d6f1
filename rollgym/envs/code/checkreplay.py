"""Record a hidden ``check`` against the reference, and replay it on a candidate's recorded answers.

Standard library only: this source runs in the sandbox, after :mod:`rollgym.envs.code.harness`
(``encode``/``decode``), in runs that never contain a candidate's code.

* :func:`record_main` runs each problem's ``check(candidate)`` with the *reference*
  solution behind a recorder: every call's arguments and the reference's return
  value are written down, with ``random`` seeded so that randomized checks draw the
  same inputs every time. Those arguments are what a candidate is later called with
  (in another run, without the check).
* :func:`replay_main` runs the same ``check`` again with a stand-in ``candidate``
  that returns, call by call, the values the candidate's run claimed (plain built-in
  values decoded by the host: no object of the candidate's reaches the check). The
  check's own asserts (tolerances, ``is True``, property checks such as
  ``abs(poly(xs, x)) < 1e-4``) then decide, exactly as HumanEval's harness would,
  but out of the candidate's reach. A replay whose check asks for other arguments
  than were recorded stops as ``"diverged"``.
"""

from __future__ import annotations

import json
import random
import signal
import sys
import time
from typing import Any

CHECK_TIMEOUT_S = 20.0


class _CheckTimeout(BaseException):
    pass


class _Diverged(BaseException):
    pass


class CandidateError(Exception):
    """Raised by the stand-in where the candidate's own call raised."""


def _alarm(signum: int, frame: Any) -> None:
    raise _CheckTimeout()


def _load(program: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "__check__"}
    exec(compile(program, "<check>", "exec"), namespace)
    return namespace


def _recorder(reference: Any, line: dict[str, Any], calls: list[Any], outputs: list[Any]) -> Any:
    """A stand-in for the reference that writes down each call's arguments and the reference's answer."""
    encode = globals()["encode"]

    def recorder(*args: Any, **kwargs: Any) -> Any:
        before = [[encode(a) for a in args], {k: encode(v) for k, v in kwargs.items()}]
        value = reference(*args, **kwargs)
        after = [[encode(a) for a in args], {k: encode(v) for k, v in kwargs.items()}]
        line["mutates"] = line["mutates"] or after != before
        calls.append(before)
        outputs.append(encode(value))
        return value

    return recorder


def record_main(offset: int = 0, spec_path: str = "problems.json", out_path: str = "recorded.jsonl") -> None:
    """Write one line per problem: its calls, the reference's outputs, whether ``check`` passed, and
    the seconds it took (``"t"``, a hint for scheduling the candidates' runs).
    (``offset``: unused; the lines are keyed by each problem's ``key``.)"""
    signal.signal(signal.SIGALRM, _alarm)
    with open(spec_path, encoding="utf-8") as f:
        problems = json.load(f)
    out = open(out_path, "w", encoding="utf-8")
    for problem in problems:
        calls: list[Any] = []
        outputs: list[Any] = []
        line: dict[str, Any] = {"key": problem["key"], "mutates": False}
        try:
            namespace = _load(problem["program"])
            recorder = _recorder(namespace[problem["entry_point"]], line, calls, outputs)
            random.seed(0)
            signal.setitimer(signal.ITIMER_REAL, CHECK_TIMEOUT_S)
            start = time.perf_counter()
            try:
                namespace["check"](recorder)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            line.update(ok=True, calls=calls, outputs=outputs, t=round(time.perf_counter() - start, 4))
        except BaseException as exc:
            line.update(ok=False, exc=f"{type(exc).__name__}: {exc}"[:300], calls=calls, outputs=outputs)
        out.write(json.dumps(line) + "\n")
        out.flush()
    out.close()


def _replay(code: Any, entry: dict[str, Any], mode: int) -> tuple[str, str | None, int]:
    decode = globals()["decode"]
    encode = globals()["encode"]
    recorded, reference, answers = entry["calls"], entry["reference"], entry["outputs"]
    counter = [0]

    def candidate(*args: Any, **kwargs: Any) -> Any:
        index = counter[0]
        counter[0] += 1
        asked = [[encode(a) for a in args], {k: encode(v) for k, v in kwargs.items()}]
        if index >= len(recorded) or asked != recorded[index]:
            raise _Diverged()
        answer = answers[index] if mode < 0 or mode == index else reference[index]
        if answer[0] == "!":
            raise CandidateError(answer[1])
        return decode(answer)

    namespace: dict[str, Any] = {"__name__": "__check__"}
    exec(code, namespace)
    random.seed(0)
    signal.setitimer(signal.ITIMER_REAL, CHECK_TIMEOUT_S)
    try:
        namespace["check"](candidate)
        return "pass", None, counter[0] - 1
    except _Diverged:
        return "diverged", None, counter[0] - 1
    except _CheckTimeout:
        return "timeout", None, counter[0] - 1
    except BaseException as exc:
        return "fail", type(exc).__name__, counter[0] - 1
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def replay_main(offset: int = 0, spec_path: str = "replays.json", out_path: str = "replayed.jsonl") -> None:
    """Write one line per (sample, mode): ``"pass"``, ``"fail"`` (with the exception), ``"diverged"`` or
    ``"timeout"``, and the index of the last call the check made. Mode ``-1`` uses every claimed answer;
    mode ``i`` uses the claimed answer of call ``i`` and the reference's for the others. ``offset`` is added
    to the sample numbers (a part of a larger spec)."""
    signal.signal(signal.SIGALRM, _alarm)
    sys.setrecursionlimit(10_000)
    with open(spec_path, encoding="utf-8") as f:
        entries = json.load(f)
    out = open(out_path, "w", encoding="utf-8")
    compiled: dict[str, Any] = {}
    for number, entry in enumerate(entries):
        program = entry["program"]
        if program not in compiled:
            compiled[program] = compile(program, "<check>", "exec")
        for mode in entry["modes"]:
            try:
                verdict, exc, at = _replay(compiled[program], entry, mode)
            except BaseException as error:  # the check itself failed to load
                verdict, exc, at = "error", type(error).__name__, -1
            out.write(json.dumps({"s": offset + number, "m": mode, "r": verdict, "exc": exc, "at": at}) + "\n")
            out.flush()
    out.close()
