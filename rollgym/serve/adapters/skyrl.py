"""rollgym envs as SkyRL-Gym envs: ``skyrl_gym.make("rollgym", env_config=..., extras=...)``.

Written against ``skyrl-gym`` 0.4.0 (``skyrl_gym/envs/base_text_env.py``): a ``BaseTextEnv``
is built as ``Env(env_config, extras)``; ``init(prompt)`` returns the conversation to start
from and metadata; ``step(action)`` returns ``{"observations": [messages], "reward", "done",
"metadata"}``. SkyRL's generator builds each env from a dataset row's ``env_class`` and
``extras``.

``env_config`` (the run's ``environment.skyrl_gym.rollgym`` section) and ``extras`` (a row's)
may both name: ``env_id`` (required), ``url`` (a ``rollgym serve-env`` server, to play there),
``split``, ``seed``, ``task_index``, ``env_kwargs``; the row's values win. The conversation
SkyRL passes to ``init`` is replaced by the env's own first messages (system prompt and task),
so the model sees exactly what a rollgym agent sees. ``metadata`` carries the env's ``info``.

Example:
    >>> from rollgym.serve.adapters.skyrl import register_skyrl
    >>> register_skyrl()  # doctest: +SKIP
    >>> env = skyrl_gym.make("rollgym", env_config={}, extras={"env_id": "Countdown-v0", "seed": 0})  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from rollgym.core.errors import ConfigError

SKYRL_ENV_ID = "rollgym"


def _get(source: Any, key: str, default: Any = None) -> Any:
    if source is None:
        return default
    if isinstance(source, dict):
        return source.get(key, default)
    getter = getattr(source, "get", None)
    return getter(key, default) if callable(getter) else getattr(source, key, default)


def _make_class() -> type:
    from skyrl_gym.envs.base_text_env import BaseTextEnv

    class RollgymSkyRLEnv(BaseTextEnv):  # type: ignore[misc]
        """A rollgym env (local or served) behind SkyRL-Gym's ``BaseTextEnv``."""

        def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None) -> None:
            super().__init__()
            extras = dict(extras or {})
            extra_info = extras.get("extra_info") if isinstance(extras.get("extra_info"), dict) else {}

            def pick(key: str, default: Any = None) -> Any:
                for source in (extras, extra_info, env_config):
                    value = _get(source, key)
                    if value is not None:
                        return value
                return default

            self.env_id = pick("env_id")
            if not self.env_id:
                raise ConfigError("The rollgym SkyRL env needs 'env_id' in its env_config or the row's extras.")
            self.seed = pick("seed")
            self.options = {k: pick(k) for k in ("task_index", "split") if pick(k) is not None} or None
            self.max_turns = int(pick("max_turns", 30))
            kwargs = dict(pick("env_kwargs", {}) or {})
            url = pick("url")
            if url:
                from rollgym.serve.client import RemoteEnv

                self.env: Any = RemoteEnv(str(url), str(self.env_id), **kwargs)
            else:
                import rollgym

                self.env = rollgym.make(str(self.env_id), **kwargs)
            self.info: dict[str, Any] = {}
            self.total_reward = 0.0

        def init(self, prompt: Any = None) -> tuple[list[dict[str, str]], dict[str, Any]]:
            observation, self.info = self.env.reset(seed=self.seed, options=self.options)
            self.turns, self.total_reward = 0, 0.0
            messages = []
            if self.info.get("system_prompt"):
                messages.append({"role": "system", "content": str(self.info["system_prompt"])})
            messages.append({"role": "user", "content": str(observation)})
            return messages, {"info": self.info}

        def step(self, action: str) -> dict[str, Any]:
            self.turns += 1
            observation, reward, terminated, truncated, self.info = self.env.step(action)
            self.total_reward += float(reward)
            done = bool(terminated or truncated) or self.turns >= self.max_turns
            return {
                "observations": [] if done else [{"role": "user", "content": str(observation)}],
                "reward": float(reward), "done": done,
                "metadata": {"info": self.info, "terminated": terminated, "truncated": truncated},
                "postprocessed_action": None,
            }

        def get_metrics(self) -> dict[str, Any]:
            correct = self.info.get("correct", (self.info.get("verdict") or {}).get("success"))
            return {"turns": self.turns, "episode_reward": self.total_reward,
                    **({"correct": float(bool(correct))} if correct is not None else {})}

        def close(self) -> None:
            self.env.close()

    return RollgymSkyRLEnv


_CLASS: type | None = None


def skyrl_env_class() -> type:
    """The ``BaseTextEnv`` subclass (built on first use, so skyrl-gym is imported only when needed)."""
    global _CLASS
    if _CLASS is None:
        _CLASS = _make_class()
    return _CLASS


def make_skyrl_env(env_config: Any = None, extras: dict[str, Any] | None = None) -> Any:
    """The entry point SkyRL-Gym's registry calls: a new :func:`skyrl_env_class` instance."""
    return skyrl_env_class()(env_config=env_config, extras=extras)


def register_skyrl() -> str:
    """Register ``"rollgym"`` in SkyRL-Gym's registry (idempotent); return the id."""
    from skyrl_gym.envs.registration import register, registry

    if SKYRL_ENV_ID not in registry:
        register(id=SKYRL_ENV_ID, entry_point="rollgym.serve.adapters.skyrl:make_skyrl_env")
    return SKYRL_ENV_ID
