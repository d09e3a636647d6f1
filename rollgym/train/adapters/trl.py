"""Train on rollgym envs with TRL's ``GRPOTrainer``.

Three ways in, from the simplest:

* **Single-turn envs, TRL generates.** :func:`make_dataset` gives a
  ``datasets.Dataset`` of conversational prompts with the task as a JSON column,
  and :func:`reward_function` scores completions with the env's own verifier::

      trainer = GRPOTrainer(model, reward_funcs=reward_function("Countdown-v0"),
                            train_dataset=make_dataset("Countdown-v0", 512), args=GRPOConfig(...))

* **Any env, rollgym plays the episodes.** :func:`make_rollout_func` runs the
  episodes (multi-turn included) through a :class:`~rollgym.agents.chat.ChatAgent`
  over the trainer's live model, all episodes of a batch concurrently so that
  generation batches, and returns the exact sampled tokens, their logprobs and
  ``env_mask`` (0 on env tokens). Pair it with :func:`env_reward`::

      trainer = GRPOTrainer(model, reward_funcs=env_reward, train_dataset=ds,
                            rollout_func=make_rollout_func("ToolWorld-v1", ds, max_turns=8), args=...)

* **TRL's own tool loop.** :func:`environment_factory` builds a class that TRL
  instantiates per rollout: ``reset(**row)`` starts the row's task, every env
  tool is a public method with a typed signature and a Google docstring (TRL
  turns them into tool schemas), text-action envs (games) get a ``submit``
  method, and ``get_reward()`` returns the episode's reward.

* **Step by step, beside rollgym's trainer.** :func:`run_trl_grpo` trains a model
  in place on given prompts per step with a given ``reward(text, task)``, so
  that TRL and :class:`~rollgym.train.grpo.GRPOTrainer` can be compared on the
  same tasks.
* **Self-play.** :func:`seated_rows` turns self-play groups
  (:mod:`rollgym.rollout.selfplay`, one trajectory per seat) into rows with a
  per-role ``advantage`` (per-role GRPO or SPIRAL's RAE), sorted so that each
  group's rows of one role sit next to each other.

Nothing here imports TRL, torch or ``datasets`` at module level.
"""

from __future__ import annotations

import inspect
import json
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rollgym.core.config import check_choice, check_int, check_number, configure
from rollgym.core.errors import ConfigError
from rollgym.core.registration import make
from rollgym.core.task import Task
from rollgym.train.adapters.prompts import first_prompts

TASK_COLUMN = "task"


# -- datasets -------------------------------------------------------------------------------------------------------
def task_rows(env_id: str, n: int, *, split: str = "train", start: int = 0, env_kwargs: dict[str, Any] | None = None,
              system_prompt: bool = True, observation_in_prompt: bool = True) -> list[dict[str, Any]]:
    """Rows for a TRL dataset: ``prompt`` (chat messages), ``task`` (JSON), ``task_id``, ``env_id``.

    Tasks ``start .. start + n - 1`` of ``split``. With ``observation_in_prompt=False`` the user message
    is left empty, for :func:`environment_factory` whose ``reset`` returns the observation.
    """
    check_int("n", n, 1)
    env = make(env_id, split=split, **(env_kwargs or {}))
    try:
        prompts = first_prompts(env, range(start, start + n), system_prompt=system_prompt,
                                observation=observation_in_prompt)
    finally:
        env.close()
    return [{"prompt": prompt, TASK_COLUMN: json.dumps(task.to_dict()), "task_id": task.id, "env_id": env_id}
            for task, prompt in prompts]


def make_dataset(env_id: str, n: int, *, split: str = "train", start: int = 0,
                 env_kwargs: dict[str, Any] | None = None, system_prompt: bool = True,
                 observation_in_prompt: bool = True) -> Any:
    """A ``datasets.Dataset`` of :func:`task_rows`, in TRL's conversational format.

    Example:
        >>> ds = make_dataset("Countdown-v0", 4, env_kwargs={"num_numbers": 3})  # doctest: +SKIP
        >>> ds.column_names  # doctest: +SKIP
        ['prompt', 'task', 'task_id', 'env_id']
    """
    try:
        import datasets
    except ImportError as exc:  # pragma: no cover - depends on the install
        from rollgym.core.errors import MissingDependencyError

        raise MissingDependencyError("TRL datasets need the datasets package: pip install 'rollgym[trl]'.") from exc
    return datasets.Dataset.from_list(task_rows(env_id, n, split=split, start=start, env_kwargs=env_kwargs,
                                                system_prompt=system_prompt,
                                                observation_in_prompt=observation_in_prompt))


def _task_of(value: Any) -> Task:
    if isinstance(value, Task):
        return value
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, dict):
        raise ConfigError("The 'task' column must hold a task as JSON (make_dataset writes it).")
    return Task.from_dict(value)


