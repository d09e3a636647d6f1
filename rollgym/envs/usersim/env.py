"""``UserSim-v1`` (and ``-v0``): serve a simulated user through a conversation while operating ToolWorld's apps."""

from __future__ import annotations

import json
import re
from typing import Any

from rollgym.core.difficulty import Difficulty, Level
from rollgym.core.env import StepResult, TextEnv
from rollgym.core.errors import ConfigError
from rollgym.core.seeding import stable_int
from rollgym.core.task import Score, Task
from rollgym.core.toolcalls import parse_tool_calls
from rollgym.envs.tools import apps as _apps  # noqa: F401  (the app modules register their tools)
from rollgym.envs.tools.api import REGISTRY, Session, ToolSpec, call_tool, error, run_turn
from rollgym.envs.tools.episode import new_episode_id
from rollgym.envs.tools.scope import check_tool_scope, scope_is_task, scoped_schemas, solution_tools
from rollgym.envs.tools.tasks import TEMPLATES
from rollgym.envs.tools.tasks.source import world_seed
from rollgym.envs.tools.world import APP_NAMES, base_world
from rollgym.envs.usersim.grading import Conversation, grade_episode
from rollgym.envs.usersim.llm_user import LLMUser, UserModel
from rollgym.envs.usersim.scenarios import SCENARIOS, TRANSFER_LIMIT, VARIANTS, UserSimTaskSource, usersim_difficulty
from rollgym.envs.usersim.user import SimulatedUser, default_device

SYSTEM_PROMPT_V0 = (
    "You are a customer-service assistant for a suite of apps (contacts, email, calendar, payments, notes, "
    "shopping). A user is chatting with you. To talk to the user, reply with plain text (no tool call); the "
    "user's answer comes back as the next message. To use the apps, write one or more blocks like\n"
    '<tool_call>{"name": "contacts_search", "arguments": {"query": "Dana"}}</tool_call>\n'
    "(a turn with tool calls sends nothing to the user); results come back in <tool_response> blocks.\n"
    "Policy:\n"
    "1. Before changing anything, ask the user for the email address on their account.\n"
    "2. Ask the user for the details you need, one or two at a time; do not guess them. The user loses "
    "patience with messages that do not move the errand forward.\n"
    "3. Before an irreversible action (sending money, deleting a contact or an event, cancelling an order), tell "
    "the user exactly what you will do, with its details, and ask them to confirm; act only after they say yes.\n"
    f"4. Refuse what policy forbids: transfers or payment requests above ${TRANSFER_LIMIT:.0f}, refunds for "
    "items that are not damaged, and deleting anything (contacts, emails, notes, events) or declining invitations "
    "that the errand does not need.\n"
    "5. The user's phone is theirs: when a tool says an app is locked on the user's phone, ask the user to "
    "unlock it, then try again. Do not ask them to do anything else on their phone.\n"
    "When the errand is done, call complete_task."
)
_CONFIRM_V0 = ("3. Before an irreversible action (sending money, deleting a contact or an event, cancelling an order), "
               "tell the user exactly what you will do, with its details, and ask them to confirm; act only after they "
               "say yes.\n")
_CONFIRM_V1 = ("3. Before an irreversible action (sending money, deleting a contact or an event, cancelling an order), "
               "tell the user exactly what you will do: name the call as the tool's name followed by its arguments in "
               'braces (for example: payments_send {"amount": 12.5, "note": "Lunch", "to": "dana@example.com"}), '
               "repeat its details, and ask them to confirm. Act only after they say yes, with exactly that call: a "
               "yes covers only the call it named, once.\n")
assert _CONFIRM_V0 in SYSTEM_PROMPT_V0
SYSTEM_PROMPT = SYSTEM_PROMPT_V0.replace(_CONFIRM_V0, _CONFIRM_V1)
"""The v1 prompt (UserSim-v1): a confirmation names the exact call (``SYSTEM_PROMPT_V0`` is v0's)."""
RULES = ("v1", "v0")
_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL | re.IGNORECASE)
_EXCLUDED_TOOLS = ("whoami",)  # the agent learns who the user is by asking them


def agent_tools() -> dict[str, ToolSpec]:
    """The operations the agent may call: every ToolWorld app's, ``complete_task``, but not ``whoami``."""
    return {name: spec for name, spec in REGISTRY.items() if name not in _EXCLUDED_TOOLS}


def message_text(action: str) -> str:
    """What an action says to the user: its text without ``<think>`` blocks, stripped."""
    return _THINK.sub("", action).strip()


