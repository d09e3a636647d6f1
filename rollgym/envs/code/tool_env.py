"""``CodeToolEnv``: the multi-turn loop the code envs share (tool calls, turn limit, final message).

Each agent message either calls tools (Hermes ``<tool_call>`` blocks; results come
back as ``<tool_response>`` observations, reward 0) or, without any tool call,
ends the episode and is graded by :meth:`CodeToolEnv._finish`. The ``max_turns``-th
message that still calls tools ends the episode as truncated (reward 0,
``error="turn_limit"``; its calls run, nothing is graded).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar, TypedDict

from rollgym.core.env import StepResult, TaskSource, TextEnv
from rollgym.core.errors import ConfigError
from rollgym.core.task import Score, Task
from rollgym.core.toolcalls import ToolCall, format_tool_response, parse_tool_calls
from rollgym.envs.code.runner import failure_info


def tool_schema(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """An OpenAI function schema."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


def check_turns(max_turns: Any, max_calls_per_turn: Any) -> None:
    """:class:`ConfigError` unless both are sensible integers."""
    if isinstance(max_turns, bool) or not isinstance(max_turns, int) or not 1 <= max_turns <= 200:
        raise ConfigError(f"max_turns must be an integer from 1 to 200, got {max_turns!r}.")
    if (isinstance(max_calls_per_turn, bool) or not isinstance(max_calls_per_turn, int)
            or not 1 <= max_calls_per_turn <= 32):
        raise ConfigError(f"max_calls_per_turn must be an integer from 1 to 32, got {max_calls_per_turn!r}.")


class ToolLoopOptions(TypedDict, total=False):
    """The tool loop's keyword arguments, which every :class:`CodeToolEnv` takes (``**loop`` in a subclass)."""

    max_turns: int
    max_calls_per_turn: int
    max_output_chars: int
    split: str
    render_mode: str | None


class CodeToolEnv(TextEnv):
    """A text env whose agent uses tools until it sends a message without tool calls.

    A subclass takes its own arguments and ``**loop: Unpack[ToolLoopOptions]``, and passes
    ``**self.with_defaults(loop)`` on to :meth:`__init__`: :attr:`loop_defaults` holds its defaults where they
    differ from ``__init__``'s.
    """

    loop_defaults: ClassVar[ToolLoopOptions] = {}

    def __init__(
        self,
        source: TaskSource,
        /,
        *,
        max_turns: int = 12,
        max_calls_per_turn: int = 4,
        max_output_chars: int = 4000,
        split: str = "train",
        render_mode: str | None = None,
    ) -> None:
        check_turns(max_turns, max_calls_per_turn)
        if (isinstance(max_output_chars, bool) or not isinstance(max_output_chars, int)
                or not 100 <= max_output_chars <= 1_000_000):
            raise ConfigError(f"max_output_chars must be an integer from 100 to 1000000, got {max_output_chars!r}.")
        self.max_turns = max_turns
        self.max_calls_per_turn = max_calls_per_turn
        self.max_output_chars = max_output_chars
        self._turns = 0
        super().__init__(source, split=split, render_mode=render_mode)

    def with_defaults(self, loop: ToolLoopOptions) -> ToolLoopOptions:
        """The tool loop's arguments given, and this env's :attr:`loop_defaults` for those not given."""
        options: ToolLoopOptions = {**self.loop_defaults, **loop}
        return options

    @abstractmethod
    def _begin(self, task: Task) -> str:
        """Set up the episode's state; the first observation."""

    @abstractmethod
    def _call(self, call: ToolCall) -> tuple[str, dict[str, Any]]:
        """Run one tool call: the text for the agent and a summary for ``info``."""

    @abstractmethod
    def _grade(self, action: str) -> Score:
        """Grade the episode's end, given the final message."""

    def _end(self) -> None:
        """Release the episode's resources (a sandbox session...)."""

    def _start(self, task: Task) -> str:
        self._end()
        self._turns = 0
        return self._begin(task)

    def _clip(self, text: str) -> str:
        if len(text) <= self.max_output_chars:
            return text
        return text[: self.max_output_chars] + f"\n[output cut to {self.max_output_chars} characters]"

    def _advance(self, action: str) -> StepResult:
        self._turns += 1
        parsed = parse_tool_calls(action)
        if not parsed.found:
            return self._final(action, truncated=False)
        responses: list[str] = []
        results: list[dict[str, Any]] = []
        for error in parsed.errors:
            responses.append(format_tool_response("error", f"error: {error.message}"))
            results.append({"error": "malformed_call", "message": error.message})
        for i, call in enumerate(parsed.calls):
            if i >= self.max_calls_per_turn:
                text = f"error: at most {self.max_calls_per_turn} tool calls per message; this one was not run"
                responses.append(format_tool_response(call.name, text))
                results.append({"tool": call.name, "error": "too_many_calls"})
                continue
            try:
                text, summary = self._call(call)
            except Exception as exc:  # a tool bug must not crash a training run
                text, summary = f"error: the tool failed ({type(exc).__name__})", {"error": "tool_error"}
            responses.append(format_tool_response(call.name, self._clip(text)))
            results.append({"tool": call.name, **summary})
        if self._turns >= self.max_turns:
            observation, reward, _, _, info = self._final(action, truncated=True)
            return observation, reward, False, True, {**info, "tool_results": results}
        return "\n".join(responses), 0.0, False, False, {"tool_results": results, "turn": self._turns}

    def _final(self, action: str, *, truncated: bool) -> StepResult:
        if truncated:
            self._end()
            message = f"Turn limit ({self.max_turns}) reached; the episode ends without a submission."
            return message, 0.0, False, True, {**Score.fail("turn_limit").to_info(), "turn": self._turns}
        try:
            score = self._grade(action)
        except Exception as exc:  # a grader bug must not crash a training run
            score = Score.fail("verifier_error", exception=f"{type(exc).__name__}: {exc}")
        finally:
            self._end()
        return "", score.reward, True, False, failure_info({**score.to_info(), "turn": self._turns})

    def close(self) -> None:
        self._end()
        super().close()
