"""Adapters run episodes through the frameworks' own APIs: SkyRL-Gym, NeMo Gym (protocol), verifiers."""

from __future__ import annotations

import json
import uuid

import pytest

import rollgym
from rollgym.agents import OracleAgent
from rollgym.core.toolcalls import parse_tool_calls
from tests.conftest import require_module
from tests.serve.conftest import serve_thread


# -- SkyRL-Gym (skyrl-gym 0.4.0) ------------------------------------------------------------------
def _skyrl_episode(make_agent, extras: dict, env_config: dict | None = None) -> tuple[float, int, dict]:
    """SkyRLGymGenerator's loop: make the env from the registry, init, then step on the model's text."""
    import skyrl_gym
    from omegaconf import OmegaConf

    from rollgym.serve.adapters.skyrl import register_skyrl

    env = skyrl_gym.make(register_skyrl(), env_config=OmegaConf.create(env_config or {}), extras=extras)
    chat, metadata = env.init([{"role": "user", "content": "(replaced by the env's own prompt)"}])
    agent = make_agent()
    agent.reset(seed=0)
    observation, info, total, done, turns = chat[-1]["content"], metadata["info"], 0.0, False, 0
    while not done:
        out = env.step(agent.act(observation, info))
        total, done, turns = total + out["reward"], out["done"], turns + 1
        info = out["metadata"]["info"]
        if not done:
            observation = out["observations"][-1]["content"]
            chat += out["observations"]
    metrics = env.get_metrics()
    env.close()
    return total, turns, metrics


@pytest.mark.parametrize("env_id", ["Countdown-v0", "ToolWorld-v0"])
def test_skyrl_gym_plays_rollgym_envs_locally_and_remotely_with_the_oracle(env_id):
    require_module("skyrl_gym")
    total, _, metrics = _skyrl_episode(OracleAgent, {"env_id": env_id, "seed": 2, "split": "test"})
    assert total == 1.0 and metrics["correct"] == 1.0
    with serve_thread(env_id) as url:  # the same row, played on a rollgym serve-env server
        total, _, _ = _skyrl_episode(OracleAgent, {"env_id": env_id, "seed": 2, "split": "test"}, {"url": url})
    assert total == 1.0


@pytest.mark.slow
def test_skyrl_gym_runs_the_tiny_model(tiny_backend):
    require_module("skyrl_gym")
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.chat import ChatAgent

    total, turns, metrics = _skyrl_episode(lambda: ChatAgent(tiny_backend, SamplingParams(max_tokens=8)),
                                           {"env_id": "Countdown-v0", "seed": 1, "split": "test"})
    assert turns == 1 and total in (0.0, 1.0) and metrics["turns"] == 1


def test_skyrl_env_without_an_env_id_is_one_clear_error():
    require_module("skyrl_gym")
    import skyrl_gym

    from rollgym.serve.adapters.skyrl import register_skyrl

    with pytest.raises(rollgym.ConfigError, match="env_id"):
        skyrl_gym.make(register_skyrl(), env_config={}, extras={})


