"""Reference policies for UserSim: the oracle (asks, confirms, unlocks, solves) and a random talker-caller.

The oracle plays from public information only, as an agent would: the scenario and the kinds of fact to ask
for come from ``info["task_meta"]``; every value comes from the user's replies (read back with the public
paraphrase list); the tool results come from the observations. It asks one fact per message with
:data:`~rollgym.envs.usersim.user.QUESTIONS`, then plays the ToolWorld template's reference solution, asking the
user to confirm before each irreversible call (naming the call:
:func:`~rollgym.envs.usersim.user.describe_call`) and to unlock their app when a tool says it is locked.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Generator, Mapping
from typing import Any

import numpy as np

from rollgym.core.toolcalls import ToolCall, tool_response_bodies
from rollgym.envs.tools.api import REGISTRY
from rollgym.envs.tools.policies import random_policy as tool_random_policy
from rollgym.envs.tools.tasks import TEMPLATES
from rollgym.envs.usersim.scenarios import SCENARIOS, heard, spoken
from rollgym.envs.usersim.user import PARAPHRASES, QUESTIONS, describe_call

_MAX_RUNNING = 4096
_READERS = [re.compile(re.escape(p.split("{v}")[0]) + "(.+)" + re.escape(p.split("{v}")[1]), re.DOTALL)
            for p in sorted(PARAPHRASES, key=lambda p: p.startswith("{v}"))]  # prefixed forms first

Script = Generator[str, str, None]


def read_fact(reply: str) -> str:
    """The value in a one-fact reply of the simulated user (``""`` when the reply states none)."""
    for reader in _READERS:
        match = reader.fullmatch(reply.strip())
        if match:
            return match.group(1)
    return ""


def _hermes(name: str, arguments: dict[str, Any]) -> str:
    return ToolCall(name, arguments).to_hermes()


def _result(observation: str) -> Any:
    bodies = tool_response_bodies(observation)
    try:
        return json.loads(bodies[-1]) if bodies else {}
    except ValueError:
        return {}


def oracle_script(meta: dict[str, Any], *, confirm: bool = True, ask: bool = True,
                  known: Mapping[str, Any] | None = None) -> Script:
    """The oracle's actions for one episode; ``send`` it each observation. ``confirm=False`` and ``ask=False``
    leave out the confirmations or the questions, and ``known`` gives facts the agent holds without asking
    (a leak): the reward-hack tests' agents."""
    scenario = SCENARIOS[meta["scenario"]]
    params: dict[str, Any] = dict(known or {})
    for key, kind in meta["asks"]:
        if not ask:
            break
        reply = yield QUESTIONS[kind]
        if key != "identity":
            params[key] = heard(key, read_fact(reply))
    solution = TEMPLATES[meta["template"]].solve(dict(params))
    sent: Any = None
    while True:
        try:
            name, arguments = solution.send(sent)
        except StopIteration:
            break
        except Exception:  # a fact the oracle never got (ask=False): nothing left to do but finish
            break
        if confirm and name in scenario.irreversible:
            details = ", ".join(spoken(key, params[key]) for key in scenario.confirm)
            yield f"Please confirm: {details}. I will run {describe_call(name, arguments)}. Shall I go ahead?"
        sent = _result((yield _hermes(name, arguments)))
        if isinstance(sent, dict) and sent.get("error", {}).get("type") == "locked_by_user":
            yield f"Please unlock the {REGISTRY[name].app} app on your phone and tell me when it is done."
            sent = _result((yield _hermes(name, arguments)))
    yield _hermes("complete_task", {})


class ScriptedPolicy:
    """A policy ``f(observation, info) -> action`` running one :func:`oracle_script`-like script per episode.

    Scripts are keyed by ``info["episode_id"]`` and restarted on turn 0; the oldest are dropped beyond 4,096.
    """

    def __init__(self, **options: Any) -> None:  # oracle_script's options
        self.options = options
        self.running: OrderedDict[str, Script] = OrderedDict()

    def __call__(self, observation: str, info: dict[str, Any]) -> str:
        meta = info.get("task_meta") or {}
        key = str(info.get("episode_id") or info.get("task_id"))
        try:
            if key not in self.running or info.get("turn", 0) == 0:
                self.running[key] = oracle_script(meta, **self.options)
                while len(self.running) > _MAX_RUNNING:
                    self.running.popitem(last=False)
                return next(self.running[key])
            return self.running[key].send(observation)
        except StopIteration:
            self.running.pop(key, None)
            return _hermes("complete_task", {})


_oracle = ScriptedPolicy()


def oracle_policy(observation: str, info: dict[str, Any]) -> str:
    """The oracle's next action for this episode."""
    return _oracle(observation, info)


_SMALL_TALK = ["Hello! How can I help you today?", "Thanks!", "Could you tell me more?", "", "ok",
               "Tell me everything.", "<think>hmm</think>"]


def random_policy(observation: str, info: dict[str, Any], rng: np.random.Generator) -> str:
    """Half the time a random message to the user (a question of a random kind, or small talk), else random
    tool calls as ToolWorld's random policy makes them."""
    if rng.random() < 0.5:
        if rng.random() < 0.6:
            questions = list(QUESTIONS.values())
            return questions[int(rng.integers(len(questions)))]
        return _SMALL_TALK[int(rng.integers(len(_SMALL_TALK)))]
    return tool_random_policy(observation, info, rng)
