"""Every ```python block in README.md and docs/*.md runs, offline, as written.

Each block runs in a process of its own (``tests/docs_runner.py``), in a fresh
temporary folder, with the Hugging Face hub switched off. To keep the test short, the
processes are forked from one server that has imported torch, transformers and TRL once
(seconds each, and a dozen blocks need them); nothing of rollgym is imported there, so a
block still starts as a fresh script does (see the runner's docstring). Values shown in comments
as ``# -> VALUE`` are checked (see the runner's docstring); a value shown without the
arrow fails the block, so no example shows a value that is not checked.

A block may be marked by an HTML comment on the line just above its fence (invisible
on GitHub)::

    <!-- docs-test: requires=chromium,playwright timeout=300 -->
    <!-- docs-test: skip=needs a GPU: vLLM runs only on CUDA -->

* ``requires=a,b``: binaries (``chromium``, ``stockfish``, ``bwrap``), ``data`` (the
  evaluation data in ``ROLLGYM_DATA_DIR``) or Python modules; a missing one skips the
  block locally and fails it in CI (``tests/conftest.py``). A block that fails with a
  ``ModuleNotFoundError`` or ``MissingDependencyError`` is treated the same way.
* ``timeout=N``: seconds (default 180).
* ``skip=REASON``: the block is not run; the reason is shown and must be given. Kept for
  what cannot run here (a GPU, the network); everything else runs.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, SHARED_DATA, _missing, require_binary, require_module

RUNNER = Path(__file__).resolve().parent / "docs_runner.py"
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
DEFAULT_TIMEOUT = 180
# Imported once in the fork server (never rollgym: a block must import it, and register its ids, itself).
# transformers and TRL load lazily, on first attribute access: name what the blocks use.
PRELOAD = ",".join(["numpy", "gymnasium", "torch", "tokenizers", "datasets", "httpx", "mcp",
                    "transformers:AutoModelForCausalLM", "transformers:AutoTokenizer",
                    "transformers:LlamaForCausalLM", "transformers:PreTrainedTokenizerFast",
                    "trl:GRPOTrainer", "trl:GRPOConfig"])
PRELOAD_TIMEOUT = 300
BINARIES = {"chromium": ("/usr/lib/chromium/chromium", "/usr/bin/chromium"), "stockfish": ("/usr/games/stockfish",),
            "bwrap": ()}
DIRECTIVE = re.compile(r"<!--\s*docs-test:\s*(.*?)\s*-->")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)(.*)$")


@dataclass
class Block:
    """One fenced ```python block and its marks."""

    doc: Path
    line: int  # the Markdown line of the block's first code line
    source: str
    requires: list[str] = field(default_factory=list)
    timeout: int = DEFAULT_TIMEOUT
    skip: str | None = None

    @property
    def id(self) -> str:
        return f"{self.doc.relative_to(REPO)}:{self.line - 1}"


def parse_directive(text: str, block: Block) -> None:
    """Read ``key=value`` marks (``skip=`` takes the rest of the comment as its reason)."""
    head, sep, reason = text.partition("skip=")
    if sep:
        block.skip = reason.strip()
        if not block.skip:
            raise ValueError(f"{block.id}: `skip=` needs a reason")
    for item in head.split():
        key, _, value = item.partition("=")
        if key == "requires":
            block.requires += [v for v in value.split(",") if v]
        elif key == "timeout":
            block.timeout = int(value)
        else:
            raise ValueError(f"{block.id}: unknown docs-test mark {item!r}; use requires=, timeout= or skip=")


def python_blocks(doc: Path) -> list[Block]:
    """The ```python blocks of a Markdown file, with their marks."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, language = match.group(2), match.group(3).lower()
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        if language in {"python", "py", "python3"}:
            indent = len(match.group(1))
            source = "\n".join(line[indent:] for line in lines[i + 1:end]) + "\n"
            block = Block(doc, i + 2, source)
            j = i - 1
            while j >= 0 and DIRECTIVE.search(lines[j]):
                parse_directive(DIRECTIVE.search(lines[j]).group(1), block)  # type: ignore[union-attr]
                j -= 1
            blocks.append(block)
        i = end + 1
    return blocks


BLOCKS = [block for doc in DOCS for block in python_blocks(doc)]


def _require(name: str) -> None:
    if name == "data":
        if not (SHARED_DATA / "math500.jsonl").exists():
            _missing(f"evaluation data not found in {SHARED_DATA}; set ROLLGYM_DATA_DIR")
    elif name in BINARIES:
        require_binary(name, *BINARIES[name])
    else:
        require_module(name)


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1", MPLBACKEND="Agg",
               TOKENIZERS_PARALLELISM="false", PYTHONUNBUFFERED="1")
    if SHARED_DATA.is_dir():
        env.setdefault("ROLLGYM_DATA_DIR", str(SHARED_DATA))
    return env


def test_the_docs_have_python_blocks_and_every_skip_has_a_reason() -> None:
    assert len(BLOCKS) >= 30, [b.id for b in BLOCKS]
    for block in BLOCKS:
        assert block.skip is None or len(block.skip) > 10, f"{block.id}: say why the block cannot run"


