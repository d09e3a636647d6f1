"""``CodeGenSource``: generated programming tasks with visible examples and hidden randomized tests.

A task is a pure function of (configuration, split, index): the family and its chain
of operations come from :func:`rollgym.core.seeding.draw_in_split`, whose content key
(family, function and the operations' text) puts every distinct task in exactly one
split. Hidden test inputs are drawn from the same stream (random inputs up to
``input_size``, plus edge cases when ``tricky``); expected outputs are computed here,
on the host, by the reference solution, which rollgym wrote itself (never by model code).
The hidden tests and the reference live in ``task.answer`` and never enter a sandbox
that holds the agent's code.
"""

from __future__ import annotations

import json
from typing import Any

from rollgym.core.seeding import content_digest, draw_in_split
from rollgym.core.sources import GeneratedSource
from rollgym.core.task import Task
from rollgym.envs.code.codegen.families import FAMILIES, Family, Step, describe, draw_steps, reference_source
from rollgym.envs.code.config import CodeGenConfig, as_meta
from rollgym.envs.code.harness import encode

FAMILY = "code-codegen"
DEFAULT_ENV_ID = "CodeGen-v0"


def run_reference(source: str, entry_point: str, inputs: list[tuple[Any, ...]]) -> list[Any]:
    """The reference's encoded outputs on ``inputs`` (rollgym's own generated code, run on the host)."""
    namespace: dict[str, Any] = {}
    exec(compile(source, f"<reference {entry_point}>", "exec"), namespace)
    function = namespace[entry_point]
    return [encode(function(*_copy(args))) for args in inputs]


def _copy(args: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(list(a) if isinstance(a, list) else a for a in args)


def format_prompt(family: Family, chosen: list[Step], examples: list[tuple[tuple[Any, ...], Any]]) -> str:
    """The task as the agent sees it: what the function does, and a few examples."""
    from rollgym.envs.code.harness import decode

    shown = "\n".join(
        f"    {family.entry_point}({', '.join(repr(a) for a in args)}) == {decode(out)!r}" for args, out in examples
    )
    return (
        f"Write a Python function `{family.entry_point}{family.signature}` that {family.intro}:\n\n"
        f"{describe(family, chosen)}\n\n"
        f"Examples:\n{shown}\n\n"
        "Hidden tests call the function on other inputs, including edge cases, and compare the exact value and "
        "type it returns. Reply with the complete function in one ```python code block."
    )


class CodeGenSource(GeneratedSource[CodeGenConfig]):
    """The task source of ``CodeGen-v0``; ``task(index, split)`` is deterministic, splits disjoint by content.

    Example:
        >>> source = CodeGenSource(CodeGenConfig(families="list", steps=2))
        >>> source.task(0).meta["entry_point"]
        'transform_numbers'
    """

    family = FAMILY
    config_type = CodeGenConfig
    default_env_id = DEFAULT_ENV_ID

    def _draw(self, rng: Any) -> tuple[Family, list[Step]]:
        cfg = self.config
        family = FAMILIES[cfg.families[int(rng.integers(len(cfg.families)))]]
        return family, draw_steps(family, rng, cfg.steps, cfg.input_size)

    @staticmethod
    def _key(draw: tuple[Family, list[Step]]) -> str:
        family, chosen = draw
        return reference_source(family, chosen)

    def task(self, index: int, split: str = "train") -> Task:
        """Task ``index`` of ``split``: the same on every call, run and machine."""
        cfg = self.config
        (family, chosen), rng = draw_in_split(FAMILY, split, index, self._draw, key=self._key)
        source = reference_source(family, chosen)
        examples_in = [family.draw_input(rng, min(cfg.input_size, 8)) for _ in range(cfg.n_examples)]
        hidden = [family.draw_input(rng, cfg.input_size) for _ in range(cfg.n_tests)]
        if cfg.tricky:
            hidden = family.edge_inputs(cfg.input_size) + hidden
        hidden = list({json.dumps(encode(list(a))): a for a in hidden}.values())  # no duplicate tests
        examples = list(zip(examples_in, run_reference(source, family.entry_point, examples_in)))
        expected = run_reference(source, family.entry_point, hidden)
        key = self._key((family, chosen))
        return Task(
            id=f"{self.env_id}:{split}:{index}:{content_digest(key)}",
            env_id=self.env_id,
            prompt=format_prompt(family, chosen, examples),
            answer={
                "reference": source,
                "calls": [[[encode(a) for a in args], {}] for args in hidden],
                "expected": expected,
            },
            meta={
                "family": family.name,
                "entry_point": family.entry_point,
                "signature": family.signature,
                "difficulty": {"steps": len(chosen) if family.name not in ("recursion", "simulation") else cfg.steps,
                               "input_size": cfg.input_size, "tricky": cfg.tricky},
                "config": as_meta(self.config),
                "n_tests": len(hidden),
            },
        )