# -- reward functions for single-turn envs --------------------------------------------------------------------------
def completion_text(completion: Any) -> str:
    """The text of a TRL completion: a string, or the last assistant message of a conversational completion."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        for message in reversed(completion):
            if isinstance(message, dict) and message.get("role", "assistant") == "assistant":
                content = message.get("content")
                if isinstance(content, list):  # typed content blocks
                    return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
                return "" if content is None else str(content)
    return ""


def reward_function(env_id: str, *, env_kwargs: dict[str, Any] | None = None,
                    name: str | None = None) -> Callable[..., list[float | None]]:
    """A TRL reward function that scores completions with a single-turn env's verifier.

    It is called as ``f(prompts, completions, task=[...], **other_columns)`` and returns one float per
    completion: the verifier's reward, or ``None`` for a row without a task (TRL then leaves that
    row out of this reward). The verifier never raises on model text. Envs whose grading runs code
    (``HumanEval-v0``, ``CodeGen-v0``) have ``verify_batch``; the whole batch is then graded at once.

    Raises:
        ConfigError: when ``env_id`` is not a single-turn env (use :func:`make_rollout_func`).
    """
    env = make(env_id, **(env_kwargs or {}))
    verify = getattr(env.unwrapped, "verify", None)
    if not callable(verify):
        env.close()
        raise ConfigError(f"{env_id} is multi-turn, so a completion alone cannot be scored; use "
                          "make_rollout_func(...) with env_reward, or environment_factory(...).")
    verify_batch = getattr(env.unwrapped, "verify_batch", None)

    def reward(prompts: Sequence[Any] | None = None, completions: Sequence[Any] = (), **columns: Any
               ) -> list[float | None]:
        tasks = columns.get(TASK_COLUMN)
        if tasks is None:
            raise ConfigError("The dataset has no 'task' column; build it with rollgym's make_dataset(...).")
        out: list[float | None] = [None] * len(completions)
        items = [(i, _task_of(t), completion_text(c)) for i, (t, c) in enumerate(zip(tasks, completions))
                 if t is not None]
        if callable(verify_batch):
            scores = verify_batch([(task, text) for _, task, text in items])
        else:
            scores = [verify(task, text) for _, task, text in items]
        for (i, _, _), score in zip(items, scores):
            out[i] = float(score.reward)
        return out

    reward.__name__ = name or re.sub(r"\W", "_", f"{env_id}_reward")
    reward.__doc__ = f"Reward of {env_id}'s verifier for each completion."
    return reward


def env_reward(env_reward: Sequence[float | None], **kwargs: Any) -> list[float | None]:
    """The reward function paired with :func:`make_rollout_func`: the env's episode reward (``None`` if failed)."""
    return [None if r is None else float(r) for r in env_reward]


# -- rollout_func ----------------------------------------------------------------------------------------------------
def _prompt_key(prompt: Any) -> str:
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list) and prompt and isinstance(prompt[-1], dict):
        return completion_text([{"role": "assistant", "content": prompt[-1].get("content")}])
    raise ConfigError("rollout_func prompts must be strings or chat messages from rollgym's make_dataset(...).")