# -- NeMo Gym (protocol of nemo-gym 0.4.0; the package needs Python >= 3.12) ----------------------
def _responses_object(text: str) -> dict:
    """A Responses API object as NeMo Gym's model servers return it: text as a message, tool calls as
    function_call items (nemo_gym/openai_utils.py NeMoGymResponse)."""
    output = []
    parsed = parse_tool_calls(text)
    for call in parsed.calls:
        output.append({"type": "function_call", "name": call.name, "arguments": json.dumps(call.arguments),
                       "call_id": f"call_{uuid.uuid4().hex[:8]}", "id": f"fc_{uuid.uuid4().hex[:8]}",
                       "status": "completed"})
    if not parsed.calls:
        output.append({"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
                       "content": [{"type": "output_text", "text": text, "annotations": []}]})
    return {"id": f"resp_{uuid.uuid4().hex[:8]}", "object": "response", "created_at": 0, "model": "oracle",
            "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}


def _gymnasium_agent_run(url: str, env_id: str, act, extra: dict) -> tuple[float, dict, dict]:
    """responses_api_agents/gymnasium_agent/app.py's run(), over HTTP, with an agent in the model's seat."""
    import httpx

    base = f"{url}/nemo-gym/{env_id}"
    body = {"responses_create_params": {"input": [{"role": "user", "content": "Solve the task."}]}, **extra}
    with httpx.Client(timeout=60) as client:
        reset = client.post(f"{base}/reset", json=body)
        reset.raise_for_status()
        data = reset.json()
        assert set(data) == {"observation", "info"}  # EnvResetResponse
        observation, info, total = data["observation"], data["info"], 0.0
        for _ in range(40):
            response = _responses_object(act(observation, info))
            step = client.post(f"{base}/step", json=body | {"response": response})
            step.raise_for_status()
            data = step.json()
            assert set(data) == {"observation", "reward", "terminated", "truncated", "info"}  # EnvStepResponse
            total += data["reward"]
            if data["terminated"] or data["truncated"]:
                break
            info = data["info"]
            outputs = info.get("tool_outputs") or []
            calls = [o for o in response["output"] if o["type"] == "function_call"]
            assert [o["call_id"] for o in outputs] == [c["call_id"] for c in calls]
            observation = data["observation"] if not outputs else "\n".join(
                f'<tool_response name="{c["name"]}">\n{o["output"]}\n</tool_response>' for c, o in zip(calls, outputs))
        verify = client.post(f"{base}/verify", json=body | {"response": response})
        verify.raise_for_status()
        return total, data, verify.json()


@pytest.mark.parametrize("env_id", ["Countdown-v0", "ToolWorld-v0"])
def test_nemo_gym_gymnasium_agent_loop_plays_rollgym_envs_with_the_oracle(env_id):
    agent = OracleAgent()
    with serve_thread(env_id, nemo_gym=True) as url:
        total, last, verified = _gymnasium_agent_run(url, env_id, agent.act, {"seed": 3, "split": "test"})
        import httpx

        metrics = httpx.post(f"{url}/nemo-gym/{env_id}/aggregate_metrics", json={"verify_responses": [
            {**verified, "_ng_task_index": 0}, {"reward": 0.0, "_ng_task_index": 1}]}).json()
    assert total == 1.0 and last["terminated"] and verified["reward"] == 1.0
    assert set(metrics) == {"group_level_metrics", "agent_metrics", "key_metrics"}  # nemo_gym's AggregateMetrics
    assert metrics["key_metrics"]["mean/reward"] == 0.5 and len(metrics["group_level_metrics"]) == 2


@pytest.mark.slow
def test_nemo_gym_loop_runs_the_tiny_model(tiny_backend):
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.chat import ChatAgent

    agent = ChatAgent(tiny_backend, SamplingParams(max_tokens=8))
    agent.reset(seed=0)
    with serve_thread("Countdown-v0", nemo_gym=True) as url:
        total, last, verified = _gymnasium_agent_run(url, "Countdown-v0", agent.act, {"seed": 1, "split": "test"})
    assert last["terminated"] and verified["reward"] == total


def test_nemo_gym_verify_without_an_episode_is_an_error_not_a_silent_zero():
    import httpx

    with serve_thread("Countdown-v0", nemo_gym=True) as url:
        base = f"{url}/nemo-gym/Countdown-v0"
        no_cookie = httpx.post(f"{base}/verify", json={"responses_create_params": {"input": []}})
        assert no_cookie.status_code == 404 and "cookie" in no_cookie.json()["detail"]
        bad_step = httpx.post(f"{base}/step", json={"responses_create_params": {"input": []}})
        assert bad_step.status_code == 404
        unknown = httpx.post(f"{url}/nemo-gym/Nope-v0/reset", json={"responses_create_params": {"input": []}})
        assert unknown.status_code == 404 and "does not host" in unknown.json()["detail"]
