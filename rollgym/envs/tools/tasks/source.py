"""The task source: seeded tasks drawn from templates over a few cached base worlds."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from rollgym.core.difficulty import Difficulty, Level
from rollgym.core.errors import ConfigError
from rollgym.core.seeding import content_digest, draw_in_split
from rollgym.core.task import Task
from rollgym.envs.tools.checker import is_degenerate
from rollgym.envs.tools.tasks.base import TEMPLATES, VERSIONS, TaskTemplate, templates_of
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


def toolworld_difficulty(templates: Sequence[str]) -> Difficulty | None:
    """Levels over ``templates`` by how many apps a task spans: one app, two apps, then the cross-app errands.

    Levels without a template among ``templates`` are left out; ``None`` when fewer than two remain (a scenario
    whose templates are all of one kind). ``default`` is the level holding exactly ``templates``, if one does.
    """
    tiers = (
        ("one-app", "errands in one app", lambda t: len(t.apps) == 1 and t.scenario != "cross_app"),
        ("two-apps", "errands that read one app to act in another", lambda t: len(t.apps) == 2
         and t.scenario != "cross_app"),
        ("cross-app", "chained errands across 2-3 apps", lambda t: t.scenario == "cross_app"),
    )
    levels = []
    for name, what, keep in tiers:
        chosen = sorted(n for n in templates if keep(TEMPLATES[n]))
        if chosen:
            levels.append(Level(name, {"templates": chosen}, f"{what} ({len(chosen)} templates)"))
    if len(levels) < 2:
        return None
    default = next((i for i, level in enumerate(levels) if set(level.knobs["templates"]) == set(templates)), None)
    return Difficulty(tuple(levels), default=default, grows="the apps a task spans, and the reference "
                                                           "solution's tool calls with them")


class ToolTaskSource:
    """Tasks of some templates; ``task(index, split)`` is deterministic and splits are disjoint by content.

    ``version`` picks the task rules: version 0 draws every instance in which doing nothing with no answer
    fails; version 1 (the default) also redraws any instance that a constant answer (``"0"``, ``""``,
    ``"yes"``, ... see :data:`~rollgym.envs.tools.checker.CONSTANT_ANSWERS`) would solve without a call, and
    asks for the items instead of a count.
    """

    def __init__(self, templates: Sequence[str] | None = None, family: str = "ToolWorld",
                 env_id: str = "ToolWorld-v1", version: int = 1) -> None:
        if version not in VERSIONS:
            raise ConfigError(f"version must be one of {list(VERSIONS)}, got {version!r}.")
        available = templates_of(version)
        names = list(templates) if templates is not None else available
        unknown = [n for n in names if n not in available]
        if unknown or not names:
            raise ConfigError(f"Unknown template(s) {unknown} for ToolWorld version {version}; choose from "
                              f"{', '.join(available)}.")
        self.templates = names
        self.family = family
        self.env_id = env_id
        self.version = version

    def size(self, split: str) -> int | None:
        """Generated tasks are unbounded."""
        return None

    def _candidate(self, rng: np.random.Generator) -> tuple[str, int, dict[str, Any]]:
        for _ in range(100):
            name = self.templates[int(rng.integers(len(self.templates)))]
            world = int(rng.integers(N_WORLDS))
            template = TEMPLATES[name]
            params = template.sample(base_world(world_seed(world)), rng)
            if params is None:
                continue
            expectation = template.expect(base_world(world_seed(world)), params)
            # a task that doing nothing would pass is no task: v0 knew only the empty answer; v1 also
            # redraws tasks that a constant answer solves (a count of 0, a total of 0.00)
            empty = not (expectation.updates or expectation.deletes or expectation.inserts)
            free = is_degenerate(expectation) if self.version >= 1 else empty and expectation.answer_kind == "none"
            if not free:
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