class RolloutFunc:
    """A TRL ``rollout_func`` that plays rollgym episodes; see :func:`make_rollout_func`."""

    def __init__(self, env_id: str, tasks: dict[str, Task], *, env_kwargs: dict[str, Any] | None, max_turns: int,
                 max_tokens_per_turn: int | None, temperature: float | None, seed: int,
                 system_prompt: str | None = None) -> None:
        self.env_id = env_id
        self.system_prompt = system_prompt
        self.tasks = tasks
        self.env_kwargs = dict(env_kwargs or {})
        self.max_turns = max_turns
        self.max_tokens_per_turn = max_tokens_per_turn
        self.temperature = temperature
        self.seed = seed
        self.calls = 0
        self._backend: Any = None
        self._model: Any = None
        self._envs: list[Any] = []  # built on the first call, reused by every later one

    def close(self) -> None:
        """Close the envs kept between calls."""
        while self._envs:
            self._envs.pop().close()

    def backend_for(self, trainer: Any) -> Any:
        """A :class:`TransformersBackend` over the trainer's live (unwrapped) model, made once."""
        from rollgym.agents.backends.hf import TransformersBackend

        model = trainer.accelerator.unwrap_model(trainer.model) if hasattr(trainer, "accelerator") else trainer.model
        if self._backend is None or self._model is not model:
            was_training = model.training
            self._backend = TransformersBackend(model, trainer.processing_class, max_batch=256)
            model.train(was_training)  # the backend sets eval mode; the trainer must stay in its own mode
            self._model = model
        return self._backend

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        """Play one episode per prompt (TRL repeats each prompt ``num_generations`` times, next to each other)."""
        from rollgym.agents.backends.base import SamplingParams
        from rollgym.agents.chat import ChatAgent
        from rollgym.train.adapters.episodes import play_tasks

        tasks = []
        for prompt in prompts:
            key = _prompt_key(prompt)
            if key not in self.tasks:
                raise ConfigError("A prompt is not in the dataset this rollout_func was made with; pass the same "
                                  "dataset to make_rollout_func(...) and to GRPOTrainer.")
            tasks.append(self.tasks[key])
        group_ids, sample_idx = [], []
        group = -1
        for i, prompt in enumerate(prompts):
            if i == 0 or prompts[i - 1] != prompt:
                group += 1
                position = 0
            group_ids.append(f"trl{self.calls}-{group}")
            sample_idx.append(position)
            position += 1
        backend = self.backend_for(trainer)
        args = getattr(trainer, "args", None)
        max_total = int(getattr(args, "max_completion_length", None) or 256)
        sampling = SamplingParams(
            max_tokens=self.max_tokens_per_turn or max_total,
            temperature=self.temperature if self.temperature is not None else float(getattr(trainer, "temperature",
                                                                                            1.0)),
            seed=(self.seed * 1_000_003 + self.calls) % 2**63,
        )
        model = self._model
        was_training = model.training
        backend.policy_version = int(getattr(getattr(trainer, "state", None), "global_step", 0) or 0)
        try:
            agent = ChatAgent(backend, sampling, system_prompt=self.system_prompt)
            trajs = play_tasks(agent, self.env_id, tasks, env_kwargs=self.env_kwargs,
                               max_turns=self.max_turns, seed=self.seed + 10_007 * self.calls,
                               group_ids=group_ids, sample_idx=sample_idx, envs=self._envs)
        finally:
            model.train(was_training)
        self.calls += 1
        eos = int(trainer.processing_class.eos_token_id)
        out: dict[str, list[Any]] = {k: [] for k in ("prompt_ids", "completion_ids", "logprobs", "env_mask",
                                                     "env_reward", "status", "group_id", "num_turns")}
        for traj, task in zip(trajs, tasks):
            completion, mask, logprobs = traj.completion_ids[:max_total], traj.loss_mask[:max_total], \
                traj.logprobs[:max_total]
            prompt_ids = traj.prompt_ids
            if not prompt_ids:  # a failed episode: keep the row's shape, give it no trainable token
                prompt_ids = _render_prompt(trainer.processing_class, task)
            if not completion:
                completion, mask, logprobs = [eos], [0], [0.0]
            if traj.status == "failed":  # TRL sums a None reward to 0: a failed episode must teach nothing
                mask = [0] * len(completion)
            out["prompt_ids"].append(list(prompt_ids))
            out["completion_ids"].append(list(completion))
            out["logprobs"].append(list(logprobs))
            out["env_mask"].append(list(mask))
            out["env_reward"].append(traj.reward)
            out["status"].append(traj.status)
            out["group_id"].append(traj.group_id)
            out["num_turns"].append(len(traj.turns))
        return out


def _render_prompt(tokenizer: Any, task: Task) -> list[int]:
    from rollgym.agents.backends.hf import render_chat_ids

    return render_chat_ids(tokenizer, [{"role": "user", "content": task.prompt}])


def make_rollout_func(env_id: str, dataset: Any, *, env_kwargs: dict[str, Any] | None = None, max_turns: int = 10,
                      max_tokens_per_turn: int | None = None, temperature: float | None = None,
                      seed: int = 0, system_prompt: str | None = None) -> RolloutFunc:
    """A TRL ``rollout_func`` that plays ``env_id`` episodes with the trainer's model.

    Args:
        dataset: The rows (a ``datasets.Dataset`` or a list of :func:`task_rows` dicts) the trainer
            draws prompts from; their ``task`` column maps each prompt to its task.
        env_kwargs: ``make`` arguments of the env.
        max_turns: Most model turns per episode (the episode is truncated after).
        max_tokens_per_turn: Tokens per model turn (default: the trainer's ``max_completion_length``);
            the whole completion (model and env tokens) is cut to ``max_completion_length``.
        temperature: Sampling temperature (default: the trainer's).
        seed: Seeds sampling (one seed per call, shared by the batch so that it stays one batch).
        system_prompt: Overrides the env's system prompt (``""`` drops it), as in :class:`ChatAgent`.

    Returns:
        A callable ``(prompts, trainer) -> dict`` with ``prompt_ids``, ``completion_ids``,
        ``logprobs``, ``env_mask`` (1 on sampled tokens) and the extra columns ``env_reward``
        (``None`` for a failed episode), ``status``, ``group_id`` and ``num_turns``. A failed
        episode's ``env_mask`` is all 0 (TRL sums a ``None`` reward to 0, which must not train).
    """
    tasks: dict[str, Task] = {}
    for row in dataset:
        if TASK_COLUMN not in row or "prompt" not in row:
            raise ConfigError("make_rollout_func needs rows with 'prompt' and 'task'; build them with make_dataset.")
        tasks[_prompt_key(row["prompt"])] = _task_of(row[TASK_COLUMN])
    check_int("max_turns", max_turns, 1)
    return RolloutFunc(env_id, tasks, env_kwargs=env_kwargs, max_turns=max_turns,
                       max_tokens_per_turn=max_tokens_per_turn, temperature=temperature, seed=seed,
                       system_prompt=system_prompt)


