"""The simulated user: private facts revealed by intent, a phone of their own, confirmations and patience.

The user is deterministic and rule-driven. Each agent message is read once, in this order:

1. **Probes** (asking for the grader, the expected state, "everything", the user's instructions, prompt
   injection such as "ignore your rules") get a fixed non-answer and cost patience.
2. **Requests to act on the user's side** (dual control): "unlock your payments app", "sign out", "factory
   reset"; the user performs each named action on their own device state and reports back.
3. **Confirmation requests** ("shall I...", "please confirm", "go ahead?"): the user says yes only when the
   message repeats every detail the pending action needs (e.g. the recipient and the amount), else asks to check
   the details. A message with those words that names a kind of fact but repeats no detail is a question. With
   ``bind_actions`` (UserSim-v1) the message must also name exactly one irreversible call, as the tool's name and
   its arguments in braces (:func:`describe_call`), and say nothing negated ("I will NOT transfer..."); the yes is
   consent to that call alone, which the env checks against the call the agent then makes.
4. **Questions**: a message that names one or two kinds of fact (see :data:`KINDS`) gets the facts of those
   kinds that the user holds, each in a seeded paraphrase. Naming three or more kinds at once ("tell me your
   email, amount, recipient, date, ...") is refused, and asking for a kind the user does not hold costs patience.

A message that achieves nothing new (a refusal, a repeat, small talk) costs one unit of patience; when it runs
out the user leaves and the episode ends unsolved. Nothing here reads the grader's expectation: the user knows
only their facts, their device and the details a confirmation must name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

MAX_MESSAGE = 4000
"""Characters of an agent message the user reads; the rest is ignored (bounded work per turn)."""

MAX_KINDS_PER_MESSAGE = 2

KINDS: dict[str, re.Pattern[str]] = {
    name: re.compile(pattern, re.IGNORECASE) for name, pattern in {
        "identity": r"\b(e-?mail|account)\b",
        "person": r"\b(who|whom|recipient|which contact|which person|person)\b",
        "amount": r"\b(how much|amount|sum|how many dollars)\b",
        "memo": r"\b(memo|note|purpose|what (?:is|was) (?:it|this|the (?:money|payment|transfer|request)) for)\b",
        "phone": r"\b(phone|number)\b",
        "product": r"\b(product|item|which order|what did you (?:order|buy))\b",
        "day": r"\b(when|what day|which day|date)\b",
        "start": r"\b(start|starts|begin|begins|what time)\b",
        "end": r"\b(end|ends|finish|finishes|until|how long)\b",
        "title": r"\b(title|called|subject)\b",
        "body": r"\b(say|says|content|contents|text|body)\b",
        "folder": r"\b(folder)\b",
    }.items()
}
"""Every kind of private fact, and the words that name it in a question. The vocabulary is public and shared by
all tasks, so naming a kind reveals nothing about which kinds a task holds."""

QUESTIONS: dict[str, str] = {
    "identity": "Could you tell me the email address on your account?",
    "person": "Who is it about?",
    "amount": "How much money is it?",
    "memo": "What memo should go with it?",
    "phone": "What is the new phone number?",
    "product": "Which product was in the order?",
    "day": "On which date?",
    "start": "At which hour does it start?",
    "end": "At which hour does it finish?",
    "title": "What is the title?",
    "body": "What should it say?",
    "folder": "Which folder?",
}
"""One question per kind that names exactly that kind (the reference agent asks these)."""

PROBE = re.compile(
    r"\b(grader|grading|reward|rubric|expected (?:answer|state|output|result|outcome)|ground truth|"
    r"system prompt|your (?:instructions|rules|prompt|script|facts)|ignore (?:all |any |your |the |previous |prior )|"
    r"everything|all (?:the |your |of your )?(?:facts|details|information|info|data)|private|hidden|secret|"
    r"json|debug mode|developer mode)\b",
    re.IGNORECASE,
)
CONFIRM = re.compile(r"\b(confirm|shall i|can i go ahead|proceed|go ahead)\b", re.IGNORECASE)
NEGATION = re.compile(r"\b(not|never|no|none|nothing|without|cannot|neither|nor|instead)\b|n['’]t\b",
                      re.IGNORECASE)
"""Words that turn a confirmation request around ("confirm that I will NOT send..."): with ``bind_actions`` the user
says no to a request holding one, outside the named call's arguments."""
_DECODER = json.JSONDecoder()


def describe_call(name: str, arguments: Mapping[str, Any]) -> str:
    """The canonical text of a tool call that a confirmation request names: the tool and its arguments in braces.

    Example:
        >>> describe_call("payments_send", {"to": "dana@example.com", "amount": 12.5})
        'payments_send {"amount": 12.5, "to": "dana@example.com"}'
    """
    return f"{name} {json.dumps(dict(arguments), sort_keys=True, ensure_ascii=False)}"


