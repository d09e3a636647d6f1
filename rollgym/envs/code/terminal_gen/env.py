"""``TerminalGenEnv``: thousands of generated shell tasks, seven categories, a bash tool, the final state checked."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Unpack

from rollgym.core.difficulty import Difficulty, Level
from rollgym.core.task import Score, Task
from rollgym.envs.code.config import choices
from rollgym.envs.code.terminal.env import SESSION_LIMITS, ShellToolEnv
from rollgym.envs.code.terminal_gen.checks import check_spec, starting_files
from rollgym.envs.code.terminal_gen.source import (
    ALL_KINDS,
    DEFAULT_ENV_ID,
    LEVELS,
    TerminalGenConfig,
    TerminalGenSource,
    spec_of,
)
from rollgym.envs.code.tool_env import ToolLoopOptions

_LEVEL_TEXT = ("3 files or cases per task, flat folders", "5 per task, look-alike names",
               "8 per task, subfolders and extra columns", "12 per task, names with spaces")


class TerminalGenEnv(ShellToolEnv):
    """TerminalGen: generated shell tasks over 21 kinds in 7 categories, checked on the final state.

    ## Description
    Each task gives starting files in a sandbox session and an instruction, as in ``Terminal-v0``,
    drawn from a fixed catalogue of 4,260 tasks: files (move, rename, deduplicate), text processing
    (count words, sum a CSV column, distinct values, replace, top address), permissions (exact
    modes, a private folder), archives (gzip in place, tar.gz of some files, one archive per
    folder), scripts (counts, a fixed-string grep, argument handling), processes (exit statuses,
    a runner that counts failures, a SIGTERM trap) and services (a TCP service on 127.0.0.1 in
    the sandbox's own network namespace). Every task's oracle solution passes its check and a
    plausible wrong one fails it (``bench/validate_terminal_gen.py`` runs all of them).

    ## Action Space
    ``TextSpace(1_000_000)``: ``<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>``
    blocks, or a message without a tool call to finish.

    ## Observation Space
    ``TextSpace(100_000)``: the task and the starting files; then tool responses; ``""`` at the end.

    ## Starting State
    ``reset(seed=s)`` draws a task of the split; ``options={"task_index": i, "split": ...,
    "difficulty": level}``. Splits: ``train`` (3,000), ``validation`` (280), ``test`` (280) draw the
    14 seen kinds, disjoint by content; ``test_unseen`` (700) draws only the 7 held-out kinds.

    ## Rewards
    0.0 on tool turns; 1.0 at the end if every check passes, else 0.0 (``error="check_failed"``,
    the failing check's reason in ``details``).

    ## Episode End
    ``terminated=True`` at a message without a tool call; ``truncated=True`` (reward 0) at the
    ``max_turns``-th message with tool calls.

    ## Information
    ``task_meta``: ``kind``, ``category``, ``level``, ``unseen``, ``difficulty``, ``config``.

    ## Arguments
    ``kinds`` (all 21), ``level`` (``None``: the four levels in turn), ``max_turns`` (16),
    ``max_calls_per_turn`` (4), ``max_output_chars`` (4000), ``split``, ``render_mode``.

    ## Version History
    * v0: initial release. Fixed in place (hack fixes; the oracle's scores are unchanged, the task ids and
      checks of ``trap_term`` and ``kv_service`` tasks changed): ``trap_term`` runs the script twice, signalled
      early and left unsignalled for 3 s, so a script that ignores SIGTERM and exits on a timer fails;
      ``kv_service`` changes the table between two rounds of requests, so a server that read it once fails.
    """

    default_env_id = DEFAULT_ENV_ID
    loop_defaults = ToolLoopOptions(max_turns=16)

    def __init__(
        self, *, kinds: Sequence[str] | str = ALL_KINDS, level: int | None = None, **loop: Unpack[ToolLoopOptions]
    ) -> None:
        self.gen_config = TerminalGenConfig(choices(kinds), level)
        self.config = self.gen_config
        self._open(TerminalGenSource(self.gen_config, self.default_env_id), loop)

    @property
    def difficulty(self) -> Difficulty:
        """Four levels: more files, cases and requests per task, then subfolders, look-alikes and spaces."""
        levels = tuple(Level(f"L{i}", {"level": i}, _LEVEL_TEXT[i]) for i in range(LEVELS))
        return Difficulty(levels, default=self.gen_config.level, grows="files, cases and distractors per task")

    def _level_source(self, env_id: str, level: Level) -> TerminalGenSource:
        return TerminalGenSource(replace(self.gen_config, **level.knobs), env_id)

    def _begin(self, task: Task) -> str:
        self.session = self.sandbox.session(SESSION_LIMITS)
        self.session.write_files(starting_files(spec_of(task)))
        return task.prompt

    def _grade(self, action: str) -> Score:
        assert self.task is not None and self.session is not None
        return check_spec(self.session, spec_of(self.task))
