"""The task source: seeded tasks drawn from templates over a few cached base worlds."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from rollgym.core.errors import ConfigError
from rollgym.core.seeding import content_digest, draw_in_split
from rollgym.core.task import Task
from rollgym.envs.tools.checker import Diff, grade
from rollgym.envs.tools.tasks.base import TEMPLATES, TaskTemplate
from rollgym.envs.tools.world import World, base_world

N_WORLDS = 16
WORLD_SEED_BASE = 5000


def world_seed(index: int) -> int:
    """The seed of base world ``index`` (0 <= index < N_WORLDS)."""
    return WORLD_SEED_BASE + index % N_WORLDS


def task_world(task: Task) -> World:
    """The cached base world a task is set in."""
    return base_world(world_seed(int(task.meta["world"])))


def opening(world: World, prompt: str) -> str:
    """The first observation: who the agent acts for, the frozen clock, and the request."""
    return (f"You are acting for {world.me.name} <{world.me.email}>. It is {world.now:%A %Y-%m-%d %H:%M}.\n\n"
            f"Task: {prompt}\n\nUse the tools to do it, then call complete_task (with an answer if the task "
            "asks a question).")


class ToolTaskSource:
    """Tasks of some templates; ``task(index, split)`` is deterministic and splits are disjoint by content."""

    def __init__(self, templates: Sequence[str] | None = None, family: str = "ToolWorld",
                 env_id: str = "ToolWorld-v0") -> None:
        names = list(templates) if templates is not None else sorted(TEMPLATES)
        unknown = [n for n in names if n not in TEMPLATES]
        if unknown or not names:
            raise ConfigError(f"Unknown template(s) {unknown}; choose from {', '.join(sorted(TEMPLATES))}.")
        self.templates = names
        self.family = family
        self.env_id = env_id

    def size(self, split: str) -> int | None:
        """Generated tasks are unbounded."""
        return None

    def _candidate(self, rng: np.random.Generator) -> tuple[str, int, dict[str, Any]]:
        for _ in range(100):
            name = self.templates[int(rng.integers(len(self.templates)))]
            world = int(rng.integers(N_WORLDS))
            template = TEMPLATES[name]
            params = template.sample(base_world(world_seed(world)), rng)
            # a task that doing nothing would pass (nothing left to change, no question) is no task
            if params is not None and not grade(template.expect(base_world(world_seed(world)), params), Diff(),
                                                None).success:
                return name, world, params
        raise ConfigError(f"The templates {self.templates} found no instance in 100 tries.")

    def task(self, index: int, split: str = "train") -> Task:
        """Task ``index`` of ``split``."""
        (name, world_index, params), _ = draw_in_split(
            self.family, split, index, self._candidate, key=lambda c: json.dumps(c, sort_keys=True))
        template: TaskTemplate = TEMPLATES[name]
        world = base_world(world_seed(world_index))
        expectation = template.expect(world, params)
        digest = content_digest(name, str(world_index), json.dumps(params, sort_keys=True), length=8)
        meta = {"template": name, "scenario": f"{name}@w{world_index}", "family": template.scenario,
                "apps": list(template.apps), "world": world_index, "now": f"{world.now:%Y-%m-%d %H:%M}",
                "params": params, "question": template.answer_kind != "none"}
        return Task(id=f"{self.family}/{split}/{index}/{name}-{digest}", env_id=self.env_id,
                    prompt=opening(world, template.prompt(params)), answer=expectation.answer, meta=meta)
