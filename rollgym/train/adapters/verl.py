"""Train on rollgym envs with verl.

* :func:`compute_score` is a verl custom reward function
  (``custom_reward_function.path=<this file>``, ``name=compute_score``): it scores a
  single-turn response with the env's verifier. ``data_source`` is the env id and
  ``ground_truth`` the task as JSON. :func:`compute_score_batch` is the same for verl's
  batch reward manager (``reward_model.reward_manager=batch``); use it for the code envs,
  which then grade a whole batch in one sandbox pass.
* :func:`write_parquet` writes prompts in verl's RL dataset format: ``data_source``,
  ``prompt`` (chat messages), ``ability``, ``reward_model`` ``{style: "rule",
  ground_truth}``, ``extra_info`` (split, index, task id, env kwargs), and for
  multi-turn envs ``agent_name`` so that verl routes the row to
  :class:`RollgymAgentLoop`.
* :class:`RollgymAgentLoop` plays one multi-turn episode per call through verl's
  token-in/token-out server manager (``await server_manager.generate(request_id=,
  prompt_ids=, sampling_params=)``) and returns an ``AgentLoopOutput``-shaped
  result: ``prompt_ids``, ``response_ids``, ``response_mask`` (0 on env tokens),
  ``response_logprobs`` (0.0 there), ``reward_score``, ``num_turns``, ``metrics``
  and ``extra_fields`` (status, step rewards, task id, failure). An episode the env
  reports it could not finish (``info["failure"]``, e.g. a dead chess engine) has
  status ``"failed"`` and an all-zero ``response_mask``: verl has no "no reward",
  so its 0 must not train the policy. It works standalone with
  any object that has that ``generate`` coroutine (:class:`BackendServerManager`
  wraps a rollgym backend); when verl is importable, :func:`register_with_verl`
  (run on import) registers a verl subclass under the name ``"rollgym"``.

verl itself is imported lazily and is not a dependency of rollgym.
"""

from __future__ import annotations

import importlib.util
import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rollgym.agents.backends.base import Generation, Prompt, SamplingParams
from rollgym.core.config import check_int
from rollgym.core.errors import ConfigError
from rollgym.core.io import atomic_path
from rollgym.core.registration import make
from rollgym.core.task import Task
from rollgym.train.adapters.prompts import first_prompts

AGENT_NAME = "rollgym"

_VERIFY_CACHE: dict[str, Any] = {}


def _family(env_id: str) -> str:
    return env_id.split(":")[-1].split("-v")[0].split("-")[0].lower()


def _task(value: Any) -> Task:
    if isinstance(value, Task):
        return value
    if isinstance(value, (str, bytes)):
        value = json.loads(value)
    if not isinstance(value, dict):
        raise ConfigError("ground_truth must be a rollgym task as JSON (write_parquet writes it).")
    return Task.from_dict(value)


def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: dict[str, Any] | None = None
                  ) -> dict[str, float]:
    """verl's reward function: the env verifier's reward for one single-turn response.

    Args:
        data_source: The env id (``write_parquet`` writes it), e.g. ``"Countdown-v0"``.
        solution_str: The decoded response.
        ground_truth: The task as JSON (or a dict or :class:`Task`).
        extra_info: Optional ``env_kwargs`` (a dict or JSON) for the env's construction.

    Returns:
        ``{"score": reward, "acc": 1.0 if correct else 0.0}``; verl uses ``score`` and logs the rest.

    Example:
        >>> compute_score("Countdown-v0", "<answer>1 + 2</answer>", task_json)["score"]  # doctest: +SKIP
        1.0
    """
    score = _verifier(data_source, extra_info).verify(_task(ground_truth),
                                                      solution_str if isinstance(solution_str, str) else "")
    return {"score": float(score.reward), "acc": 1.0 if score.correct else 0.0}


