"""``RepoRepairEnv``: read, search, edit and test a small repository until its bug is fixed."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Unpack

from rollgym.core.difficulty import Difficulty, Level
from rollgym.core.env import TaskSource
from rollgym.core.task import Score, Task
from rollgym.core.toolcalls import ToolCall
from rollgym.envs.code.config import REPO_BUGS, REPO_LEVELS, RepoRepairConfig, choices, ladder
from rollgym.envs.code.repo_repair.source import DEFAULT_ENV_ID, RepoRepairSource
from rollgym.envs.code.runner import code_runner, judge_expected, run_calls
from rollgym.envs.code.tool_env import CodeToolEnv, ToolLoopOptions, tool_schema
from rollgym.sandbox import Job, Limits

SYSTEM_PROMPT = (
    "You are a software engineer fixing a bug in a Python repository. Use the tools to look around, edit the "
    "source and run the tests. When the bug is fixed, reply without a tool call."
)
_PATH = {"path": {"type": "string", "description": "A path relative to the repository root, e.g. app/stats.py."}}
TOOLS = [
    tool_schema("list_files", "List every file of the repository with its size.", {}, []),
    tool_schema("read_file", "Show a file with line numbers.", _PATH, ["path"]),
    tool_schema("search", "Find the lines that contain a text (plain text, not a regex).",
                {"text": {"type": "string"}}, ["text"]),
    tool_schema("replace_in_file", "Replace the one occurrence of old text with new text in a file.",
                {**_PATH, "old": {"type": "string"}, "new": {"type": "string"}}, ["path", "old", "new"]),
    tool_schema("write_file", "Create or overwrite a file.", {**_PATH, "content": {"type": "string"}},
                ["path", "content"]),
    tool_schema("delete_file", "Delete a file.", _PATH, ["path"]),
    tool_schema("run_tests", "Run the repository's tests (pytest) in a sandbox and show the result.", {}, []),
]
MAX_FILE_CHARS = 100_000
MAX_FILES = 200
TEST_LIMITS = Limits(wall_s=60, cpu_s=60, mem_mb=1024, nproc=16, max_output_bytes=32_768)


def changed_tests(original: dict[str, str], now: dict[str, str]) -> list[str]:
    """Test files (under ``tests/`` or named ``test_*.py``) added, removed or edited."""

    def is_test(path: str) -> bool:
        return path.startswith("tests/") or path.rsplit("/", 1)[-1].startswith(("test_", "conftest"))

    paths = {p for p in [*original, *now] if is_test(p)}
    return sorted(p for p in paths if original.get(p) != now.get(p))


class RepoToolEnv(CodeToolEnv):
    """A repository played with file tools (:data:`TOOLS`): the agent's copy of the files is ``self.files``.

    A subclass builds its task source and calls :meth:`_open` with it; its tasks hold the starting files in
    ``task.answer["files"]``; it runs the tests in :meth:`_tool_run_tests` and grades in ``_grade``.
    """

    loop_defaults = ToolLoopOptions(max_turns=20, max_output_chars=6000)

    def _open(self, source: TaskSource, disk_mb: int, max_files: int, loop: ToolLoopOptions) -> None:
        """A sandbox runner for the tests (``disk_mb`` and ``max_files`` per run), then the tool loop over
        ``source`` (this env's loop defaults under ``loop``)."""
        self.runner = code_runner(Limits(disk_mb=disk_mb, max_files=max_files))
        self.files: dict[str, str] = {}
        super().__init__(source, **self.with_defaults(loop))

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The repository tools."""
        return TOOLS

    def _begin(self, task: Task) -> str:
        self.files = dict(task.answer["files"])
        listing = "\n".join(sorted(self.files))
        return f"{task.prompt}\n\nFiles:\n{listing}\n\nYou have {self.max_turns} messages."

    def _call(self, call: ToolCall) -> tuple[str, dict[str, Any]]:
        args = call.arguments
        names = {t["function"]["name"] for t in TOOLS}
        handler = getattr(self, f"_tool_{call.name}", None) if call.name in names else None
        if handler is None:
            return f"error: unknown tool {call.name!r}", {"error": "unknown_tool"}
        schema = next(t for t in TOOLS if t["function"]["name"] == call.name)["function"]
        wanted = set(schema["parameters"]["properties"])
        if set(args) != wanted or not all(isinstance(v, str) for v in args.values()):
            return f"error: {call.name} takes string arguments {sorted(wanted)}", {"error": "bad_arguments"}
        return handler(**args)  # type: ignore[no-any-return]

    def _tool_list_files(self) -> tuple[str, dict[str, Any]]:
        return "\n".join(f"{p} ({len(c)} chars)" for p, c in sorted(self.files.items())) or "(no files)", {"ok": True}

    def _tool_read_file(self, path: str) -> tuple[str, dict[str, Any]]:
        if path not in self.files:
            return f"error: no file {path!r}; list_files shows them", {"error": "no_such_file"}
        lines = self.files[path].splitlines()
        return "\n".join(f"{i:4d}  {line}" for i, line in enumerate(lines, start=1)), {"ok": True}

    def _tool_search(self, text: str) -> tuple[str, dict[str, Any]]:
        if not text:
            return "error: search for a non-empty text", {"error": "bad_arguments"}
        hits = [f"{p}:{i}: {line.strip()}" for p, c in sorted(self.files.items())
                for i, line in enumerate(c.splitlines(), start=1) if text in line]
        return "\n".join(hits[:100]) or "no match", {"ok": True, "matches": len(hits)}

    def _tool_replace_in_file(self, path: str, old: str, new: str) -> tuple[str, dict[str, Any]]:
        if path not in self.files:
            return f"error: no file {path!r}", {"error": "no_such_file"}
        count = self.files[path].count(old) if old else 0
        if count != 1:
            message = f"error: old text occurs {count} times in {path}; it must occur exactly once"
            return message, {"error": "no_unique_match"}
        return self._tool_write_file(path, self.files[path].replace(old, new, 1))

    def _tool_write_file(self, path: str, content: str) -> tuple[str, dict[str, Any]]:
        clean = "/".join(p for p in path.split("/") if p not in ("", "."))
        if not clean or path.startswith("/") or ".." in clean.split("/"):
            return "error: give a relative path inside the repository", {"error": "bad_path"}
        if len(content) > MAX_FILE_CHARS or (clean not in self.files and len(self.files) >= MAX_FILES):
            return "error: the file or the repository would be too large", {"error": "too_large"}
        self.files[clean] = content
        return f"wrote {clean} ({len(content)} chars)", {"ok": True}

    def _tool_delete_file(self, path: str) -> tuple[str, dict[str, Any]]:
        if self.files.pop(path, None) is None:
            return f"error: no file {path!r}", {"error": "no_such_file"}
        return f"deleted {path}", {"ok": True}

    @abstractmethod
    def _tool_run_tests(self) -> tuple[str, dict[str, Any]]:
        """Run the tests the agent may see on its files."""


class RepoRepairEnv(RepoToolEnv):
    """RepoRepair: fix the bug an issue describes in a small generated Python repository.

    ## Description
    Each task is a package ``app/`` of ``modules`` modules (statistics, text helpers,
    inventory, dates, grades, sequences) with visible pytest files under ``tests/``, one
    injected bug (``off_by_one``, ``wrong_operator``, ``wrong_comparison``, ``wrong_constant``
    or ``missing_case``) and an issue text with a failing call. The agent lists, reads,
    searches, edits and deletes files and runs the visible tests in a sandbox. The same
    seed gives the same repository.

    ## Action Space
    ``TextSpace(1_000_000)``: Hermes tool calls (``list_files``, ``read_file``, ``search``,
    ``replace_in_file``, ``write_file``, ``delete_file``, ``run_tests``), or a message without
    a tool call to finish.

    ## Observation Space
    ``TextSpace(100_000)``: the issue and the file list; then tool responses; ``""`` at the end.

    ## Starting State
    ``reset(seed=s)`` draws a repository of the split; ``options={"task_index": i, "split": ...}``;
    ``options={"difficulty": k}`` draws one of level ``k`` (0-4: 2 to 6 modules; 1 is the default).

    ## Rewards
    0.0 on tool turns. At the end, 1.0 when no test file was added, removed or changed
    (else 0.0, ``error="tests_modified"``) and every hidden test passes: each function of
    the package is called in a sandbox on hidden inputs (the hidden tests are never in
    the repository) and its answers are compared here, type-strictly, with the correct
    package's.

    ## Episode End
    ``terminated=True`` at a message without a tool call; ``truncated=True`` (reward 0,
    ``error="turn_limit"``) at the ``max_turns``-th message with tool calls.

    ## Information
    ``task_meta``: ``modules``, ``difficulty`` (``modules``, ``bug``), ``config``, ``n_files``.
    Tool turns add ``tool_results``; the end adds the score fields, with ``details`` naming
    ``changed_tests`` or the failed hidden tests.

    ## Arguments
    ``modules`` (3, 2-6), ``bugs`` (all five), ``n_hidden`` (8 per function), ``max_turns`` (20),
    ``max_calls_per_turn`` (4), ``max_output_chars`` (6000), ``split``, ``render_mode``.

    ## Version History
    * v0: initial release.
    """

    default_env_id = DEFAULT_ENV_ID
    system_prompt = SYSTEM_PROMPT

    def __init__(
        self,
        *,
        modules: int = 3,
        bugs: Sequence[str] | str = REPO_BUGS,
        n_hidden: int = 8,
        **loop: Unpack[ToolLoopOptions],
    ) -> None:
        self.config = RepoRepairConfig(modules, choices(bugs), n_hidden)
        self._open(RepoRepairSource(self.config, self.default_env_id), 64, 4096, loop)

    @property
    def difficulty(self) -> Difficulty:
        """Five levels of repository size, 2 to 6 modules (level 1, 3 modules, is the default)."""
        return ladder(REPO_LEVELS, self.config, "the repository's files and lines to search for the bug")

    def _level_source(self, env_id: str, level: Level) -> RepoRepairSource:
        return RepoRepairSource(replace(self.config, **level.knobs), env_id)

    def _tool_run_tests(self) -> tuple[str, dict[str, Any]]:
        job = Job.command(["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--no-header", "-x"],
                          files=dict(self.files), limits=TEST_LIMITS)
        result = self.runner.run_one(job)
        return result.as_text(self.max_output_chars), {"ok": result.ok, "label": result.label}

    def _grade(self, action: str) -> Score:
        assert self.task is not None
        changed = changed_tests(self.task.answer["files"], self.files)
        if changed:
            return Score.fail("tests_modified", changed_tests=changed)
        imports = self.task.answer["imports"]
        program = "".join(f"from app.{m} import {f} as {m}__{f}\n" for m, f in imports)
        outcome = run_calls(self.runner, [(program, "", self.task.answer["calls"])],
                            limits=Limits(wall_s=20, cpu_s=20, mem_mb=1024, max_output_bytes=8192),
                            call_timeout_s=3.0, files=[dict(self.files)])[0]
        return judge_expected(outcome, self.task.answer["expected"], parsed=None)
