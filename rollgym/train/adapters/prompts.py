"""The opening chat messages of fixed tasks: where the TRL and verl dataset rows start."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from rollgym.core.task import Task


def first_prompts(env: gym.Env[Any, Any], indices: range, *, system_prompt: bool = True,
                  observation: bool = True) -> list[tuple[Task, list[dict[str, str]]]]:
    """Each task of ``indices`` (of ``env``'s split) with the chat messages that open its episode.

    The messages are the env's system prompt (when it has one and ``system_prompt`` is set) and a user
    message with the first observation (empty with ``observation=False``, for trainers whose env
    ``reset`` returns it).
    """
    out = []
    for index in indices:
        first, info = env.reset(options={"task_index": index})
        task: Task = env.unwrapped.task  # type: ignore[attr-defined]
        messages = []
        if system_prompt and info.get("system_prompt"):
            messages.append({"role": "system", "content": str(info["system_prompt"])})
        messages.append({"role": "user", "content": first if observation else ""})
        out.append((task, messages))
    return out
