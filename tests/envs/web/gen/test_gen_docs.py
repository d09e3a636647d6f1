"""The Python blocks of docs/web.md's sections on generated sites, screenshots and the suite run as written."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

DOC = Path(__file__).resolve().parents[4] / "docs" / "web.md"
SECTIONS = ("## Generated sites: WebGen-v0", "## Screenshots and screen actions", "## Generalization suite")

pytestmark = pytest.mark.slow


def blocks() -> list[str]:
    """The ```python blocks of :data:`SECTIONS`, in order."""
    text = DOC.read_text(encoding="utf-8")
    out = []
    for heading in SECTIONS:
        start = text.index(heading)
        nxt = re.search(r"^## ", text[start + len(heading):], re.M)
        body = text[start: start + len(heading) + (nxt.start() if nxt else len(text))]
        out += re.findall(r"```python\n(.*?)```", body, re.S)
    return out


def test_the_blocks_run_as_written(web_runtime: Any, capsys: pytest.CaptureFixture[str]) -> None:
    found = blocks()
    assert len(found) >= 4
    for code in found:
        exec(compile(code, str(DOC), "exec"), {"__name__": "docs"})  # our own docs, not model text
    out = capsys.readouterr().out
    assert "(860, 1280, 3) uint8" in out and "True" in out