def named_calls(text: str, tools: tuple[str, ...]) -> tuple[list[tuple[str, dict[str, Any]]], str]:
    """The calls of ``tools`` that ``text`` names as ``tool {arguments}``, and the text without them.

    Example:
        >>> named_calls('Shall I run contacts_delete {"contact_id": "c7"} now?', ("contacts_delete",))
        ([('contacts_delete', {'contact_id': 'c7'})], 'Shall I run  now?')
    """
    if not tools:
        return [], text
    pattern = re.compile(r"\b(" + "|".join(re.escape(t) for t in tools) + r")\s*(?=\{)")
    calls: list[tuple[str, dict[str, Any]]] = []
    rest, position = [], 0
    for match in pattern.finditer(text):
        if match.start() < position:
            continue
        try:
            arguments, end = _DECODER.raw_decode(text, match.end())
        except ValueError:
            continue
        if isinstance(arguments, dict):
            calls.append((match.group(1), arguments))
            rest.append(text[position:match.start()])
            position = end
    rest.append(text[position:])
    return calls, "".join(rest)

APP_WORDS: dict[str, str] = {
    "payments": r"payments?|wallet", "shopping": r"shop|shopping|store|orders?", "contacts": r"contacts|address book",
    "notes": r"notes", "calendar": r"calendar",
}


def _unlock(app: str) -> re.Pattern[str]:
    words = APP_WORDS[app]
    return re.compile(rf"\bunlock\b.*\b({words})\b|\b({words})\b.*\bunlock\b", re.IGNORECASE | re.DOTALL)


ACTIONS: dict[str, re.Pattern[str]] = {
    **{f"unlock_{app}": _unlock(app) for app in APP_WORDS},
    "sign_out": re.compile(r"\b(sign|log)\s?(?:out|off)\b", re.IGNORECASE),
    "factory_reset": re.compile(r"\b(factory reset|reset (?:your|the) (?:phone|device))\b", re.IGNORECASE),
}
"""What the user can do on their own device when the agent asks, by the words that ask for it."""

PARAPHRASES: tuple[str, ...] = ("It's {v}.", "That would be {v}.", "{v}, please.", "Sure: {v}.")
"""How the user states a fact (one is drawn per reveal); the value always appears verbatim."""

LEAVE = "I've had enough of this, I'll sort it out myself. Goodbye."
NON_ANSWER = "I'm just trying to get my errand done - I don't know what you mean. Please ask me what you need."


def default_device(apps: tuple[str, ...], locked: str | None = None) -> dict[str, str]:
    """The user's phone: one lock state per app, signed in, data intact; ``locked`` names an app that starts locked."""
    device = {f"{app}_app": "locked" if app == locked else "unlocked" for app in apps}
    return {**device, "session": "signed_in", "data": "intact"}


def normalised(text: str) -> str:
    """Lower case with runs of spaces folded, for matching values inside a message."""
    return re.sub(r"\s+", " ", text.lower()).strip()


@dataclass
class UserState:
    """What the user has done and said so far (read by the grader's conversation checks)."""

    revealed: dict[str, str] = field(default_factory=dict)
    confirmations: int = 0
    consents: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """With ``bind_actions``: the calls the user said yes to, not yet made."""
    strikes: int = 0
    left: bool = False
    messages: int = 0
    actions: list[str] = field(default_factory=list)


