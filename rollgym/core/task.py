"""The two value types every family shares: :class:`Task` and :class:`Score`."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Task:
    """One problem instance.

    Attributes:
        id: Stable identifier, the same across runs, machines and releases of one env version.
        env_id: The registered env id the task belongs to, e.g. ``"Countdown-v0"``.
        prompt: The text the agent sees first.
        answer: The hidden ground truth; never put into an observation.
        meta: Facts that really describe the instance (difficulty, generator parameters).

    Example:
        >>> t = Task("demo:0", "Countdown-v0", "Reach 10 with 2 5", {"target": 10}, {"n": 2})
        >>> Task.from_dict(t.to_dict()) == t
        True
    """

    id: str
    env_id: str
    prompt: str
    answer: Any
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict of the task."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Task:
        """Build a task from :meth:`to_dict` output."""
        return cls(
            id=str(data["id"]),
            env_id=str(data["env_id"]),
            prompt=str(data["prompt"]),
            answer=data.get("answer"),
            meta=dict(data.get("meta") or {}),
        )


@dataclass(frozen=True)
class Score:
    """The verdict of a verifier on one response.

    Attributes:
        reward: The main reward, a float; binary correctness unless the env documents otherwise.
        correct: Whether the response solves the task.
        parsed: What was extracted from the response (JSON-ready), or ``None``.
        error: Why the response failed, e.g. ``"no_answer"``, ``"malformed"``, ``"illegal"``;
            ``None`` when it parsed (a wrong but well-formed answer has ``error="wrong"``).
        details: Extra, named measurements such as opt-in partial credit.
    """

    reward: float
    correct: bool
    parsed: Any = None
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        reward = float(self.reward)
        if not math.isfinite(reward):
            raise ValueError(f"Score.reward must be a finite float, got {self.reward!r}")
        object.__setattr__(self, "reward", reward)
        object.__setattr__(self, "correct", bool(self.correct))

    @classmethod
    def fail(cls, error: str, parsed: Any = None, **details: Any) -> Score:
        """A zero-reward score that records why the response failed."""
        return cls(reward=0.0, correct=False, parsed=parsed, error=error, details=details)

    @classmethod
    def success(cls, parsed: Any = None, **details: Any) -> Score:
        """A reward-1 score for a correct response."""
        return cls(reward=1.0, correct=True, parsed=parsed, error=None, details=details)

    def to_info(self) -> dict[str, Any]:
        """The score's fields as they appear in a step's ``info`` dict."""
        return {
            "reward": self.reward,
            "correct": self.correct,
            "parsed": self.parsed,
            "error": self.error,
            "details": dict(self.details),
        }

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict of the score."""
        return self.to_info()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Score:
        """Build a score from :meth:`to_dict` output."""
        return cls(
            reward=float(data["reward"]),
            correct=bool(data["correct"]),
            parsed=data.get("parsed"),
            error=data.get("error"),
            details=dict(data.get("details") or {}),
        )
