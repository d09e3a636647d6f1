"""The Python blocks of docs/curriculum.md run offline as written, in order, in one namespace."""

from __future__ import annotations

import re

from tests.conftest import REPO


def test_the_curriculum_doc_s_python_blocks_run() -> None:
    text = (REPO / "docs" / "curriculum.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.DOTALL)
    assert len(blocks) >= 3
    namespace: dict[str, object] = {"__name__": "docs"}
    for block in blocks:
        exec(compile(block, "docs/curriculum.md", "exec"), namespace)
