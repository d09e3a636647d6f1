"""Validate generated terminal tasks: the oracle's solution passes, the wrong one and doing nothing fail.

Each solution runs on the task's starting files in a sandbox session emptied first
(``Job(fresh=True)``: files, ``/tmp`` and every process of the run before are gone), then the
task's checks (:func:`.checks.check_spec`) grade the session, exactly as the env grades an agent.
"""

from __future__ import annotations

from dataclasses import dataclass

from rollgym.core.task import Score
from rollgym.envs.code.terminal.env import SESSION_LIMITS
from rollgym.envs.code.terminal_gen.checks import check_spec, starting_files
from rollgym.envs.code.terminal_gen.spec import Spec
from rollgym.sandbox import Job, Sandbox, Session


@dataclass(frozen=True)
class Validation:
    """How one task's solutions scored."""

    kind: str
    oracle: Score
    wrong: Score
    empty: Score

    @property
    def valid(self) -> bool:
        """The oracle passes; the wrong solution and doing nothing both fail."""
        return self.oracle.correct and not self.wrong.correct and not self.empty.correct


class Validator:
    """Grades solutions of generated terminal tasks in one reused sandbox session (a new one if it breaks)."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.session: Session | None = None

    def grade(self, spec: Spec, commands: str | None) -> Score:
        """Run ``commands`` (``None``: nothing) on the task's starting files, then check the state."""
        if self.session is None or self.session.run(Job(fresh=True)).error:
            self.close()
            self.session = self.sandbox.session(SESSION_LIMITS)
        self.session.write_files(starting_files(spec))
        if commands is not None:
            self.session.run_command(["bash", "-c", commands], limits=SESSION_LIMITS)
        return check_spec(self.session, spec)

    def validate(self, spec: Spec) -> Validation:
        """The oracle, wrong and empty solutions of one task, graded."""
        return Validation(spec["kind"], self.grade(spec, spec["solution"]), self.grade(spec, spec["wrong"]),
                          self.grade(spec, None))

    def close(self) -> None:
        """Close the session."""
        if self.session is not None:
            self.session.close()
            self.session = None