class ForkServer:
    """``docs_runner.py --serve``: imports :data:`PRELOAD` once, then forks a fresh process per block."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.home = Path(tempfile.mkdtemp(prefix="rollgym-docs-"))
        self.buffer = b""
        self.cpu: dict[str, float] = {}  # CPU seconds per block, to see where the time goes (-s shows it)

    def run(self, script: Path, doc: Path, line: int, cwd: Path, out: Path, timeout: float) -> int | None:
        """Run one block; its exit status, or ``None`` when it ran past ``timeout`` (then it is killed)."""
        if self.process is None or self.process.poll() is not None:
            self.process = subprocess.Popen([sys.executable, str(RUNNER), "--serve", PRELOAD], cwd=self.home,
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=_environment())
            self.buffer = b""
        assert self.process.stdin is not None
        request = {"script": str(script), "doc": str(doc), "line": line, "cwd": str(cwd), "out": str(out)}
        self.process.stdin.write((json.dumps(request) + "\n").encode())
        self.process.stdin.flush()
        started = self._message(PRELOAD_TIMEOUT)  # the first block waits for the preload
        if started is None:
            self.close()
            raise RuntimeError(f"the docs fork server did not start a block within {PRELOAD_TIMEOUT} s")
        ended = self._message(timeout)
        if ended is None:
            os.killpg(started["pid"], signal.SIGKILL)  # the block and everything in its process group
            self._message(60)  # the server reaps it and says so
            return None
        self.cpu[f"{Path(doc).relative_to(REPO)}:{line - 1}"] = float(ended.get("cpu", 0.0))
        return int(ended["status"])

    def _message(self, timeout: float) -> dict[str, Any] | None:
        assert self.process is not None and self.process.stdout is not None
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.process.stdout], [], [], left)[0]:
                return None
            chunk = os.read(self.process.stdout.fileno(), 65536)
            if not chunk:
                raise RuntimeError(f"the docs fork server exited ({self.process.wait()})")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line)  # type: ignore[no-any-return]

    def close(self) -> None:
        if self.process is not None:
            if self.process.stdin is not None:
                self.process.stdin.close()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.home, ignore_errors=True)


@pytest.fixture(scope="module")
def fork_server() -> Iterator[ForkServer]:
    server = ForkServer()
    yield server
    server.close()
    if server.cpu:
        print(f"\ndocs test: {sum(server.cpu.values()):.1f} s of CPU in {len(server.cpu)} blocks; the most: "
              + ", ".join(f"{block} {seconds:.1f} s" for block, seconds in sorted(server.cpu.items(),
                                                                                  key=lambda item: -item[1])[:8]))


@pytest.mark.slow
@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_doc_block_runs_as_written(block: Block, tmp_path: Path, fork_server: ForkServer) -> None:
    if block.skip:
        pytest.skip(f"{block.id}: {block.skip}")
    for name in block.requires:
        _require(name)
    script = tmp_path / "block.py"
    script.write_text(block.source, encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    out = tmp_path / "output.txt"
    try:
        status = fork_server.run(script, block.doc, block.line, work, out, block.timeout)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    output = out.read_text(encoding="utf-8", errors="replace") if out.exists() else ""
    if status is None:
        pytest.fail(f"{block.id} ran past {block.timeout} s (mark it timeout=N if it needs longer):\n{output[-3000:]}")
    if status == 0:
        return
    missing = re.search(r"ModuleNotFoundError: No module named '([\w.]+)'", output)
    if missing:
        require_module(missing.group(1))
    dependency = re.search(r"MissingDependencyError: (.*)", output)
    if dependency:
        _missing(f"{block.id}: {dependency.group(1)}")
    pytest.fail(f"{block.id} failed (exit {status}):\n{output[-8000:]}", pytrace=False)


def _run_text(server: ForkServer, source: str, tmp_path: Path, timeout: float = 60) -> tuple[int | None, str]:
    script, work, out = tmp_path / "block.py", tmp_path / "work", tmp_path / "output.txt"
    work.mkdir(parents=True)
    script.write_text(source, encoding="utf-8")
    status = server.run(script, REPO / "README.md", 1, work, out, timeout)
    return status, out.read_text(encoding="utf-8", errors="replace")


def test_the_fork_server_gives_each_block_a_fresh_script_run(tmp_path: Path, fork_server: ForkServer) -> None:
    """What one block does is invisible to the next; a wrong shown value, a crash and a hang at exit all fail."""
    fresh = "import sys\nprint([m for m in sys.modules if m.startswith('rollgym')], 'trl' in sys.modules)\n"
    assert _run_text(fork_server, "import rollgym\nprint(rollgym.__name__)\n", tmp_path / "a") == (0, "rollgym\n")
    assert _run_text(fork_server, fresh, tmp_path / "b") == (0, "[] True\n")  # preloaded, yet nothing of rollgym
    status, output = _run_text(fork_server, "import gymnasium as gym\ngym.make('Countdown-v0')\n", tmp_path / "c")
    assert status == 1 and "Environment `Countdown` doesn't exist" in output  # no ids registered by an earlier block
    status, output = _run_text(fork_server, "1 + 1  # -> 3\n", tmp_path / "d")
    assert status == 3 and "expected '3', got '2'" in output
    hang = "import threading, time\nthreading.Thread(target=time.sleep, args=(600,)).start()\n"
    assert _run_text(fork_server, hang, tmp_path / "e", timeout=3) == (None, "")  # a script that never exits
    assert _run_text(fork_server, "print('still serving')\n", tmp_path / "f") == (0, "still serving\n")
