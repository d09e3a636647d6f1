"""The collection code asks an agent what it can do through the capability protocols, never by probing.

``getattr(agent, "aact", None)`` and ``hasattr(agent, "spawn")`` scattered through the collectors each
decide on their own what an agent is; :func:`rollgym.core.agent.capabilities` and the protocols
(``isinstance(agent, ForkingAgent)``) decide it in one place. This test walks the collection code's
syntax trees and fails on any ``getattr``/``hasattr`` whose object is an agent (``agent``, ``self.agent``,
``branch.agent``, ...).
"""

from __future__ import annotations

import ast
from pathlib import Path

import rollgym

ROOT = Path(rollgym.__file__).resolve().parent

#: Where the rule holds now; extend it to the whole package as other parts adopt the protocols.
CHECKED = ["rollout", "vector.py", "train/adapters/episodes.py", "train/rollouts.py"]

AGENT_NAMES = {"agent", "agents", "player", "probe", "template", "child", "played_agent"}


def _is_agent(node: ast.expr) -> bool:
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Name):
        return node.id in AGENT_NAMES
    if isinstance(node, ast.Attribute):
        return node.attr in AGENT_NAMES
    return False


def agent_probes(paths: list[Path]) -> list[str]:
    """``path:line: getattr(...)`` for every getattr/hasattr call on an agent in ``paths``."""
    found = []
    for path in paths:
        where = path.relative_to(ROOT.parent) if path.is_relative_to(ROOT.parent) else path
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in {"getattr", "hasattr"} and node.args and _is_agent(node.args[0])):
                found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    return found


def _files() -> list[Path]:
    out: list[Path] = []
    for name in CHECKED:
        path = ROOT / name
        out += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return out


def test_the_walker_sees_a_probe(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("def f(agent, self):\n    return getattr(agent, 'aact', None), hasattr(self.agent, 'spawn'),"
                      " getattr(env, 'unwrapped', env)\n")
    found = [line.split(": ", 1)[1] for line in agent_probes([source])]
    assert found == ["getattr(agent, 'aact', None)", "hasattr(self.agent, 'spawn')"]


def test_the_collection_code_reads_agent_capabilities_through_the_protocols() -> None:
    assert agent_probes(_files()) == []