def compute_score_batch(data_sources: list[str], solution_strs: list[str], ground_truths: list[Any],
                        extra_infos: list[dict[str, Any] | None] | None = None, **_: Any) -> list[dict[str, float]]:
    """verl's batch reward function (``reward_model.reward_manager=batch``, ``name=compute_score_batch``):
    :func:`compute_score` for a whole batch. Responses of an env with ``verify_batch`` (the code envs,
    whose grading runs every answer in a sandbox) are graded together, one call per env.

    Example:
        >>> compute_score_batch(["CodeGen-v0"] * 2, [good, bad], [task_json] * 2)  # doctest: +SKIP
        [{'score': 1.0, 'acc': 1.0}, {'score': 0.0, 'acc': 0.0}]
    """
    infos = list(extra_infos) if extra_infos is not None else [None] * len(data_sources)
    groups: dict[str, list[int]] = {}
    for i, (source, info) in enumerate(zip(data_sources, infos)):
        groups.setdefault(f"{source}|{json.dumps(_env_kwargs(info), sort_keys=True)}", []).append(i)
    out: list[dict[str, float]] = [{}] * len(data_sources)
    for indices in groups.values():
        env = _verifier(data_sources[indices[0]], infos[indices[0]])
        items = [(_task(ground_truths[i]), solution_strs[i] if isinstance(solution_strs[i], str) else "")
                 for i in indices]
        batch = getattr(env, "verify_batch", None)
        scores = batch(items) if callable(batch) else [env.verify(task, text) for task, text in items]
        for i, score in zip(indices, scores):
            out[i] = {"score": float(score.reward), "acc": 1.0 if score.correct else 0.0}
    return out


def _env_kwargs(extra_info: dict[str, Any] | None) -> dict[str, Any]:
    kwargs = (extra_info or {}).get("env_kwargs") or {}
    return json.loads(kwargs) if isinstance(kwargs, str) else dict(kwargs)


def _verifier(data_source: str, extra_info: dict[str, Any] | None) -> Any:
    """The (cached) unwrapped single-turn env that grades ``data_source`` with the row's env kwargs."""
    kwargs = _env_kwargs(extra_info)
    key = f"{data_source}|{json.dumps(kwargs, sort_keys=True)}"
    env = _VERIFY_CACHE.get(key)
    if env is None:
        made = make(data_source, **kwargs)
        env = made.unwrapped
        if not callable(getattr(env, "verify", None)):
            made.close()
            raise ConfigError(f"{data_source} is multi-turn; train it with RollgymAgentLoop, whose reward_score "
                              "verl uses directly.")
        _VERIFY_CACHE[key] = env
    return env


def verl_rows(env_id: str, n: int, *, split: str = "train", start: int = 0,
              env_kwargs: dict[str, Any] | None = None, agent_name: str | None = None) -> list[dict[str, Any]]:
    """Rows of verl's RL dataset for tasks ``start .. start + n - 1`` of ``split``.

    ``agent_name`` defaults to ``"rollgym"`` for multi-turn envs (route to :class:`RollgymAgentLoop`)
    and is left out for single-turn envs (verl's single-turn loop plus :func:`compute_score`).
    """
    check_int("n", n, 1)
    kwargs = dict(env_kwargs or {})
    env = make(env_id, split=split, **kwargs)
    single_turn = callable(getattr(env.unwrapped, "verify", None))
    name = agent_name if agent_name is not None else (None if single_turn else AGENT_NAME)
    try:
        prompts = first_prompts(env, range(start, start + n))
    finally:
        env.close()
    rows = []
    for index, (task, prompt) in enumerate(prompts, start):
        row: dict[str, Any] = {
            "data_source": env_id,
            "prompt": prompt,
            "ability": _family(env_id),
            "reward_model": {"style": "rule", "ground_truth": json.dumps(task.to_dict())},
            "extra_info": {"split": split, "index": index, "task_id": task.id, "env_id": env_id,
                           "env_kwargs": json.dumps(kwargs)},
        }
        if name:
            row["agent_name"] = name
        rows.append(row)
    return rows


