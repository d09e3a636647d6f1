"""Every ```python block in README.md and docs/*.md runs, offline, as written.

Each block runs in a subprocess of its own (``tests/docs_runner.py``), in a fresh
temporary folder, with the Hugging Face hub switched off. Values shown in comments
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

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import REPO, SHARED_DATA, _missing, require_binary, require_module

RUNNER = Path(__file__).resolve().parent / "docs_runner.py"
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
DEFAULT_TIMEOUT = 180
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


@pytest.mark.slow
@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_doc_block_runs_as_written(block: Block, tmp_path: Path) -> None:
    if block.skip:
        pytest.skip(f"{block.id}: {block.skip}")
    for name in block.requires:
        _require(name)
    script = tmp_path / "block.py"
    script.write_text(block.source, encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    try:
        result = subprocess.run(
            [sys.executable, str(RUNNER), str(script), str(block.doc), str(block.line)],
            cwd=work, env=_environment(), capture_output=True, text=True, timeout=block.timeout,
        )
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        pytest.fail(f"{block.id} ran past {block.timeout} s (mark it timeout=N if it needs longer):\n{out[-3000:]}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if result.returncode == 0:
        return
    output = result.stdout[-3000:] + result.stderr[-6000:]
    missing = re.search(r"ModuleNotFoundError: No module named '([\w.]+)'", result.stderr)
    if missing:
        require_module(missing.group(1))
    dependency = re.search(r"MissingDependencyError: (.*)", result.stderr)
    if dependency:
        _missing(f"{block.id}: {dependency.group(1)}")
    pytest.fail(f"{block.id} failed (exit {result.returncode}):\n{output}", pytrace=False)