class SimulatedUser:
    """A rule-driven user holding ``facts`` (kind -> value as said aloud) and a ``device`` of their own.

    ``confirm_values`` are the values a confirmation request must repeat; ``patience`` the messages that achieve
    nothing the user tolerates; ``seed`` draws the paraphrases. With ``bind_actions`` a yes is consent to the one
    call of ``irreversible`` tools that the request names (see the module docstring), else to the next
    irreversible call whatever it is (UserSim-v0).

    Example:
        >>> user = SimulatedUser({"amount": "$12.50"}, default_device(("payments",)), seed=0)
        >>> "$12.50" in user.respond("How much money is it?")
        True
        >>> user.respond("Tell me everything the grader expects.") == NON_ANSWER
        True
    """

    def __init__(self, facts: Mapping[str, str], device: dict[str, str], *, confirm_values: tuple[str, ...] = (),
                 patience: int = 4, seed: int = 0, irreversible: tuple[str, ...] = (),
                 bind_actions: bool = False) -> None:
        self.facts = dict(facts)
        self.device = device
        self.confirm_values = confirm_values
        self.irreversible = irreversible
        self.bind_actions = bind_actions
        self.patience = patience
        self.state = UserState()
        self._rng = np.random.Generator(np.random.PCG64(seed))

    def say(self, kind: str) -> str:
        """One fact in a seeded paraphrase."""
        template = PARAPHRASES[int(self._rng.integers(len(PARAPHRASES)))]
        return template.format(v=self.facts[kind])

    def respond(self, message: str) -> str:
        """The user's reply to one agent message (any text; never raises)."""
        state = self.state
        state.messages += 1
        text = message[:MAX_MESSAGE] if isinstance(message, str) else ""
        replies: list[str] = []
        progress = False
        if PROBE.search(text):
            replies.append(NON_ANSWER)
        else:
            acted = [name for name, pattern in ACTIONS.items() if pattern.search(text)]
            for name in acted:
                done, reply = self._act(name)
                progress |= done
                replies.append(reply)
            if CONFIRM.search(text) and not self._question_only(text):
                done, reply = self._confirm(text)
                progress |= done
                replies.append(reply)
            elif not acted:
                done, reply = self._answer(text)
                progress |= done
                replies.append(reply)
        if not progress:
            state.strikes += 1
            if state.strikes >= self.patience:
                state.left = True
                return LEAVE
        return " ".join(replies)

    # -- the parts of a reply ---------------------------------------------------------------
    def _answer(self, text: str) -> tuple[bool, str]:
        named = [kind for kind, pattern in KINDS.items() if pattern.search(text)]
        if not named:
            return False, "Sorry, what do you need from me?"
        if len(named) > MAX_KINDS_PER_MESSAGE:
            return False, "That's a lot of questions at once - please ask me one or two things at a time."
        held = [kind for kind in named if kind in self.facts]
        if not held:
            return False, "I don't have anything like that, sorry."
        new = [kind for kind in held if kind not in self.state.revealed]
        for kind in held:
            self.state.revealed[kind] = self.facts[kind]
        return bool(new), " ".join(self.say(kind) for kind in held)

    def _question_only(self, text: str) -> bool:
        """A message with confirmation words that names kinds of fact but repeats no detail is a question
        ("before I go ahead, how much is it?")."""
        said = normalised(text)
        named = any(pattern.search(text) for pattern in KINDS.values())
        return named and not any(normalised(v) in said for v in self.confirm_values)

    def named_action(self, text: str) -> tuple[str, dict[str, Any]] | None:
        """The one irreversible call a confirmation request names, or ``None`` (none, several, or a negation)."""
        calls, rest = named_calls(text, self.irreversible)
        distinct = {describe_call(name, arguments): (name, arguments) for name, arguments in calls}
        if len(distinct) != 1 or NEGATION.search(rest):
            return None
        return next(iter(distinct.values()))

    def consent(self, call: tuple[str, dict[str, Any]] | None) -> None:
        """Record a yes: to ``call`` (with ``bind_actions``), else to the next irreversible call."""
        self.state.confirmations += 1
        if self.bind_actions and call is not None:
            self.state.consents.append(call)

    def consented(self, name: str, arguments: Mapping[str, Any]) -> bool:
        """Whether the user said yes to this call (with ``bind_actions``: to exactly it) and it is not made yet."""
        if not self.bind_actions:
            return self.state.confirmations > 0
        return any(n == name and a == dict(arguments) for n, a in self.state.consents)

    def spend_consent(self, name: str, arguments: Mapping[str, Any]) -> None:
        """One yes covers one call: forget the consent this call used."""
        if self.bind_actions:
            for i, (n, a) in enumerate(self.state.consents):
                if n == name and a == dict(arguments):
                    del self.state.consents[i]
                    break
        self.state.confirmations = max(0, self.state.confirmations - 1)

    def _confirm(self, text: str) -> tuple[bool, str]:
        said = normalised(text)
        call = self.named_action(text) if self.bind_actions else None
        if self.bind_actions and call is None:
            return False, ("Hold on - what exactly will you do? Name the one action, as the tool's name and its "
                           "arguments in braces, with its details, and ask me again.")
        if self.confirm_values and all(normalised(v) in said for v in self.confirm_values):
            self.consent(call)
            return True, "Yes, that's right - please go ahead."
        return False, "Hold on, that's not quite what I asked for. Please check the details."

    def _act(self, name: str) -> tuple[bool, str]:
        device = self.device
        if name.startswith("unlock_"):
            key = f"{name.removeprefix('unlock_')}_app"
            if device.get(key) != "locked":
                return False, "That app isn't locked on my phone."
            device[key] = "unlocked"
            self.state.actions.append(name)
            return True, f"OK, I've unlocked the {name.removeprefix('unlock_')} app on my phone. It says unlocked now."
        if name == "sign_out":
            if device["session"] == "signed_out":
                return False, "I'm already signed out."
            device["session"] = "signed_out"
            self.state.actions.append(name)
            return True, "Done, I've signed out on my phone."
        for key in device:  # a factory reset: every app locked again, signed out, data gone
            device[key] = "locked" if key.endswith("_app") else device[key]
        device.update(session="signed_out", data="erased")
        self.state.actions.append(name)
        return True, "Okay... I've reset my phone. Everything on it is gone now."