# -- self-play ------------------------------------------------------------------------------------------------------
def seated_rows(groups: Sequence[Any], *, advantage: str = "per_role", baselines: Any = None
                ) -> dict[str, list[Any]]:
    """Rows of self-play groups for a trainer: tokens, ``env_mask``, and a role-conditioned ``advantage``.

    ``advantage="per_role"`` centres each role on its own members of the group (per-seat GRPO,
    mean only); ``"rae"`` is SPIRAL's role-conditioned advantage with ``baselines`` (a
    :class:`~rollgym.train.advantages.RoleBaselines` kept across calls; a fresh one when ``None``).
    Failed and aborted seats and seats without tokens are left out. Columns: ``prompt_ids``,
    ``completion_ids``, ``logprobs``, ``env_mask``, ``advantage``, ``env_reward``, ``role``,
    ``group_id`` (``<group>/<role>``, so that TRL's ``num_generations`` consecutive rows share a role)
    and ``traj_id``.

    TRL's ``GRPOTrainer`` computes its own advantages from rewards in groups of ``num_generations``
    rows; to train on these advantages there, pass the ``advantage`` column as the reward with
    ``scale_rewards="none"`` and ``num_generations`` equal to the games per group: TRL's centring then
    subtracts the per-role mean, which is 0 for ``"per_role"`` (so the advantages pass unchanged) and
    the residual per-role mean for ``"rae"``. rollgym's own :class:`~rollgym.train.grpo.GRPOTrainer`
    (``GRPOConfig(advantage="rae")``) applies RAE exactly.

    Example:
        >>> from rollgym.rollout.types import RolloutGroup, Trajectory
        >>> ts = [Trajectory(f"t{i}", "g", i, "K", "t", 0, prompt_ids=[1], completion_ids=[2], loss_mask=[1],
        ...                  logprobs=[-0.5], reward=r, info={"role": ro})
        ...       for i, (r, ro) in enumerate([(1.0, "first"), (-1.0, "second"), (-1.0, "first"), (1.0, "second")])]
        >>> rows = seated_rows([RolloutGroup("g", None, 4, ts)])
        >>> rows["group_id"], rows["advantage"]
        (['g/first', 'g/first', 'g/second', 'g/second'], [1.0, -1.0, -1.0, 1.0])
    """
    from rollgym.rollout.selfplay import split_by_role
    from rollgym.train.advantages import RoleBaselines, group_advantages, role_advantages

    check_choice("advantage", advantage, ("per_role", "rae"))
    by_role = split_by_role(groups)
    if advantage == "rae":
        values = role_advantages(groups, baselines if baselines is not None else RoleBaselines())
    else:
        values = group_advantages(by_role, scale="none")
    out: dict[str, list[Any]] = {k: [] for k in ("prompt_ids", "completion_ids", "logprobs", "env_mask",
                                                 "advantage", "env_reward", "role", "group_id", "traj_id")}
    for group in sorted(by_role, key=lambda g: g.group_id):
        for traj in group.trajectories:
            if traj.traj_id not in values or not traj.completion_ids:
                continue
            out["prompt_ids"].append(list(traj.prompt_ids))
            out["completion_ids"].append(list(traj.completion_ids))
            out["logprobs"].append(list(traj.logprobs))
            out["env_mask"].append(list(traj.loss_mask))
            out["advantage"].append(float(values[traj.traj_id]))
            out["env_reward"].append(traj.reward)
            out["role"].append(str(traj.info.get("role", "")))
            out["group_id"].append(group.group_id)
            out["traj_id"].append(traj.traj_id)
    return out


# -- environment_factory --------------------------------------------------------------------------------------------
_JSON_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list,
                               "object": dict}


def _python_type(schema: dict[str, Any]) -> Any:
    kind = schema.get("type", "string")
    nullable = False
    if isinstance(kind, list):
        nullable = "null" in kind
        kind = next((k for k in kind if k != "null"), "string")
    if "anyOf" in schema:
        kinds = [s.get("type") for s in schema["anyOf"] if isinstance(s, dict)]
        nullable = "null" in kinds
        kind = next((k for k in kinds if k and k != "null"), "string")
    py = _JSON_TYPES.get(str(kind), str)
    if py is list and isinstance(schema.get("items"), dict) and schema["items"].get("type") in _JSON_TYPES:
        item_type = _JSON_TYPES[schema["items"]["type"]]
        py = list[item_type]  # type: ignore[valid-type]
    return py | None if nullable else py