def write_parquet(env_id: str, n: int, path: str | Path, *, split: str = "train", start: int = 0,
                  env_kwargs: dict[str, Any] | None = None, agent_name: str | None = None) -> Path:
    """Write :func:`verl_rows` to a parquet file (atomically) for verl's ``data.train_files``; returns the path."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:  # pragma: no cover - depends on the install
        from rollgym.core.errors import MissingDependencyError

        raise MissingDependencyError("Writing parquet needs pyarrow: pip install 'rollgym[trl]'.") from exc
    rows = verl_rows(env_id, n, split=split, start=start, env_kwargs=env_kwargs, agent_name=agent_name)
    path = Path(path)
    with atomic_path(path) as tmp:
        pq.write_table(pa.Table.from_pylist(rows), tmp)
    return path


# -- the agent loop ---------------------------------------------------------------------------------------------------
@dataclass
class TokenOutput:
    """What :class:`BackendServerManager.generate` returns, shaped like verl's ``TokenOutput``."""

    token_ids: list[int]
    log_probs: list[float] | None = None
    stop_reason: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class BackendServerManager:
    """verl's server-manager interface over a rollgym backend, to run :class:`RollgymAgentLoop` without verl."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any],
                       **kwargs: Any) -> TokenOutput:
        """Sample one completion of ``prompt_ids``; ``sampling_params`` uses verl/vLLM names."""
        params = SamplingParams(
            max_tokens=int(sampling_params.get("max_tokens") or sampling_params.get("max_new_tokens") or 256),
            temperature=float(sampling_params.get("temperature", 1.0)),
            top_p=float(sampling_params.get("top_p", 1.0)),
            top_k=max(0, int(sampling_params.get("top_k", 0) or 0)),
            seed=sampling_params.get("seed"),
        )
        gen = (await self.backend.generate([list(prompt_ids)], params))[0]
        return TokenOutput(list(gen.token_ids), list(gen.logprobs), gen.finish_reason)


class _ServerBackend:
    """The rollgym backend view of a verl server manager, for one episode (one sticky ``request_id``)."""

    name = "verl"

    def __init__(self, server_manager: Any, tokenizer: Any, request_id: str, sampling_params: dict[str, Any]) -> None:
        self.server_manager = server_manager
        self.tokenizer = tokenizer
        self.request_id = request_id
        self.sampling_params = dict(sampling_params)
        self.policy_version = 0

    async def generate(self, prompts: list[Prompt], sampling: SamplingParams) -> list[Generation]:
        out = []
        for prompt in prompts:
            if not isinstance(prompt, list) or not all(isinstance(t, int) for t in prompt):
                raise ConfigError("The verl agent loop works in token ids; give the ChatAgent a tokenizer.")
            prompt_ids = [int(t) for t in prompt]  # type: ignore[arg-type]
            params = {**self.sampling_params}
            params.setdefault("max_tokens", sampling.max_tokens)
            result = await self.server_manager.generate(request_id=self.request_id, prompt_ids=prompt_ids,
                                                        sampling_params=params)
            ids = list(getattr(result, "token_ids", result))
            logprobs = list(getattr(result, "log_probs", None) or [])
            eos = self.tokenizer.eos_token_id
            reason = "stop" if ids and ids[-1] == eos else "length"
            out.append(Generation(text=self.tokenizer.decode(ids, skip_special_tokens=True), token_ids=ids,
                                  logprobs=logprobs if len(logprobs) == len(ids) else [], finish_reason=reason,
                                  prompt_ids=prompt_ids))
        return out


class RollgymAgentLoop:
    """A verl agent loop that plays one rollgym episode (multi-turn or single-turn) per :meth:`run`.

    Args:
        trainer_config: verl's config (read for ``data.max_response_length`` when present); may be ``None``.
        server_manager: Anything with ``async generate(request_id, *, prompt_ids, sampling_params)``
            returning token ids (a list, or an object with ``token_ids`` and ``log_probs``).
        tokenizer: The policy's tokenizer (with a chat template).
        processor: Unused (text only); accepted for verl's signature.
        max_turns: Most model turns per episode.
        max_tokens_per_turn: Sampled tokens per model turn.
        max_response_length: The response is cut to this many tokens (model and env tokens together).
    """

    def __init__(self, trainer_config: Any = None, server_manager: Any = None, tokenizer: Any = None,
                 processor: Any = None, *, max_turns: int = 10, max_tokens_per_turn: int = 256,
                 max_response_length: int | None = None, **kwargs: Any) -> None:
        if server_manager is None or tokenizer is None:
            raise ConfigError("RollgymAgentLoop needs a server_manager and a tokenizer.")
        self.config = trainer_config
        self.server_manager = server_manager
        self.tokenizer = tokenizer
        self.processor = processor
        self.max_turns = max_turns
        self.max_tokens_per_turn = max_tokens_per_turn
        configured = _config_get(trainer_config, ("data", "max_response_length"))
        self.max_response_length = max_response_length or (int(configured) if configured else None)

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> Any:
        """Play the row's task and return an ``AgentLoopOutput`` (a dict when verl is not installed).

        ``kwargs`` are the dataset row's fields: ``reward_model["ground_truth"]`` (the task),
        ``data_source`` (the env id) and ``extra_info["env_kwargs"]``.
        """
        from rollgym.agents.chat import ChatAgent

        extra_info = dict(kwargs.get("extra_info") or {})
        env_id = str(kwargs.get("data_source") or extra_info.get("env_id") or "")
        if not env_id:
            raise ConfigError("A row needs data_source (the env id); write the data with write_parquet.")
        reward_model = kwargs.get("reward_model") or {}
        task = _task(reward_model.get("ground_truth") if isinstance(reward_model, dict) else None)
        env_kwargs = extra_info.get("env_kwargs") or {}
        if isinstance(env_kwargs, str):
            env_kwargs = json.loads(env_kwargs)
        request_id = uuid.uuid4().hex
        backend = _ServerBackend(self.server_manager, self.tokenizer, request_id,
                                 {"max_tokens": self.max_tokens_per_turn, **(sampling_params or {})})
        agent = ChatAgent(backend, SamplingParams(max_tokens=self.max_tokens_per_turn), tokenizer=self.tokenizer)
        env = make(env_id, **env_kwargs)
        status, reward, steps, step_rewards = "truncated", 0.0, 0, []
        failure: dict[str, Any] | None = None
        try:
            observation, info = env.reset(options={"task": task})
            agent.reset()
            while steps < self.max_turns:
                action = await agent.aact(observation, info)
                observation, r, terminated, truncated, info = env.step(action)
                steps += 1
                step_rewards.append(float(r))
                agent.record_reward(float(r))
                if terminated or truncated:
                    status = "completed" if terminated else "truncated"
                    if isinstance(info.get("failure"), dict):  # the env could not go on (a dead engine)
                        status, failure = "failed", dict(info["failure"])
                    break
            reward = float(sum(step_rewards))
        finally:
            env.close()
        record = agent.token_record()
        response, mask, logprobs = record.completion_ids, record.loss_mask, record.logprobs
        if failure is not None:
            # verl has no "no reward": an episode the env could not finish keeps its shape but no
            # trainable token, so its 0 never teaches the policy anything
            mask = [0] * len(mask)
        if self.max_response_length is not None:
            response, mask, logprobs = (response[: self.max_response_length], mask[: self.max_response_length],
                                        logprobs[: self.max_response_length])
        output = {
            "prompt_ids": list(record.prompt_ids),
            "response_ids": list(response),
            "response_mask": list(mask),
            "response_logprobs": list(logprobs),
            "reward_score": reward,
            "num_turns": len(agent.messages) - (1 if agent.messages and agent.messages[0]["role"] == "system" else 0),
            "metrics": {},
            "extra_fields": {"status": status, "step_rewards": step_rewards, "task_id": task.id, "env_id": env_id,
                             "per_turn_rows": record.per_turn_rows, "request_id": request_id,
                             "failure": failure},
        }
        return _as_verl_output(output)


def _config_get(config: Any, path: tuple[str, ...]) -> Any:
    node = config
    for key in path:
        if node is None:
            return None
        node = node.get(key) if isinstance(node, dict) else getattr(node, key, None)
    return node


def _as_verl_output(output: dict[str, Any]) -> Any:
    if importlib.util.find_spec("verl") is None:
        return output
    try:  # pragma: no cover - verl is not installed in rollgym's test environment
        from verl.experimental.agent_loop.agent_loop import AgentLoopMetrics, AgentLoopOutput

        return AgentLoopOutput(**{**output, "metrics": AgentLoopMetrics()})
    except Exception:  # pragma: no cover - another verl version: hand back the plain fields
        return output


def register_with_verl(name: str = AGENT_NAME) -> type | None:
    """Register a verl ``AgentLoopBase`` subclass of :class:`RollgymAgentLoop` as ``name``; ``None`` without verl."""
    if importlib.util.find_spec("verl") is None:
        return None
    try:  # pragma: no cover - verl is not installed in rollgym's test environment
        from verl.experimental.agent_loop.agent_loop import AgentLoopBase, register
    except Exception:  # pragma: no cover
        return None

    class VerlRollgymAgentLoop(RollgymAgentLoop, AgentLoopBase):  # type: ignore[misc, valid-type]  # pragma: no cover
        """:class:`RollgymAgentLoop` as a registered verl agent loop."""

        def __init__(self, trainer_config: Any, server_manager: Any, tokenizer: Any, processor: Any = None,
                     **kwargs: Any) -> None:
            RollgymAgentLoop.__init__(self, trainer_config, server_manager, tokenizer, processor, **kwargs)

    return register(name)(VerlRollgymAgentLoop)  # type: ignore[no-any-return]  # pragma: no cover


VERL_AGENT_LOOP = register_with_verl()
