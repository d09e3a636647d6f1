"""rollgym envs as NeMo Gym resources servers: ``rollgym serve-env --nemo-gym``.

NeMo Gym (``nemo-gym``) cannot be installed here: every release needs Python >= 3.12 (this
machine has 3.11) and 0.4.0 pins ``mcp<2`` and ``openai<=2.7.2``, which conflict with the
``openenv-core`` and ``verifiers`` extras. So this adapter speaks NeMo Gym's HTTP protocol
itself, as read from nemo-gym 0.4.0's source:

* ``resources_servers/gymnasium/base.py`` (``GymnasiumServer``, driven by
  ``responses_api_agents/gymnasium_agent``): ``POST /reset`` with
  ``{"responses_create_params": {...}, **extra}`` returns ``{"observation", "info"}``;
  ``POST /step`` with ``{"responses_create_params", "response": <Responses API object>, **extra}``
  returns ``{"observation", "reward", "terminated", "truncated", "info"}``, where
  ``info["tool_outputs"]`` holds ``{"call_id", "output"}`` per function call. The session rides on
  a cookie, which NeMo Gym's agents send back.
* ``nemo_gym/base_resources_server.py`` (``SimpleResourcesServer``): ``POST /seed_session``,
  ``POST /verify`` (the request plus ``"reward"``) and ``POST /aggregate_metrics``.

Routes live under ``/nemo-gym/{env_id}/``. ``extra`` fields of ``/reset`` and ``/seed_session``
pick the task: ``seed``, ``task_index``, ``split``. The model's reply is read from the Responses
API ``output``: ``output_text`` parts become the action text, ``function_call`` items become
Hermes ``<tool_call>`` blocks, so tool envs (ToolWorld, Search, MATH*Tool) take native function
calls. ``/verify`` answers with the episode's reward from the env; a session that never ran
answers with an error (HTTP 409), never with a silent reward 0.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from rollgym.core.toolcalls import ToolCall, tool_response_bodies
from rollgym.serve import http
from rollgym.serve import protocol as wire

if TYPE_CHECKING:
    from rollgym.serve.sessions import SessionHub

COOKIE = "rollgym_nemo_session"
TASK_INDEX_KEY = "_ng_task_index"  # nemo_gym's TASK_INDEX_KEY_NAME


def action_from_response(response: dict[str, Any]) -> tuple[str, list[str]]:
    """The env action of a Responses API object, and the ``call_id`` of each function call in it."""
    texts: list[str] = []
    calls: list[str] = []
    call_ids: list[str] = []
    for item in response.get("output") or []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "message":
            content = item.get("content")
            if isinstance(content, str):
                texts.append(content)
            for part in content if isinstance(content, list) else []:
                if isinstance(part, dict) and part.get("type") == "output_text":
                    texts.append(str(part.get("text", "")))
        elif item.get("type") == "function_call":
            try:
                arguments = json.loads(item.get("arguments") or "{}")
            except ValueError:
                arguments = {"_unparsed": item.get("arguments")}
            calls.append(ToolCall(str(item.get("name", "")), arguments if isinstance(arguments, dict) else {}
                                  ).to_hermes())
            call_ids.append(str(item.get("call_id") or item.get("id") or f"call_{len(call_ids)}"))
    return "".join(texts) + "".join(calls), call_ids


def tool_outputs(observation: str, call_ids: list[str]) -> list[dict[str, str]]:
    """``info["tool_outputs"]`` for NeMo Gym's agent: each call's tool response, in order."""
    bodies = tool_response_bodies(observation)
    return [{"call_id": call_id, "output": bodies[i] if i < len(bodies) else observation}
            for i, call_id in enumerate(call_ids)]


def nemo_gym_routes(hub: SessionHub, max_body_bytes: int) -> list[Any]:
    """Starlette routes of the NeMo Gym protocol over ``hub``'s sessions (bodies up to ``max_body_bytes``)."""
    from starlette.routing import Route

    def respond(payload: Any, status: int = 200, session_id: str | None = None) -> Any:
        response = http.respond(payload, status)
        if session_id is not None:
            response.set_cookie(COOKIE, session_id, httponly=True, samesite="strict")
        return response

    async def body_of(request: Any) -> dict[str, Any]:
        return await http.json_body(request, max_body_bytes)

    def fail(exc: Exception) -> Any:
        return http.fail(exc, hub.metrics.errors)

    def reset_data(body: dict[str, Any]) -> dict[str, Any]:
        return {k: body[k] for k in ("seed", "task_index", "split", "options") if body.get(k) is not None}

    async def open_and_reset(request: Any) -> tuple[Any, dict[str, Any]]:
        body = await body_of(request)
        env_id = request.path_params["env_id"]
        old = request.cookies.get(COOKIE)
        if old and old in hub.sessions:
            await hub.close(hub.sessions[old])
        session = hub.open(env_id)
        reply = await hub.handle(session, {"type": "reset", "data": reset_data(body)})
        assert reply is not None
        if reply["type"] == "error":
            await hub.close(session)
            raise wire.ProtocolError(reply["data"]["code"], reply["data"]["message"])
        return session, reply["data"]["observation"]

    async def reset(request: Any) -> Any:
        try:
            session, obs = await open_and_reset(request)
        except Exception as exc:
            return fail(exc)
        return respond({"observation": obs["text"], "info": obs["info"]}, session_id=session.id)

    async def seed_session(request: Any) -> Any:
        try:
            session, _ = await open_and_reset(request)
        except Exception as exc:
            return fail(exc)
        return respond({}, session_id=session.id)

    def session_of(request: Any) -> Any:
        session_id = request.cookies.get(COOKIE)
        if not session_id:
            raise wire.ProtocolError(wire.SESSION_ERROR,
                                     "No session cookie: call /reset or /seed_session first and send its cookie.")
        return hub.get(session_id, request.path_params["env_id"])

    async def step(request: Any) -> Any:
        try:
            body = await body_of(request)
            session = session_of(request)
            response = body.get("response")
            if not isinstance(response, dict):
                raise wire.ProtocolError(wire.VALIDATION_ERROR, "A step needs 'response', the model's Responses "
                                                                "API object.")
            text, call_ids = action_from_response(response)
            reply = await hub.handle(session, {"type": "step", "data": {"text": text}})
            assert reply is not None
            if reply["type"] == "error":
                raise wire.ProtocolError(reply["data"]["code"], reply["data"]["message"])
        except Exception as exc:
            return fail(exc)
        data, obs = reply["data"], reply["data"]["observation"]
        info = wire.expand_info(obs["info"], session.base_info)
        if call_ids:
            info = {**info, "tool_outputs": tool_outputs(obs["text"], call_ids)}
        return respond({"observation": None if call_ids else obs["text"], "reward": data["reward"],
                        "terminated": obs["terminated"], "truncated": obs["truncated"], "info": info},
                       session_id=session.id)

    async def verify(request: Any) -> Any:
        try:
            body = await body_of(request)
            session = session_of(request)
        except Exception as exc:
            return fail(exc)
        if not session.started:
            return http.respond({"detail": "This session ran no episode, so it has no reward.",
                                  "code": wire.EPISODE_NOT_STARTED}, 409)
        reward = session.total_reward
        await hub.close(session)
        return respond({**body, "reward": reward})

    async def aggregate_metrics(request: Any) -> Any:
        try:
            body = await body_of(request)
        except Exception as exc:
            return fail(exc)
        # AggregateMetrics of nemo_gym/config_types.py: group_level_metrics, agent_metrics, key_metrics
        given = body.get("verify_responses") or []
        if not isinstance(given, list):
            return fail(wire.ProtocolError(wire.VALIDATION_ERROR, "'verify_responses' must be a list."))
        responses = [r for r in given if isinstance(r, dict) and "reward" in r]
        groups: dict[Any, list[float]] = {}
        for r in responses:
            reward, key = r["reward"], r.get(TASK_INDEX_KEY)
            if isinstance(reward, bool) or not isinstance(reward, (int, float)) or not math.isfinite(reward) \
                    or not isinstance(key, (int, str, type(None))):
                return fail(wire.ProtocolError(wire.VALIDATION_ERROR, "Each verify response needs a finite number "
                                               f"'reward' and an integer or string {TASK_INDEX_KEY!r}."))
            groups.setdefault(key, []).append(float(reward))
        rewards = [reward for group in groups.values() for reward in group]
        overall = {"num_rollouts": len(rewards),
                   "mean/reward": sum(rewards) / len(rewards) if rewards else None}
        return respond({
            "group_level_metrics": [{TASK_INDEX_KEY: k, "num_rollouts": len(v), "mean/reward": sum(v) / len(v)}
                                    for k, v in groups.items()],
            "agent_metrics": overall, "key_metrics": {"mean/reward": overall["mean/reward"]},
        })

    prefix = "/nemo-gym/{env_id}"
    return [Route(prefix + path, handler, methods=["POST"]) for path, handler in (
        ("/reset", reset), ("/seed_session", seed_session), ("/step", step), ("/verify", verify),
        ("/aggregate_metrics", aggregate_metrics))]