def _one_line(text: Any) -> str:
    return re.sub(r"\s+", " ", str(text or "")).strip()


def _tool_method(spec: dict[str, Any]) -> Callable[..., str]:
    """A method that calls tool ``spec`` through ``env.step``, with the schema's signature and docstring."""
    function = spec.get("function", spec)
    name = str(function["name"])
    parameters = function.get("parameters") or {}
    properties: dict[str, Any] = parameters.get("properties") or {}
    required = [p for p in parameters.get("required") or [] if p in properties]
    optional = [p for p in properties if p not in required]

    def method(self: Any, **arguments: Any) -> str:
        return self._call_tool(name, arguments)  # type: ignore[no-any-return]

    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    lines = [_one_line(function.get("description")) or f"Call the {name} tool.", "", "Args:"]
    for p in required + optional:
        hint = _python_type(properties[p])
        if p in optional:
            hint = hint | None
        annotations[p] = hint
        params.append(inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                        default=inspect.Parameter.empty if p in required else None, annotation=hint))
        description = _one_line(properties[p].get("description")) or p.replace("_", " ")
        if properties[p].get("enum"):
            description += f" (choices: {json.dumps(properties[p]['enum'])})"
        lines.append(f"    {p}: {description}")
    if not properties:
        lines = lines[:1]
    lines += ["", "Returns:", "    The environment's reply (the tool's JSON result or an error)."]
    annotations["return"] = str
    method.__name__ = method.__qualname__ = name
    method.__doc__ = "\n".join(lines)
    method.__annotations__ = annotations
    method.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    return method


class EnvironmentBase:
    """What :func:`environment_factory` classes share: an env, its episode, the reward so far."""

    env_id: str = ""
    env_kwargs: dict[str, Any] = {}  # noqa: RUF012 - set per generated class
    max_turns: int = 30

    def __init__(self) -> None:
        self._env = make(self.env_id, **self.env_kwargs)
        self._reward = 0.0
        self._done = True
        self._turns = 0
        self._info: dict[str, Any] = {}

    def reset(self, **row: Any) -> str | None:
        """Start the row's task (its ``task`` column) and return the first observation.

        If the row's prompt already ends with that observation (a :func:`make_dataset` prompt),
        returns ``None`` so that TRL does not append it twice.
        """
        options = {"task": _task_of(row[TASK_COLUMN])} if row.get(TASK_COLUMN) is not None else None
        observation, self._info = self._env.reset(options=options)
        self._reward, self._done, self._turns = 0.0, False, 0
        prompt = row.get("prompt")
        if isinstance(prompt, list) and prompt and _prompt_key(prompt).endswith(observation):
            return None
        return str(observation)

    def get_reward(self) -> float:
        """The episode's reward so far: the sum of the env's step rewards (0.0 for an unfinished episode)."""
        return float(self._reward)

    def _step(self, action: str) -> str:
        if self._done:
            return "The episode is over; no more actions are accepted."
        observation, reward, terminated, truncated, self._info = self._env.step(action)
        self._reward += float(reward)
        self._turns += 1
        self._done = bool(terminated or truncated) or self._turns >= self.max_turns
        if terminated or truncated:
            observation = f"{observation}\n[episode over, reward {self._reward:g}]".strip()
        return str(observation)

    def _call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        arguments = {k: v for k, v in arguments.items() if v is not None}
        return self._step("<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>")


class TextActions(EnvironmentBase):
    """Adds ``submit`` for envs whose actions are free text (games, single-turn tasks)."""

    def submit(self, answer: str) -> str:
        """Send your answer (for a game, your move) to the environment as your next action.

        Args:
            answer: The text of the action, exactly as the task asks for it (e.g. "Final Answer: 4").

        Returns:
            The environment's reply: the next observation, or what was wrong with the action.
        """
        return self._step(answer)


def environment_factory(env_id: str, *, env_kwargs: dict[str, Any] | None = None, max_turns: int = 30,
                        text_actions: bool | None = None) -> type[EnvironmentBase]:
    """A class for TRL's ``environment_factory``: TRL's tool loop drives ``env_id`` through it.

    Every tool in the env's ``info["tools"]`` becomes a public method with that schema's signature and
    a Google docstring; envs whose actions are text (games, single-turn tasks) also get
    ``submit(answer)``. ``reset(**row)`` plays the row's ``task``; ``get_reward()`` returns the reward.

    Args:
        env_kwargs: ``make`` arguments of the env.
        max_turns: Most actions per episode; later calls are refused.
        text_actions: Add ``submit``; by default, when the env has no tools or is not a tool-use env
            (its actions are not only tool calls).

    Example:
        >>> Env = environment_factory("ToolWorld-v1")  # doctest: +SKIP
        >>> env = Env(); env.reset(task=row["task"]); env.contacts_search(query="Dana")  # doctest: +SKIP
    """
    kwargs = dict(env_kwargs or {})
    probe = make(env_id, **kwargs)
    try:
        _, info = probe.reset(seed=0)
        tools = list(info.get("tools") or [])
    finally:
        probe.close()
    names = {str(t.get("function", t)["name"]) for t in tools}
    if text_actions is None:
        text_actions = not tools or "complete_task" not in names
    members: dict[str, Any] = {"env_id": env_id, "env_kwargs": kwargs, "max_turns": max_turns,
                               "__doc__": f"TRL environment for {env_id}: tools {sorted(names)}."}
    for spec in tools:
        method = _tool_method(spec)
        if not method.__name__.isidentifier() or method.__name__.startswith("_") or method.__name__ in (
                "reset", "get_reward", "submit"):
            raise ConfigError(f"{env_id} has a tool named {method.__name__!r}, which cannot be a method name.")
        members[method.__name__] = method
    base = TextActions if text_actions else EnvironmentBase
    class_name = re.sub(r"\W", "", env_id.replace("-", "_")) + "Environment"
    return type(class_name, (base,), members)


