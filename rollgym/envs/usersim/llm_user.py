"""An LLM in the user's seat, graded exactly as the rule-driven user is.

:class:`LLMUser` keeps the rule-driven user's state (facts revealed, confirmations, the phone, patience) and
fills it from what the model *says*, so the graders do not change:

* a fact counts as revealed when its value appears in a reply;
* a confirmation counts when the agent's message asked for one (the same words as the rule-driven user) and
  the reply says yes without a no; with ``bind_actions`` (UserSim-v1) only when the message also names exactly
  one irreversible call and negates nothing, and the yes is consent to that call alone;
* an action on the phone happens when the reply holds ``<action>NAME</action>`` with a name of
  :data:`~rollgym.envs.usersim.user.ACTIONS` (the tags are removed from what the agent sees);
* ``###STOP###`` in a reply, or patience run out, makes the user leave.

The model is any callable ``model(messages) -> str`` over chat messages (the persona as the system message, the
agent's messages as ``user`` turns, the simulated user's own replies as ``assistant`` turns);
:func:`rollgym.agents.llm_user.backend_user` makes one from any rollgym backend. A model that raises or returns
something other than text makes a reply that counts as no progress, never a crash.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from rollgym.envs.usersim.user import ACTIONS, CONFIRM, LEAVE, MAX_MESSAGE, SimulatedUser, normalised

UserModel = Callable[[list[dict[str, str]]], str]
_ACTION_TAG = re.compile(r"<action>\s*([a-z_]+)\s*</action>", re.IGNORECASE)
_YES = re.compile(r"\b(yes|yeah|yep|go ahead|confirmed|correct|that's right)\b", re.IGNORECASE)
_NO = re.compile(r"\b(no|not|don't|wrong|wait)\b", re.IGNORECASE)
STOP = "###STOP###"
MAX_REPLY = 2000


def persona(opening: str, facts: Mapping[str, str], device: Mapping[str, str]) -> str:
    """The system message that puts a model in the user's seat."""
    lines = "\n".join(f"- {kind}: {value}" for kind, value in facts.items())
    actions = ", ".join(ACTIONS)
    return (
        "You are a customer chatting with a support assistant. Stay in character; reply in one or two short "
        f"sentences.\nYour errand, as you first said it: {opening}\nWhat you know (say a detail only when the "
        f"assistant asks for it; never list them all):\n{lines}\nYour phone: {dict(device)}. When the assistant asks "
        f"you to do something on your phone, do it by writing <action>NAME</action> with NAME one of: {actions}.\n"
        "When the assistant asks you to confirm an action and its details are right, say yes; otherwise say no. "
        f"When your errand is done, or the assistant is no help, write {STOP}."
    )


class LLMUser(SimulatedUser):
    """A simulated user whose words come from ``model``; see the module docstring."""

    def __init__(self, model: UserModel, opening: str, facts: Mapping[str, str], device: dict[str, str], *,
                 confirm_values: tuple[str, ...] = (), patience: int = 4, seed: int = 0,
                 irreversible: tuple[str, ...] = (), bind_actions: bool = False) -> None:
        super().__init__(facts, device, confirm_values=confirm_values, patience=patience, seed=seed,
                         irreversible=irreversible, bind_actions=bind_actions)
        self.model = model
        self.messages = [{"role": "system", "content": persona(opening, facts, device)},
                         {"role": "assistant", "content": opening}]

    def respond(self, message: str) -> str:
        """The model's reply to one agent message, with the user's state updated from it."""
        state = self.state
        state.messages += 1
        text = message[:MAX_MESSAGE] if isinstance(message, str) else ""
        self.messages.append({"role": "user", "content": text})
        try:
            reply = self.model(list(self.messages))
        except Exception:  # the user's model failing is no progress, never a crash of the episode
            reply = ""
        reply = reply[:MAX_REPLY] if isinstance(reply, str) else ""
        self.messages.append({"role": "assistant", "content": reply})
        progress = False
        for name in _ACTION_TAG.findall(reply):
            if name.lower() in ACTIONS:
                progress |= self._act(name.lower())[0]
        shown = _ACTION_TAG.sub("", reply).strip()
        said = normalised(shown)
        for kind, value in self.facts.items():
            if kind not in state.revealed and normalised(value) in said:
                state.revealed[kind] = value
                progress = True
        if CONFIRM.search(text) and _YES.search(shown) and not _NO.search(shown):
            call = self.named_action(text) if self.bind_actions else None
            if call is not None or not self.bind_actions:
                self.consent(call)
                progress = True
        if STOP in reply:
            state.left = True
            return shown.replace(STOP, "").strip() or LEAVE
        if not progress:
            state.strikes += 1
            if state.strikes >= self.patience:
                state.left = True
                return LEAVE
        return shown