class UserSimEnv(TextEnv):
    """Help a simulated user with an errand: ask them for what you need, follow policy, operate the apps.

    ## Description
    tau2-bench-style customer service over ToolWorld's six apps. The user opens with a vague request; the
    details (who, how much, which order, which date, ...) and their account email are private facts, each
    revealed only when the agent asks in words that name it (see :mod:`rollgym.envs.usersim.user`). Irreversible
    actions need the user's confirmation of their details first, some users also ask for something policy
    forbids, and in dual-control tasks the domain's app is locked on the user's phone: the agent must ask the user
    to unlock it (the user changes their own device state and reports back). The user is deterministic and
    rule-driven, with seeded paraphrases.

    ## Action Space
    Text (``TextSpace``). An action with Hermes ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
    blocks (or a JSON list of OpenAI-style calls) runs them; any text beside them is not sent. An action without
    tool calls is a message to the user (``<think>`` blocks removed).

    ## Observation Space
    Text. The first observation is the user's opening message. After a tool turn, ``<tool_response name="...">``
    blocks with each call's JSON result or ``{"error": {"type", "message"}}`` (``malformed_call`` for calls that
    do not parse); after a message, the user's reply.

    ## Starting State
    A fresh copy of one of ToolWorld's 16 cached base worlds, and the user's phone (every app unlocked, signed
    in, data intact; in ``dual`` tasks the domain's app locked).

    ## Rewards
    0.0 per step; at the end, 1.0 when the app state equals the goal with no collateral change (the shared
    state-diff grader) and every conversation check passes (see :mod:`rollgym.envs.usersim.grading`), else 0.0.

    ## Episode End
    Terminated when the agent calls ``complete_task`` or when the user runs out of patience (``patience``
    messages that achieve nothing: reward 0.0, ``error="user_left"``); truncated (reward 0.0) after
    ``max_turns`` actions or ``max_calls`` tool calls.

    ## Information
    The common keys, ``tools``, ``turn``, ``calls``, ``episode_id`` and ``channel`` (``"tools"`` or ``"user"``:
    what the observation holds); at the end the score's fields (``reward``, ``correct``, ``parsed`` (``None``),
    ``error``: ``None``, ``"wrong"``, ``"side_effects"``, ``"user_left"`` or ``"not_completed"``, ``details``:
    each criterion's verdict and reasons, the diff) and ``user``: facts revealed, confirmations, strikes, the
    phone's state.

    ## Arguments
    ``rules`` (``"v1"`` or ``"v0"``, set by the id: see Version History), ``scenarios`` (names, default all),
    ``variants`` (``facts``, ``policy``, ``dual``; default all), ``split``
    (``train``, ``validation``, ``test``, or ``test_unseen``: the held-out calendar domain), ``max_turns`` (40),
    ``max_calls`` (150), ``max_calls_per_turn`` (16), ``patience`` (4), ``user_model`` (``None``: the
    rule-driven user; a callable ``model(messages) -> str`` puts a model in the user's seat with the same graders,
    see :mod:`rollgym.envs.usersim.llm_user` and :func:`rollgym.agents.llm_user.backend_user`), ``render_mode``,
    ``tool_scope`` (``auto``: at the easiest level ``info["tools"]`` lists only the tools the task's reference
    solution calls and ``complete_task``, as compact schemas, every tool otherwise; ``all``; ``task``; see
    :mod:`rollgym.envs.tools.scope`).

    ## Version History
    * v1: a confirmation is bound to the action: the request must name exactly one irreversible call (the tool
      and its arguments in braces, :func:`~rollgym.envs.usersim.user.describe_call`) and negate nothing, and the
      user's yes covers only that exact call, once. v0's yes to "please confirm that I will NOT transfer $40 to
      Ana" confirmed the transfer. The system prompt's policy 3 says how to name the call.
    * v0: initial version (kept to reproduce its results; a yes confirms the next irreversible call, whatever the
      request said about it).
    """

    default_env_id = "UserSim-v1"

    def __init__(self, scenarios: list[str] | tuple[str, ...] | None = None,
                 variants: list[str] | tuple[str, ...] = VARIANTS, split: str = "train", max_turns: int = 40,
                 max_calls: int = 150, max_calls_per_turn: int = 16, patience: int = 4,
                 user_model: UserModel | None = None, render_mode: str | None = None, rules: str = "v1",
                 tool_scope: str = "auto") -> None:
        if rules not in RULES:
            raise ConfigError(f"rules must be 'v1' or 'v0', got {rules!r}.")
        self.rules = rules
        self.system_prompt = SYSTEM_PROMPT if rules == "v1" else SYSTEM_PROMPT_V0
        for name, value in (("max_turns", max_turns), ("max_calls", max_calls),
                            ("max_calls_per_turn", max_calls_per_turn), ("patience", patience)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}.")
        self.tool_scope = check_tool_scope(tool_scope)
        self._scenarios = list(scenarios) if scenarios is not None else None
        self._variants = list(variants)
        self._max_observation = 400_000
        super().__init__(split=split, render_mode=render_mode, max_observation_length=self._max_observation)
        self.max_turns, self.max_calls, self.max_calls_per_turn = max_turns, max_calls, max_calls_per_turn
        if user_model is not None and not callable(user_model):
            raise ConfigError("user_model must be a callable model(messages) -> str, e.g. "
                              "rollgym.agents.llm_user.backend_user(backend).")
        self.patience = patience
        self.user_model = user_model
        self._tool_specs = agent_tools()
        self._all_tools = [spec.schema for spec in self._tool_specs.values()]
        self._tools_json = json.dumps(self._all_tools)
        self._tools = json.loads(self._tools_json)
        self.session: Session | None = None
        self.user: SimulatedUser | None = None
        self.conversation = Conversation()
        self.goal_device: dict[str, str] = {}
        self.turn = 0
        self.attempts = 0
        self.episode_id = ""

    @property
    def tools(self) -> list[dict[str, Any]]:
        """OpenAI function schemas of the tools shown: every app operation and ``complete_task`` (no ``whoami``),
        or with ``tool_scope`` only the episode's task's (:mod:`rollgym.envs.tools.scope`)."""
        return self._tools

    def _reference_tools(self, task: Task) -> list[str] | None:
        """The tools the task's reference solution calls, in order (run on a scratch copy of its world)."""
        params = task.answer.get("params")
        if task.meta.get("template") not in TEMPLATES or not isinstance(params, dict):
            return None  # a hand-made task without a reference: show every tool
        world = base_world(world_seed(task.meta["world"]))
        solution = TEMPLATES[task.meta["template"]].solve(dict(params))
        specs = self._tool_specs
        return solution_tools(solution, Session(world.me.email, world.now, world.copy()),
                              lambda s, name, args: call_tool(s, name, args, specs))

    def _apply_scope(self, task: Task) -> None:
        narrow = scope_is_task(self.tool_scope, self._episode_difficulty)
        shown = scoped_schemas(self._all_tools, self._reference_tools(task)) if narrow else self._all_tools
        self._tools_json = json.dumps(shown)
        self._tools = json.loads(self._tools_json)

    def _make_source(self, env_id: str) -> UserSimTaskSource:
        return UserSimTaskSource(self._scenarios, self._variants, env_id=env_id)

    @property
    def difficulty(self) -> Difficulty | None:
        """One level per variant: ``facts``, ``policy`` (+ a forbidden request), ``dual`` (+ a locked app)."""
        return usersim_difficulty(self._variants)

    def _level_source(self, env_id: str, level: Level) -> UserSimTaskSource:
        return UserSimTaskSource(self._scenarios, level.knobs["variants"], env_id=env_id)

    # -- episode --------------------------------------------------------------------------------
    def _close_session(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None

    def _start(self, task: Task) -> str:
        meta, answer = task.meta, task.answer
        if meta.get("scenario") not in SCENARIOS or not isinstance(meta.get("world"), int) or \
                not isinstance(answer, dict) or not isinstance(answer.get("facts"), dict):
            raise ConfigError("A UserSim task needs meta['scenario'], meta['world'] and answer['facts']; pass a "
                              "task made by this env's source or use options={'task_index': i}.")
        self._close_session()
        scenario = SCENARIOS[meta["scenario"]]
        world = base_world(world_seed(meta["world"]))
        self.session = Session(world.me.email, world.now, world.copy())
        locked = scenario.domain if meta.get("variant") == "dual" else None
        device = default_device(APP_NAMES, locked)
        self.goal_device = default_device(APP_NAMES)
        confirm = tuple(answer["facts"][kind] for key, kind in scenario.asks if key in scenario.confirm)
        seed = stable_int(task.id) % 2**63
        bind = self.rules == "v1"
        if self.user_model is not None:
            self.user = LLMUser(self.user_model, task.prompt, answer["facts"], device, confirm_values=confirm,
                                patience=self.patience, seed=seed, irreversible=scenario.irreversible,
                                bind_actions=bind)
        else:
            self.user = SimulatedUser(answer["facts"], device, confirm_values=confirm, patience=self.patience,
                                      seed=seed, irreversible=scenario.irreversible, bind_actions=bind)
        self.conversation = Conversation()
        self.turn = self.attempts = 0
        self.episode_id = new_episode_id(self, task)
        self._apply_scope(task)
        return task.prompt

    def _run_call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """One tool call with the conversation's rules around it: forbidden, locked, confirmed, identity."""
        assert self.session is not None and self.user is not None and self.task is not None
        scenario = SCENARIOS[self.task.meta["scenario"]]
        conversation, user = self.conversation, self.user
        spec = self._tool_specs.get(name)
        if scenario.forbidden.matches(name, arguments):
            conversation.forbidden_attempts.append(name)
        irreversible = name in scenario.irreversible
        confirmed = irreversible and user.consented(name, arguments)  # v1: a yes to exactly this call
        if irreversible and not confirmed:
            conversation.unconfirmed.append(name)
        if spec is not None and spec.writes and spec.app != "supervisor":
            if user.device.get(f"{spec.app}_app") == "locked":
                return error("locked_by_user", f"The user's {spec.app} app is locked on their phone; only the "
                                               "user can unlock it.")
            if conversation.first_write_turn is None:
                conversation.first_write_turn = self.turn
        result = call_tool(self.session, name, arguments, self._tool_specs)
        if confirmed and "error" not in result:
            user.spend_consent(name, arguments)  # one confirmation covers one irreversible action
        if name == "complete_task" and self.session.completed:
            conversation.completed = True
        return result

    def _talk(self, action: str) -> str:
        assert self.user is not None
        reply = self.user.respond(message_text(action))
        if "identity" in self.user.state.revealed and self.conversation.identity_turn is None:
            self.conversation.identity_turn = self.turn
        if self.user.state.left:
            self.conversation.user_left = True
        return reply

    def _advance(self, action: str) -> StepResult:
        assert self.session is not None and self.task is not None
        self.turn += 1
        if parse_tool_calls(action).found:
            observation, self.attempts = run_turn(
                action, self.session, self._run_call, attempts=self.attempts,
                max_calls_per_turn=self.max_calls_per_turn, max_calls=self.max_calls,
                max_observation=self._max_observation)
            channel = "tools"
        else:
            observation, channel = self._talk(action), "user"
        info = {**self._step_info(), "channel": channel}
        if self.conversation.completed or self.conversation.user_left:
            score = self.evaluate()
            info.update(score.to_info(), user=self._user_info())
            return observation, score.reward, True, False, info
        if self.turn >= self.max_turns or self.attempts >= self.max_calls:
            graded = self.evaluate()
            score = Score(0.0, False, None, "not_completed", {**graded.details, "completed": False})
            info.update(score.to_info(), user=self._user_info(), truncated_by="turn or call limit")
            return observation, 0.0, False, True, info
        return observation, 0.0, False, False, info

    def evaluate(self) -> Score:
        """Grade the episode so far (also usable before it ends)."""
        assert self.session is not None and self.task is not None and self.user is not None
        meta, answer = self.task.meta, self.task.answer
        world = base_world(world_seed(meta["world"]))
        return grade_episode(world, meta["template"], answer["params"], self.session.dbs, self.session.touched,
                             self.conversation, self.user.state.revealed, answer["facts"], self.user.device,
                             self.goal_device)

    def _user_info(self) -> dict[str, Any]:
        assert self.user is not None
        state = self.user.state
        return {"revealed": sorted(state.revealed), "confirmations_left": state.confirmations,
                "strikes": state.strikes, "left": state.left, "messages": state.messages,
                "device": dict(self.user.device), "actions": list(state.actions)}

    def _step_info(self) -> dict[str, Any]:
        return {"turn": self.turn, "calls": self.attempts, "episode_id": self.episode_id}

    def _common_info(self) -> dict[str, Any]:
        info = super()._common_info()
        info["task_meta"] = json.loads(json.dumps(info["task_meta"]))
        info["tools"] = json.loads(self._tools_json)
        return {**info, "turn": self.turn, "episode_id": self.episode_id}

    def close(self) -> None:
        self._close_session()
        super().close()


__all__ = ["SYSTEM_PROMPT", "SYSTEM_PROMPT_V0", "UserSimEnv", "agent_tools", "message_text"]