# -- a GRPO run driven step by step, the twin of rollgym's own trainer -----------------------------------------------
#: TRL's loss normalisation for each of rollgym's ``GRPOConfig.aggregation`` values.
_LOSS_TYPES = {"token": "dapo", "sequence": "grpo"}


def trl_prompt_text(tokenizer: Any, messages: Sequence[dict[str, Any]]) -> str:
    """The plain-text prompt that makes TRL's ``GRPOTrainer`` sample from the very ids a ChatAgent samples from.

    Given conversational prompts, TRL (1.16) renders them with ``add_generation_prompt=True``, so a final
    assistant message (a prefill such as ``<answer>``) becomes its own closed turn
    (``<answer><|im_end|>\n<|im_start|>assistant\n``) and the model generates after it. A
    :class:`~rollgym.agents.chat.ChatAgent` with ``reply_prefix`` instead continues the prefill. This renders
    the messages before a final assistant message as the agent does (chat template, generation prompt) and
    appends that message's text, so the reply continues it; without one it is the rendered conversation.
    TRL tokenizes a plain-text prompt with the tokenizer's special tokens: a BOS the tokenizer adds is taken
    off the text's front when the template wrote one, so the ids match.

    Raises:
        ConfigError: when the tokenizer adds special tokens that the text cannot absorb (an EOS, or a BOS the
            template did not write), so TRL's ids would differ from the agent's.
    """
    from rollgym.agents.backends.hf import render_chat_text

    messages = [dict(m) for m in messages]
    prefill = ""
    if messages and messages[-1].get("role") == "assistant":
        prefill = str(messages.pop()["content"] or "")
    text = render_chat_text(tokenizer, messages) + prefill
    probe = "a"
    added = list(tokenizer(probe)["input_ids"])
    plain = list(tokenizer(probe, add_special_tokens=False)["input_ids"])
    if added == plain:
        return text
    bos = getattr(tokenizer, "bos_token", None)
    if added == [tokenizer.bos_token_id, *plain] and bos and text.startswith(bos):
        return text[len(bos):]
    raise ConfigError("This tokenizer adds special tokens around a plain-text prompt that the chat template does "
                      "not write, so TRL would sample from other ids than rollgym's agent; use a tokenizer with "
                      "add_bos_token/add_eos_token off.")


@dataclass(frozen=True, kw_only=True)
class TRLRunConfig:
    """The settings of :func:`run_trl_grpo`, checked on construction (keyword arguments only).

    The loss and optimiser settings default to rollgym's :class:`~rollgym.train.grpo.GRPOConfig`.

    Attributes:
        steps: Optimiser updates (at least 1).
        group_size: Completions per prompt (at least 2).
        learning_rate: AdamW learning rate (above 0).
        max_tokens: Most new tokens per completion (at least 1).
        temperature: Sampling temperature (above 0: TRL samples every completion).
        seed: TRL's seed (sampling, and the shuffle inside a step's batch, which changes no sum).
        eval_every: Evaluate after every this many updates (0: only at the start and the end).
        clip_low, clip_high: The PPO clip ``[1 - clip_low, 1 + clip_high]`` (``clip_low`` in [0, 1)).
        scale: Scale of the advantages: ``"group"``, ``"batch"`` or ``"none"``.
        aggregation: ``"token"`` (TRL's ``"dapo"`` loss) or ``"sequence"`` (TRL's ``"grpo"``).
        max_grad_norm: Gradient clipping norm (0 or more).
        weight_decay: AdamW weight decay (0 or more).
        micro_batch_size: Most completions per forward pass (at least 1).

    Example:
        >>> TRLRunConfig(steps=2, group_size=1, learning_rate=1e-3, max_tokens=8, temperature=1.0, seed=0)
        Traceback (most recent call last):
        ...
        rollgym.core.errors.ConfigError: group_size must be at least 2, got 1.
    """

    steps: int
    eval_every: int = 0
    seed: int
    group_size: int  # sampling
    micro_batch_size: int = 8
    max_tokens: int
    temperature: float
    clip_low: float = 0.2  # the loss
    clip_high: float = 0.2
    scale: str = "group"
    aggregation: str = "token"
    learning_rate: float  # the optimiser
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0

    def __post_init__(self) -> None:
        check_int("steps", self.steps, 1)
        check_int("group_size", self.group_size, 2)
        check_number("learning_rate", self.learning_rate, above=0)
        check_int("max_tokens", self.max_tokens, 1)
        check_number("temperature", self.temperature, above=0)
        check_int("seed", self.seed)
        check_int("eval_every", self.eval_every, 0)
        check_number("clip_low", self.clip_low, 0, below=1)
        check_number("clip_high", self.clip_high, 0)
        check_choice("scale", self.scale, ("group", "batch", "none"))
        check_choice("aggregation", self.aggregation, tuple(_LOSS_TYPES))
        check_number("max_grad_norm", self.max_grad_norm, 0)
        check_number("weight_decay", self.weight_decay, 0)
        check_int("micro_batch_size", self.micro_batch_size, 1)


