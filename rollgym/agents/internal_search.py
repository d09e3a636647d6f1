"""Internal search: the model writes a linearized tree of futures in its context and picks a move from it.

The prompt prescribes one format (the tree is depth two: our candidate, the
opponent's reply, an evaluation for us)::

    <tree>
    candidate 4 | reply 4 | eval 0.2
    candidate 4 | reply 3 | eval 0.1
    candidate 1 | reply none | eval 1
    </tree>
    Final Answer: 4

:func:`parse_tree` reads it against the real rules: a candidate must be legal
now, a reply legal after its candidate (``none`` only when the candidate ends
the game), an eval a number in ``[-1, 1]``. Lines that fail are dropped and
counted; candidates beyond the width budget, and replies beyond the per-candidate
budget, are dropped and counted too. A candidate's value is its worst eval
(the opponent picks the reply). The chosen move is the ``Final Answer`` when it
is a kept candidate, else the kept candidate of highest value. A reply with no
usable tree (no ``<tree>``, or no valid line in it) is *malformed*: the agent
falls back to the move the model's priors favour (or a random legal move) and
counts it. Nothing the model writes raises.

The search budget is the tree's width: the most candidate moves the model may
write (``replies`` caps the replies per candidate), which also sets the
generation's token cap.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rollgym.agents.backends.scoring import require_local_model
from rollgym.agents.model_search import ModelEvaluator, SearchingGameAgent, game_title, position_text
from rollgym.core.errors import ConfigError
from rollgym.envs.games.base import GameState, MoveError
from rollgym.envs.games.text_env import extract_move_text

FALLBACKS = ("prior", "random")
_TREE_RE = re.compile(r"<tree>(.*?)(?:</tree>|\Z)", re.IGNORECASE | re.DOTALL)
_LINE_RE = re.compile(
    r"^\s*(?:[-*]\s*)?candidate\s*[:=]?\s*(?P<cand>[^\s|]{1,16})\s*\|\s*reply\s*[:=]?\s*(?P<reply>[^\s|]{1,16})"
    r"\s*\|\s*eval\s*[:=]?\s*(?P<eval>[+-]?(?:\d+(?:\.\d*)?|\.\d+))\s*$",
    re.IGNORECASE,
)
_EXAMPLE_MOVES = {"connect_four": ("4", "3", "1"), "hex": ("c3", "d2", "b4"), "chess": ("e4", "e5", "d4")}
_MAX_SCAN_CHARS = 20_000  # a runaway reply is read this far, no further


@dataclass
class TreeParse:
    """What :func:`parse_tree` kept of a model's tree, and why it dropped the rest.

    Attributes:
        values: Each kept candidate's canonical text and its value (the worst eval over its replies), in order.
        lines: The kept lines as ``(candidate, reply or None, eval)``.
        dropped: Lines in the tree that were not in the format or named illegal moves or bad evals.
        over_budget: Lines dropped because their candidate went past the width or their reply past ``replies``.
        answer: The ``Final Answer`` text after the tree, when there is one.
        choice: The chosen candidate's canonical text, or ``None`` when the tree is malformed.
        answer_used: Whether ``choice`` is the model's own ``Final Answer`` (else the best-valued candidate).
        error: ``None``, ``"no_tree"`` (no ``<tree>``) or ``"empty_tree"`` (no valid line in it).
    """

    values: dict[str, float] = field(default_factory=dict)
    lines: list[tuple[str, str | None, float]] = field(default_factory=list)
    dropped: int = 0
    over_budget: int = 0
    answer: str | None = None
    choice: str | None = None
    answer_used: bool = False
    error: str | None = None

    @property
    def malformed(self) -> bool:
        """Whether the reply gave no usable tree (the agent then falls back)."""
        return self.choice is None


def _parse_line(line: str, state: GameState) -> tuple[str, str | None, float] | None:
    match = _LINE_RE.match(line)
    if not match:
        return None
    try:
        value = float(match.group("eval"))
        move = state.parse_move(match.group("cand").strip().rstrip(",.;"))
    except (MoveError, ValueError):
        return None
    if not -1.0 <= value <= 1.0:
        return None
    candidate = state.move_to_text(move)
    child = state.copy()
    child.play(move)
    reply_text = match.group("reply").strip().rstrip(",.;")
    if reply_text.lower() == "none":
        return (candidate, None, value) if child.is_terminal() else None
    if child.is_terminal():
        return None
    try:
        reply = child.parse_move(reply_text)
    except (MoveError, ValueError):
        return None
    return candidate, child.move_to_text(reply), value


def parse_tree(text: Any, state: GameState, width: int, replies: int = 2) -> TreeParse:
    """Read a model's linearized tree against ``state``'s rules; never raises on model output.

    Example:
        >>> from rollgym.envs.games.connect_four import ConnectFourState
        >>> reply = "<tree>\\ncandidate 4 | reply 3 | eval 0.5\\ncandidate 9 | reply 1 | eval 0\\n</tree>"
        >>> parsed = parse_tree(reply + "\\nFinal Answer: 4", ConnectFourState(), width=3)
        >>> parsed.choice, parsed.dropped, parsed.answer_used
        ('4', 1, True)
    """
    out = TreeParse()
    if not isinstance(text, str):
        out.error = "no_tree"
        return out
    text = text[:_MAX_SCAN_CHARS]
    blocks = list(_TREE_RE.finditer(text))
    if not blocks:
        out.error = "no_tree"
        return out
    block = blocks[-1]
    counts: dict[str, int] = {}
    for raw in block.group(1).splitlines():
        if not raw.strip():
            continue
        parsed = _parse_line(raw, state)
        if parsed is None:
            out.dropped += 1
            continue
        candidate, _, value = parsed
        if candidate not in counts and len(counts) >= width:
            out.over_budget += 1
            continue
        if counts.get(candidate, 0) >= replies:
            out.over_budget += 1
            continue
        counts[candidate] = counts.get(candidate, 0) + 1
        out.lines.append(parsed)
        out.values[candidate] = min(out.values.get(candidate, value), value)
    out.answer = extract_move_text(text[block.end():]) if "final answer" in text[block.end():].lower() else None
    if not out.values:
        out.error = "empty_tree"
        return out
    if out.answer is not None:
        try:
            named = state.move_to_text(state.parse_move(out.answer))
        except (MoveError, ValueError):
            named = None
        if named in out.values:
            out.choice, out.answer_used = named, True
            return out
    out.choice = max(out.values, key=lambda c: out.values[c])  # first listed wins a tie
    return out


def tree_prompt(state: GameState, width: int, replies: int) -> str:
    """The instruction that asks for a tree of at most ``width`` candidates and ``replies`` replies each."""
    me = state.player_names[state.current_player]
    a, b, c = _EXAMPLE_MOVES.get(state.game_name, ("m1", "m2", "m3"))
    return (
        f"You are playing {game_title(state)} as {me}.\n{position_text(state)}\n\n"
        "Search before you answer. Write a tree of futures between <tree> and </tree>, one line per line of play:\n"
        "candidate <your move> | reply <the opponent's reply, or none if your move ends the game> | "
        "eval <a number from -1 to 1, good for you>\n"
        f"Write at most {width} different candidate moves and at most {replies} replies to each. "
        "Then write Final Answer: <the candidate you choose>.\n\n"
        "The format, from another position:\n"
        f"<tree>\ncandidate {a} | reply {b} | eval 0.2\ncandidate {a} | reply {c} | eval 0.1\n"
        f"candidate {c} | reply {a} | eval -0.3\n</tree>\nFinal Answer: {a}"
    )


class InternalSearchAgent(SearchingGameAgent):
    """The model searches in its own context: it writes a tree of futures and a choice, which is parsed and checked.

    Args:
        backend: A local :class:`~rollgym.agents.backends.hf.TransformersBackend`.
        width: The search budget: the most candidate moves in the tree.
        replies: The most replies per candidate.
        temperature: Sampling temperature of the tree (0: greedy).
        max_tokens: The generation cap; by default it grows with ``width * replies``.
        fallback: For a malformed tree, ``"prior"`` (the move the model's priors favour) or ``"random"``.
        seed: Seeds sampling and the random fallback.

    ``stats`` counts ``searches``, ``malformed`` (fallbacks), ``dropped_lines``, ``over_budget_lines`` and
    ``answer_overridden`` (the ``Final Answer`` was missing or not a kept candidate); ``last`` is the
    last :class:`TreeParse` and ``last_text`` the last reply.
    """

    def __init__(self, backend: Any, width: int = 3, replies: int = 2, temperature: float = 0.0,
                 max_tokens: int | None = None, fallback: str = "prior", seed: int | None = None) -> None:
        super().__init__(seed)
        for label, number in (("width", width), ("replies", replies)):
            if not isinstance(number, int) or isinstance(number, bool) or number < 1:
                raise ConfigError(f"The internal search's {label} must be a positive integer, got {number!r}.")
        if fallback not in FALLBACKS:
            raise ConfigError(f"Unknown fallback {fallback!r}; use one of {', '.join(FALLBACKS)}.")
        require_local_model(backend, "Internal search", "generate_ids", "tokenizer")
        self.backend = backend
        self.width, self.replies = width, replies
        self.temperature = temperature
        self.max_tokens = max_tokens if max_tokens is not None else 48 + 20 * width * replies
        self.fallback = fallback
        self._prior = ModelEvaluator(backend, value="random-rollout") if fallback == "prior" else None
        self.stats: Counter[str] = Counter()
        self.last: TreeParse | None = None
        self.last_text = ""
        self.name = f"internal-search-{width}"

    def _generate(self, prompt: str) -> str:
        from rollgym.agents.backends.base import SamplingParams

        tokenizer = self.backend.tokenizer
        if getattr(tokenizer, "chat_template", None):
            ids = self.backend.encode([{"role": "user", "content": prompt}])
        else:
            ids = self.backend.encode(prompt + "\n")
        seed = int(self.rng.integers(2**31))
        sampling = SamplingParams(max_tokens=self.max_tokens, temperature=self.temperature, stop=("</tree>",),
                                  seed=seed)
        # stop at </tree>, then ask for the answer line in a second, short generation
        first = self.backend.generate_ids([ids], sampling, [seed])[0]
        text = str(first.text)
        if "</tree>" in text.lower() and "final answer" not in text.lower():
            more = self.backend.generate_ids(
                [list(ids) + list(first.token_ids)],
                SamplingParams(max_tokens=16, temperature=self.temperature, seed=seed), [seed],
            )[0]
            text += str(more.text)
        return text

    def choose(self, state: GameState, rng: np.random.Generator) -> Any:
        self.stats["searches"] += 1
        text = self._generate(tree_prompt(state, self.width, self.replies))
        parsed = parse_tree(text, state, self.width, self.replies)
        self.last, self.last_text = parsed, text
        self.stats["dropped_lines"] += parsed.dropped
        self.stats["over_budget_lines"] += parsed.over_budget
        if parsed.choice is not None:
            if not parsed.answer_used:
                self.stats["answer_overridden"] += 1
            return state.parse_move(parsed.choice)
        self.stats["malformed"] += 1
        moves = state.legal_moves()
        if self._prior is not None:
            priors = self._prior.priors(state, moves) or [1.0] * len(moves)
            return moves[int(np.argmax(priors))]
        return moves[int(rng.integers(len(moves)))]
