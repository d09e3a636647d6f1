"""The Python blocks of docs/tools.md's ToolGen section run offline as written."""

from __future__ import annotations

import re

from tests.conftest import REPO


def test_the_toolgen_section_s_python_blocks_run():
    text = (REPO / "docs" / "tools.md").read_text(encoding="utf-8")
    section = text.split("## ToolGen: generated apps", 1)[1]
    blocks = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    assert len(blocks) >= 2
    for block in blocks:
        exec(compile(block, "docs/tools.md", "exec"), {"__name__": "docs"})