def run_trl_grpo(model: Any, tokenizer: Any, config: TRLRunConfig | None = None, *,
                 step_prompts: Callable[[int], list[tuple[list[dict[str, Any]], Task]]],
                 reward: Callable[[str, Task], float], evaluate: Callable[[int], float] | None = None,
                 log_path: str | Path | None = None, **settings: Any) -> dict[str, Any]:
    """Train ``model`` in place with TRL's ``GRPOTrainer``, on exactly the prompts rollgym's trainer would see.

    Step ``k`` (from 0) samples ``group_size`` completions of each prompt of ``step_prompts(k)`` (chat
    messages, any system message included, and the task they pose; a final assistant message is a prefill
    that the completion continues, as with ChatAgent's ``reply_prefix``: the prompt goes to TRL as the text
    :func:`trl_prompt_text` renders, so TRL tokenizes exactly the agent's ids), scores each completion with
    ``reward(text, task)`` and makes one optimiser update. Every step must have the same number of
    prompts. The rows of all steps go to TRL in order, unshuffled, one step's prompts per generation
    batch, so a run with the same ``step_prompts`` trains on the same tasks as rollgym's
    :class:`~rollgym.train.grpo.GRPOTrainer`. Parameters with ``requires_grad=False`` stay as they are
    (the optimiser only holds the trainable ones). ``evaluate(step)`` runs before the first update,
    after every ``eval_every`` updates (0: never in between) and after the last one; the model is back
    in training mode for TRL after each call and left in eval mode at the end.

    The other settings default to rollgym's ``GRPOConfig``: no KL term (no reference model), PPO clip
    ``[1 - clip_low, 1 + clip_high]``, ``scale`` of the advantages (``"group"``, ``"batch"``, ``"none"``),
    ``aggregation="token"`` (TRL's ``"dapo"`` loss: token losses summed over the whole step and divided
    by its sampled tokens, as rollgym's token averaging over micro-batches) or ``"sequence"`` (TRL's
    ``"grpo"``), gradient clipping, AdamW at a constant learning rate, ``micro_batch_size`` completions
    per forward pass (the largest divisor of the step's completions not above it).

    What still differs from rollgym's trainer:

    * Sampling: TRL samples with
      ``model.generate`` (top-p and top-k off); rollgym's backend samples with its own per-request
      seeds, so the same seed draws other completions. A completion stops at EOS only, the EOS token is
      trained, and its text is decoded with ``skip_special_tokens=True`` before ``reward`` sees it.
    * Loss: TRL's logprobs are of the logits divided by ``temperature`` (rollgym's are of the raw
      logits), so the two gradients agree only at ``temperature=1``. With one update per batch the
      ratio is 1 in both and the clip never binds.
    * Advantages: TRL divides by the group's Bessel-corrected standard deviation plus ``1e-4``;
      rollgym by the population standard deviation plus ``1e-6``: for groups of one size a
      constant factor (``sqrt(3/4)`` for 4), which AdamW's step all but ignores. Groups whose
      rewards are all equal get 0 in both.

    Args:
        model: A transformers causal LM on the CPU (or one accelerator); trained in place.
        tokenizer: Its tokenizer, with a chat template.
        config: The run's :class:`TRLRunConfig`; or leave it out and pass its fields as keyword
            arguments (``steps=2, group_size=4, ...``), which also override a given ``config``'s.
        step_prompts: ``step_prompts(k)`` gives step ``k``'s ``(messages, task)`` pairs; called for every
            step before training starts.
        reward: ``reward(text, task)``: a completion's reward.
        evaluate: ``evaluate(step) -> float``, e.g. held-out greedy accuracy.
        log_path: JSONL file that receives TRL's log line of every step.

    Returns:
        ``curve`` (``[(step, evaluate(step))]``), ``steps`` (updates made), ``seconds`` (wall time of
        the whole run, evaluations included), ``eval_seconds``, ``reward_mean`` (the mean reward of each
        step's completions), ``log`` (TRL's log records) and ``trl_version``.

    Raises:
        ConfigError: for a setting TRL cannot run, or steps with different numbers of prompts.
    """
    import time

    started = time.perf_counter()
    cfg = configure("run_trl_grpo", TRLRunConfig, config, settings)
    steps, group_size, eval_every = cfg.steps, cfg.group_size, cfg.eval_every
    tasks: list[Task] = []
    rows: list[dict[str, Any]] = []
    per_step = 0
    for step in range(steps):
        batch = list(step_prompts(step))
        if not batch or (step and len(batch) != per_step):
            raise ConfigError(f"step_prompts({step}) gave {len(batch)} prompts; every step needs the same number "
                              f"(step 0 gave {per_step or len(batch)}), at least one.")
        per_step = len(batch)
        for messages, task in batch:
            # a plain-text prompt, so that TRL continues a prefill as the ChatAgent does (trl_prompt_text)
            rows.append({"prompt": trl_prompt_text(tokenizer, messages), "row": len(tasks)})
            tasks.append(task)
    completions = per_step * group_size
    micro = max(d for d in range(1, min(cfg.micro_batch_size, completions) + 1) if completions % d == 0)

    try:
        import datasets
        from transformers import TrainerCallback
        from trl import GRPOConfig, GRPOTrainer
    except ImportError as exc:  # pragma: no cover - depends on the install
        from rollgym.core.errors import MissingDependencyError

        raise MissingDependencyError("run_trl_grpo needs TRL: pip install 'rollgym[trl]'.") from exc

    curve: list[tuple[int, float]] = []
    eval_seconds = 0.0

    def evaluate_at(step: int) -> None:
        nonlocal eval_seconds
        if evaluate is None or (curve and curve[-1][0] == step):
            return
        was_training = model.training
        began = time.perf_counter()
        curve.append((step, float(evaluate(step))))
        eval_seconds += time.perf_counter() - began
        model.train(was_training)

    reward_mean: list[float] = []

    def scored(prompts: list[Any], completions: list[Any], row: list[int], **_: Any) -> list[float | None]:
        values = [float(reward(completion_text(c), tasks[int(r)])) for c, r in zip(completions, row)]
        reward_mean.append(sum(values) / len(values))
        return list[float | None](values)

    scored.__name__ = "reward"
    log: list[dict[str, Any]] = []
    log_file = Path(log_path) if log_path else None
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)

    class Hooks(TrainerCallback):  # type: ignore[misc]
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if eval_every and state.global_step % eval_every == 0:
                evaluate_at(int(state.global_step))

        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
                   **kwargs: Any) -> None:
            record = {"step": int(state.global_step), **(logs or {})}
            log.append(record)
            if log_file is not None:
                with open(log_file, "a", encoding="utf-8") as handle:
                    handle.write(json.dumps(record, default=float) + "\n")

    evaluate_at(0)
    device = next(model.parameters()).device
    with tempfile.TemporaryDirectory(prefix="rollgym-trl-") as output_dir:
        args = GRPOConfig(
            output_dir=output_dir, use_cpu=device.type == "cpu", bf16=False, report_to=[], save_strategy="no",
            logging_steps=1, disable_tqdm=True, dataloader_num_workers=0, dataloader_pin_memory=False,
            seed=cfg.seed, data_seed=cfg.seed, max_steps=steps, learning_rate=cfg.learning_rate,
            lr_scheduler_type="constant", warmup_steps=0, weight_decay=cfg.weight_decay,
            max_grad_norm=cfg.max_grad_norm, optim="adamw_torch", per_device_train_batch_size=micro,
            gradient_accumulation_steps=completions // micro, num_generations=group_size,
            max_completion_length=cfg.max_tokens, temperature=cfg.temperature, shuffle_dataset=False,
            num_iterations=1, beta=0.0, epsilon=cfg.clip_low, epsilon_high=cfg.clip_high, scale_rewards=cfg.scale,
            loss_type=_LOSS_TYPES[cfg.aggregation], mask_truncated_completions=False,
            remove_unused_columns=False, log_completions=False,
        )
        trainer = GRPOTrainer(model=model, reward_funcs=[scored], args=args, processing_class=tokenizer,
                              train_dataset=datasets.Dataset.from_list(rows), callbacks=[Hooks()])
        trainer.train()
        done = int(trainer.state.global_step)
    evaluate_at(done)
    model.eval()
    import trl

    return {"curve": curve, "steps": done, "seconds": time.perf_counter() - started, "eval_seconds": eval_seconds,
            "reward_mean": reward_mean, "log": log, "trl_version": str(trl.__version__)}
