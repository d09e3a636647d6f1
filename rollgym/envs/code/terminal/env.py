"""``TerminalEnv``: do a shell task with a ``bash`` tool in a sandbox; the final state is checked."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from typing import Any, Unpack

from rollgym.core.env import TaskSource
from rollgym.core.tarstream import ArchiveError, ArchiveTooLarge, CountedGzip, iter_members
from rollgym.core.task import Score, Task
from rollgym.core.toolcalls import ToolCall
from rollgym.envs.code.config import TERMINAL_KINDS, TerminalConfig, choices
from rollgym.envs.code.terminal.source import DEFAULT_ENV_ID, TerminalSource
from rollgym.envs.code.tool_env import CodeToolEnv, ToolLoopOptions, tool_schema
from rollgym.sandbox import Job, Limits, Session, shared_sandbox

SYSTEM_PROMPT = "You are an expert at the Linux command line. Do the task with the bash tool, then say you are done."
BASH_TOOL = tool_schema(
    "bash", "Run a bash command in the task's sandbox (working folder /sandbox/work; no network) and show its output.",
    {"command": {"type": "string", "description": "The command line."}}, ["command"],
)
SESSION_LIMITS = Limits(wall_s=20, cpu_s=20, mem_mb=512, nproc=32, disk_mb=32, max_files=2048)
# The modes are read by the sandbox's supervisor (Job.return_modes: lstat, no link followed), never by a
# process started where the agent's commands ran. A listing longer than this (as JSON) fails the check, as
# it did when a job printed it within its output cap.
MAX_LISTING_BYTES = SESSION_LIMITS.max_output_bytes
MAX_ARCHIVE_BYTES = 4 << 20  # the members' data
# Everything the archive may inflate to, headers, extension records and padding included: a pax header or a
# gzip bomb is refused after this much work, never read whole.
MAX_INFLATED_BYTES = 8 << 20
MAX_EXTENSION_BYTES = 64 << 10  # one pax or GNU long-name header
MAX_ARCHIVE_MEMBERS = 4096  # headers of every kind; a session holds at most 2048 files
ARCHIVE_OVER_CAP = "archive_over_cap"


class ShellToolEnv(CodeToolEnv):
    """A task played with a ``bash`` tool in one sandbox session per episode (Terminal, TerminalGen, Harbor).

    A subclass builds its task source, calls :meth:`_open` with it, and writes the starting files in
    :meth:`_begin` (``self.session = self.sandbox.session(SESSION_LIMITS)``, then ``write_files``).
    """

    system_prompt = SYSTEM_PROMPT

    def _open(self, source: TaskSource, loop: ToolLoopOptions) -> None:
        """Hold a sandbox for the sessions, then start the tool loop over ``source`` (this env's loop defaults
        under ``loop``)."""
        self.sandbox = shared_sandbox(SESSION_LIMITS, pool_size=1)
        self.session: Session | None = None
        super().__init__(source, **self.with_defaults(loop))

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The ``bash`` tool."""
        return [BASH_TOOL]

    def _end(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None

    def _call(self, call: ToolCall) -> tuple[str, dict[str, Any]]:
        command = call.arguments.get("command")
        if call.name != "bash":
            return f"error: unknown tool {call.name!r}; the only tool is bash", {"error": "unknown_tool"}
        if not isinstance(command, str) or set(call.arguments) != {"command"}:
            return "error: bash takes one argument, 'command', a string", {"error": "bad_arguments"}
        assert self.session is not None
        result = self.session.run_command(["bash", "-c", command],
                                          limits=SESSION_LIMITS.replace(max_output_bytes=4 * self.max_output_chars))
        return result.as_text(self.max_output_chars), {"ok": result.ok, "label": result.label}


class TerminalEnv(ShellToolEnv):
    """Terminal: shell tasks (files, text processing, scripts, permissions, archives), Terminal-Bench style.

    ## Description
    Each task gives starting files in a sandbox session and an instruction. The agent runs
    commands through a ``bash`` tool (no network, a private tmpfs, output cut to
    ``max_output_chars``; each command is its own run, files persist, processes do not).
    When it replies without a tool call, a checker inspects the final state: file contents
    (read back by the sandbox's supervisor), modes (listed by the supervisor, with
    ``lstat``, after every process of the agent is gone), archive members (opened here, never extracted) and, for
    scripts, the script's output on hidden inputs.

    ## Action Space
    ``TextSpace(1_000_000)``: ``<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>``
    blocks, or a message without a tool call to finish.

    ## Observation Space
    ``TextSpace(100_000)``: the task and the starting files; then tool responses; ``""`` at the end.

    ## Starting State
    ``reset(seed=s)`` draws a task of the split; ``options={"task_index": i, "split": ...}``.

    ## Rewards
    0.0 on tool turns; 1.0 at the end if the check passes, else 0.0 (``error="check_failed"``
    with the reason in ``details``).

    ## Episode End
    ``terminated=True`` at a message without a tool call; ``truncated=True`` (reward 0) at the
    ``max_turns``-th message with tool calls.

    ## Information
    ``task_meta``: ``kind``, ``difficulty``, ``config``. Tool turns add ``tool_results``
    (``ok``, ``label``); the end adds the score fields.

    ## Arguments
    ``kinds`` (all five), ``n_files`` (6), ``max_turns`` (12), ``max_calls_per_turn`` (4),
    ``max_output_chars`` (4000), ``split``, ``render_mode``.

    ## Version History
    * v0: initial release. Fixed in place (a host DoS, not a scoring rule): ``backup.tar.gz`` is read
      through a reader that counts every inflated byte, headers included; an archive past 8 MiB
      inflated, or with an extension header over 64 KiB, fails the check (``archive_over_cap``),
      where ``tarfile`` read a pax header of any size into memory. Under the caps archives are
      read as ``tarfile`` read them (tested on ustar, GNU and pax archives and its edge cases),
      except that a GNU sparse member is no longer a regular file. Fixed in place (no task or honest
      score changes): the modes are listed by the sandbox's supervisor (``Job.return_modes``), not by a
      Python job forked in the agent's sandbox with its working folder on ``sys.path``.
    """

    default_env_id = DEFAULT_ENV_ID
    loop_defaults = ToolLoopOptions(max_turns=12)

    def __init__(
        self, *, kinds: Sequence[str] | str = TERMINAL_KINDS, n_files: int = 6, **loop: Unpack[ToolLoopOptions]
    ) -> None:
        self.config = TerminalConfig(choices(kinds), n_files)
        self._open(TerminalSource(self.config, self.default_env_id), loop)

    def _begin(self, task: Task) -> str:
        self.session = self.sandbox.session(SESSION_LIMITS)
        self.session.write_files(dict(task.answer["files"]))
        return task.prompt

    def _grade(self, action: str) -> Score:
        assert self.task is not None and self.session is not None
        return check_state(self.session, self.task)


def file_modes(session: Session) -> dict[str, int]:
    """Every path below the working folder -> its ``lstat`` mode, listed by the supervisor; ``{}`` if it
    could not be listed whole."""
    result = session.run(Job(return_modes=True))
    modes = dict(result.modes)
    if result.error or result.modes_truncated or len(json.dumps(modes)) > MAX_LISTING_BYTES:
        return {}
    return modes


def check_state(session: Session, task: Task) -> Score:
    """Check the final state of ``session`` against ``task``'s expectation."""
    kind, expect, start = task.meta["kind"], task.answer["expect"], task.answer["files"]
    files = session.read_files(["*"])
    if kind == "files":
        folder = expect["folder"]
        want = {f"{folder}/{p.split('/')[-1]}": start[p] for p in expect["moved"]}
        got = {p: files[p].decode("utf-8", "replace") for p in files if p.startswith("archive/")}
        kept = all(files.get(p, b"").decode("utf-8", "replace") == c
                   for p, c in start.items() if p not in expect["moved"])
        gone = not any(p in files for p in expect["moved"])
        return _verdict(got == want and kept and gone, moved=len(got), expected=len(want), others_kept=kept,
                        sources_gone=gone)
    if kind == "text":
        answer = files.get("answer.txt", b"").decode("utf-8", "replace").strip()
        return _verdict(answer == expect["answer"], got=answer[:50])
    if kind == "permissions":
        modes = file_modes(session)
        execs = all(p in modes and modes[p] & 0o100 for p in expect["executable"])
        plain = all(p in modes and not modes[p] & 0o111 for p in expect["not_executable"])
        private = all(p in modes and modes[p] & 0o777 == 0o600 for p in expect["mode_600"])
        contents = all(files.get(p) == c.encode() for p, c in start.items())
        return _verdict(execs and plain and private and contents, executable=execs, others_plain=plain,
                        mode_600=private, contents_kept=contents)
    if kind == "archive":
        return _verdict(*archive_matches(files.get("backup.tar.gz"), expect["members"]))
    # script: run it on hidden inputs, one run each; its output is compared here
    modes = file_modes(session)
    if "count.sh" not in modes or not modes["count.sh"] & 0o100:
        return _verdict(False, reason="count.sh is missing or not executable")
    for i, (text, want) in enumerate(zip(expect["inputs"], expect["outputs"])):
        name = f"hidden_{i}.txt"
        result = session.run(Job.command(["./count.sh", name], files={name: text}, limits=SESSION_LIMITS))
        if result.stdout.strip() != want:
            printed = result.stdout.strip()[:40]
            return _verdict(False, reason=f"hidden input {i}: printed {printed!r}", label=result.label)
    return _verdict(True, hidden_inputs=len(expect["inputs"]))


def archive_matches(data: bytes | None, members: dict[str, str]) -> tuple[bool, ...] | Any:
    """Read ``backup.tar.gz`` through a stream that counts every inflated byte, headers included."""
    if data is None:
        return False, {"reason": "backup.tar.gz is missing"}
    found: dict[str, str] = {}
    stream = CountedGzip(io.BytesIO(data), MAX_INFLATED_BYTES)
    try:
        total = 0
        for header in iter_members(stream, max_members=MAX_ARCHIVE_MEMBERS, max_extension_bytes=MAX_EXTENSION_BYTES,
                                   lenient_end=True):
            name = header.name.decode("utf-8", "surrogateescape")
            if header.is_dir:  # as tarfile reads it, a folder entry's declared size is ignored
                continue
            if not header.is_file:
                return False, {"reason": f"{name} is not a regular file"}
            total += header.size
            if total > MAX_ARCHIVE_BYTES:
                return False, {"reason": "the archive is too large", "label": ARCHIVE_OVER_CAP}
            text = stream.read_exact(header.size, "a member")
            stream.skip(header.padded - header.size, "a member")
            found[name.removeprefix("./")] = text.decode("utf-8", "replace")
    except ArchiveTooLarge as exc:
        return False, {"reason": f"backup.tar.gz {exc}", "label": ARCHIVE_OVER_CAP}
    except ArchiveError as exc:
        return False, {"reason": f"backup.tar.gz is not a readable gzip-compressed tar: it {exc}"}
    return found == members, {"members": len(found), "expected": len(members)}


def _verdict(ok: bool, details: dict[str, Any] | None = None, **more: Any) -> Score:
    info = {**(details or {}), **more}
    return Score.success(**info) if ok else Score.fail("check_failed", **info)
