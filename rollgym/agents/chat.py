"""``ChatAgent``: a language model playing any rollgym env through a backend.

With a tokenizer (a local model, or a server plus the model's tokenizer) the
agent works in tokens: the first prompt is the chat template applied to the
system prompt, the tools and the first observation; each later observation is
*appended* as the template's suffix tokens, after the exact tokens the model
sampled, so a trainer sees the very ids the policy produced (``loss_mask`` 1)
and the env's ids between them (mask 0, logprob 0.0).

That is only sound when the template renders earlier turns unchanged (it is
*prefix-preserving*). Each turn the agent renders the whole conversation once and
checks that it starts with the text of the context so far plus the reply; the
new text after it becomes the turn's env tokens. Templates that rewrite history,
such as ones that strip earlier ``<think>`` blocks, fail that check; the agent
then re-renders the whole history for the next turn and marks the episode
``per_turn_rows``: each turn becomes its own training row (its full prompt, its
sampled tokens).

Rendering and tokenizing cost little per episode: agents spawned from one agent
share the first prompts they rendered (the G rollouts of a group render theirs
once) and a :class:`~rollgym.agents.backends.encoding.PromptEncoder`, which
tokenizes each piece of text between special tokens once (the system prompt and
tool list once per run), with exactly the ids a whole-text tokenization gives.

Without a tokenizer (a chat API) the agent sends messages and records text and
whatever token ids the server returns; such episodes are marked
``token_exact=False``.

Screenshots: an observation may be a dict with ``"text"`` and ``"screenshot"`` (an
``(H, W, 3)`` uint8 array, as the web envs give with ``obs_mode="screenshot"`` or
``"both"``). When the backend accepts images (``backend.accepts_images``: the
OpenAI-compatible HTTP backend does, for servers of vision-language models; the
transformers and vLLM backends here and ``rollgym serve-model`` do not) the agent
sends the user turn as OpenAI content parts, the text and the screenshot as a PNG
``image_url`` data URL, keeping the newest ``max_images`` screenshots in the
conversation; such episodes go as messages and are not token-exact. Otherwise it
sends the text only.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import dataclasses
import io
import weakref
from dataclasses import dataclass, field
from typing import Any

from rollgym.agents.backends.base import Backend, Generation, SamplingParams
from rollgym.agents.backends.encoding import PromptEncoder
from rollgym.agents.backends.hf import render_chat_text
from rollgym.core.errors import ConfigError
from rollgym.core.toolschema import tool_listing

IMAGE_POLICIES = ("auto", "never", "always")
OMITTED_IMAGE = "[an earlier screenshot, omitted]"


def png_data_url(image: Any) -> str:
    """An ``(H, W, 3)`` uint8 array as a ``data:image/png;base64,...`` URL (OpenAI ``image_url`` content)."""
    import numpy as np
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(np.asarray(image, dtype=np.uint8)).save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def observation_parts(observation: Any) -> tuple[str, Any]:
    """``(text, screenshot or None)`` of an observation (a string, or a dict with ``text`` and ``screenshot``)."""
    if isinstance(observation, dict):
        return str(observation.get("text", "")), observation.get("screenshot")
    return str(observation), None

#: Most distinct first prompts remembered by a family of spawned agents before the memory is emptied.
MAX_CACHED_PROMPTS = 4096


@dataclass
class TurnRecord:
    """One model call: the context it saw, what it sampled, and the env tokens that followed."""

    prompt_ids: list[int]
    output_ids: list[int]
    output_logprobs: list[float]
    obs_ids: list[int] = field(default_factory=list)
    reward: float | None = None
    policy_version: int = 0
    finish_reason: str = "stop"
    text: str = ""
    output_versions: list[int] = field(default_factory=list)
    output_entropies: list[float] = field(default_factory=list)

    def copy(self) -> TurnRecord:
        """A copy whose lists are its own (a forked agent's turns, see :meth:`ChatAgent.fork`)."""
        return dataclasses.replace(
            self, prompt_ids=list(self.prompt_ids), output_ids=list(self.output_ids),
            output_logprobs=list(self.output_logprobs), obs_ids=list(self.obs_ids),
            output_versions=list(self.output_versions), output_entropies=list(self.output_entropies),
        )


@dataclass
class TokenRecord:
    """The token view of one episode, as a trainer consumes it."""

    prompt_ids: list[int]
    completion_ids: list[int]
    loss_mask: list[int]
    logprobs: list[float]
    turns: list[TurnRecord]
    per_turn_rows: bool
    token_exact: bool

    def training_rows(self) -> list[dict[str, list[int] | list[float]]]:
        """One row for a prefix-preserving episode; one row per turn otherwise."""
        if not self.per_turn_rows:
            return [{"prompt_ids": self.prompt_ids, "completion_ids": self.completion_ids,
                     "loss_mask": self.loss_mask, "logprobs": self.logprobs}]
        return [{"prompt_ids": t.prompt_ids, "completion_ids": t.output_ids, "loss_mask": [1] * len(t.output_ids),
                 "logprobs": t.output_logprobs} for t in self.turns]


class PromptCache:
    """What agents spawned from one :class:`ChatAgent` share: an encoder and the first prompts rendered so far.

    The first prompt of an episode depends only on its messages and tools, so the G
    rollouts of a group (and every retry) render and tokenize it once.
    """

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.encoder = PromptEncoder(tokenizer)
        self._first: dict[tuple[tuple[str, str], ...], list[tuple[Any, str, list[int]]]] = {}

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
        """The conversation rendered with the chat template, ending with the generation prompt."""
        return render_chat_text(self.tokenizer, messages, tools)

    def first_prompt(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
                     ) -> tuple[str, list[int]]:
        """The text and ids of an episode's first prompt (do not modify the returned list)."""
        key = tuple((str(m["role"]), str(m["content"])) for m in messages)
        entries = self._first.get(key)
        for cached_tools, text, ids in entries or ():
            if cached_tools == tools:
                return text, ids
        text = self.render(messages, tools)
        ids = self.encoder.encode(text)
        if len(self._first) >= MAX_CACHED_PROMPTS:
            self._first.clear()
        # a copy of the tools, so that an env that edits its tool list in place cannot make a stale hit
        self._first.setdefault(key, []).append((copy.deepcopy(tools), text, ids))
        return text, ids


def template_preserves_prefix(tokenizer: Any) -> bool:
    """Whether rendering one more turn leaves the earlier rendering unchanged (checked with a ``<think>`` turn)."""
    history = [
        {"role": "user", "content": "Question?"},
        {"role": "assistant", "content": "<think>\nreasoning\n</think>\nAnswer."},
    ]
    before = render_chat_text(tokenizer, history, add_generation_prompt=False)
    after = render_chat_text(tokenizer, [*history, {"role": "user", "content": "Next?"}])
    return after.startswith(before)


#: A tool no template knows: rendered with it, a template that shows ``tools`` writes its name.
PROBE_TOOL: dict[str, Any] = {"type": "function", "function": {
    "name": "rollgym_probe_tool_q7x", "description": "A probe.",
    "parameters": {"type": "object", "properties": {"x": {"type": "string"}}, "required": []}}}
_RENDERS_TOOLS: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def template_renders_tools(tokenizer: Any) -> bool:
    """Whether the tokenizer's chat template shows the ``tools`` it is given (SmolLM2's drops them; ChatML
    templates with a tools section, such as Qwen2.5's, show them): rendered with :data:`PROBE_TOOL`, its name
    must appear. A template that fails on tools counts as one that drops them."""
    try:
        return _RENDERS_TOOLS[tokenizer]
    except (KeyError, TypeError):
        pass
    name = PROBE_TOOL["function"]["name"]
    try:
        shown = name in render_chat_text(tokenizer, [{"role": "user", "content": "Hi."}], [PROBE_TOOL])
    except Exception:  # a template that cannot take tools drops them
        shown = False
    try:
        _RENDERS_TOOLS[tokenizer] = shown
    except TypeError:  # a tokenizer that cannot be weakly keyed is probed each time
        pass
    return shown


def system_with_tools(system: str, tools: list[dict[str, Any]]) -> str:
    """``system`` followed by a compact listing of ``tools`` (:func:`~rollgym.core.toolschema.tool_listing`)."""
    listing = tool_listing(tools)
    return f"{system}\n\n{listing}" if system else listing


class ChatAgent:
    """An LLM agent; see the module docstring.

    Tools: the env's ``info["tools"]`` go to the chat template when the template shows them
    (:func:`template_renders_tools`). When it does not (SmolLM2's drops them), when the agent has no tokenizer
    (a chat API, to which the backends send no tools), or on a turn that goes as messages, the model would never
    see them: the agent then appends a compact listing (name, parameters with types, one-line description;
    :func:`~rollgym.core.toolschema.tool_listing`) to the system prompt and renders no ``tools``.

    Args:
        backend: Any :class:`~rollgym.agents.backends.base.Backend`.
        sampling: Sampling settings for every turn (``n`` must be 1; groups come from the collector).
        tokenizer: The model's tokenizer; defaults to ``backend.tokenizer`` when the backend has one.
        system_prompt: Overrides the env's ``info["system_prompt"]``.
        observation_role: The chat role of env observations after the first (``"user"`` or ``"tool"``).
        images: ``"auto"`` sends screenshots when the backend accepts images, ``"never"`` sends only text,
            ``"always"`` raises :class:`~rollgym.core.errors.ConfigError` for a backend that does not.
        max_images: Screenshots kept in the conversation (older ones become a short note).
        reply_prefix: Text that starts every reply (a prefill, e.g. ``"<answer>"`` or ``"<think>\n"``): its
            tokens go after the template's generation prompt as prompt tokens (loss mask 0), the model
            continues from them, and the env receives ``reply_prefix + sampled text``. Needs a tokenizer
            (a chat API cannot be prefilled), so it works in tokens only.
    """

    name = "llm"

    def __init__(
        self,
        backend: Backend,
        sampling: SamplingParams | None = None,
        *,
        tokenizer: Any = None,
        system_prompt: str | None = None,
        observation_role: str = "user",
        images: str = "auto",
        max_images: int = 1,
        reply_prefix: str = "",
    ) -> None:
        if images not in IMAGE_POLICIES:
            raise ConfigError(f"images must be one of {', '.join(IMAGE_POLICIES)}, got {images!r}.")
        if max_images < 1:
            raise ConfigError(f"max_images must be at least 1, got {max_images}.")
        accepts = bool(getattr(backend, "accepts_images", False))
        if images == "always" and not accepts:
            raise ConfigError(f"The {getattr(backend, 'name', type(backend).__name__)} backend does not accept images; "
                              "use an OpenAI-compatible server of a vision-language model, or images='never'.")
        self.send_images = images != "never" and accepts
        self.images = images
        self.max_images = max_images
        self.backend = backend
        self.sampling = sampling or SamplingParams()
        if self.sampling.n != 1:
            self.sampling = dataclasses.replace(self.sampling, n=1)
        self.tokenizer: Any = tokenizer if tokenizer is not None else getattr(backend, "tokenizer", None)
        if reply_prefix and self.tokenizer is None:
            raise ConfigError("reply_prefix needs the model's tokenizer (a chat API cannot be prefilled); pass "
                              "tokenizer=... or drop reply_prefix.")
        self.reply_prefix = reply_prefix
        self.system_prompt = system_prompt
        self.observation_role = observation_role
        self._prompt_cache: PromptCache | None = None
        self._prefix_scores: tuple[list[float], list[float]] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.reset()

    def spawn(self) -> ChatAgent:
        """A fresh agent on the same backend, for another episode running at the same time.

        It shares this agent's prompt cache (rendered first prompts, tokenized pieces).
        """
        agent = ChatAgent(self.backend, self.sampling, tokenizer=self.tokenizer, system_prompt=self.system_prompt,
                          observation_role=self.observation_role, images=self.images, max_images=self.max_images,
                          reply_prefix=self.reply_prefix)
        agent._prompt_cache = self.prompts if self.tokenizer is not None else None
        return agent

    @property
    def prompts(self) -> PromptCache:
        """The prompt cache this agent (and every agent spawned from it) uses; needs a tokenizer."""
        if self._prompt_cache is None or self._prompt_cache.tokenizer is not self.tokenizer:
            self._prompt_cache = PromptCache(self.tokenizer)
        return self._prompt_cache

    def fork(self, seed: int | None = None) -> ChatAgent:
        """A copy of this agent in the middle of its episode, for a branch that continues on its own.

        The copy shares the backend and the prompt cache and owns copies of the conversation,
        the token context and the turns, so the branch's tokens start exactly where this agent's
        are (no re-rendering, no re-tokenizing) and nothing either one does later reaches the
        other. ``seed`` seeds the branch's sampling from its next turn on (default: this agent's).
        """
        child = self.spawn()
        child._prompt_cache = self._prompt_cache
        child.seed = self.seed if seed is None else seed
        child.messages = copy.deepcopy(self.messages)
        child.tools = copy.deepcopy(self.tools)
        child.context_ids = list(self.context_ids)
        child._context_text = self._context_text
        child.turns = [t.copy() for t in self.turns]
        child.per_turn_rows = self.per_turn_rows
        child.last_generation = self.last_generation
        child.multimodal = self.multimodal
        return child

    def reset(self, seed: int | None = None) -> None:
        """Forget the episode; ``seed`` seeds this episode's sampling."""
        self.seed = seed
        self.messages: list[dict[str, Any]] = []
        self.tools: list[dict[str, Any]] | None = None
        self.context_ids: list[int] = []
        self._context_text = ""
        self.turns: list[TurnRecord] = []
        self.per_turn_rows = False
        self.last_generation: Generation | None = None
        self.multimodal = False

    # -- acting ---------------------------------------------------------------
    def act(self, observation: str, info: dict[str, Any]) -> str:
        """Synchronous :meth:`aact`, for loops that are not async (on an event loop the agent keeps)."""
        loop = self._loop
        if loop is None or loop.is_closed():  # one loop per agent: asyncio.run would build one per turn
            loop = self._loop = asyncio.new_event_loop()
            weakref.finalize(self, loop.close)  # closed with the agent, or at exit
        return loop.run_until_complete(self.aact(observation, info))

    def _content(self, observation: Any) -> Any:
        """The message content of an observation: its text, or text and screenshot as content parts."""
        text, image = observation_parts(observation)
        if image is None or not self.send_images:
            return text
        self.multimodal = True
        return [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": png_data_url(image)}}]

    def _drop_old_images(self) -> None:
        """Keep the newest ``max_images`` screenshots; older image parts become a short text note."""
        seen = 0
        for message in reversed(self.messages):
            content = message.get("content")
            if not isinstance(content, list):
                continue
            for i, part in enumerate(content):
                if part.get("type") == "image_url":
                    seen += 1
                    if seen > self.max_images:
                        content[i] = {"type": "text", "text": OMITTED_IMAGE}

    async def aact(self, observation: Any, info: dict[str, Any], *, prefix_ids: list[int] | None = None) -> str:
        """Add the observation to the conversation, sample one reply, and return its text.

        ``prefix_ids``, when given, are the first tokens of the reply, kept as they are (a branch forked
        inside a reply, :mod:`rollgym.rollout.branching`): the model samples only what follows them,
        within ``max_tokens`` in all, and the turn records the prefix with the logprobs and entropies
        given to :meth:`set_prefix_scores` before the call (logprobs 0.0 and no entropies otherwise).
        """
        content = self._content(observation)
        tokens = self.tokenizer is not None and not self.multimodal  # image turns go as messages
        if not self.messages:
            system = self.system_prompt if self.system_prompt is not None else info.get("system_prompt") or ""
            self.tools = info.get("tools") or None
            if self.tools and not (tokens and template_renders_tools(self.tokenizer)):
                system, self.tools = system_with_tools(system, self.tools), None  # the template would drop them
            if system:
                self.messages.append({"role": "system", "content": system})
            self.messages.append({"role": "user", "content": content})
            if tokens:
                self._context_text, self.context_ids = self.prompts.first_prompt(self.messages, self.tools)
        else:
            role = "user" if isinstance(content, list) else self.observation_role  # tool turns carry no images
            self.messages.append({"role": role, "content": content})
            if tokens:
                self._append_observation()
        self._drop_old_images()
        head = self.reply_prefix
        if head and not tokens:
            raise ConfigError("reply_prefix works on text conversations only and this turn carries a screenshot; "
                              "use images='never' or drop reply_prefix.")
        if head:
            self._prefill(head)
        sampling = self.sampling
        if self.seed is not None:
            sampling = dataclasses.replace(sampling, seed=(self.seed * 1_000_003 + len(self.turns)) % 2**63)
        prefix = list(prefix_ids or ())
        if prefix:
            if not tokens:
                raise ConfigError("A reply can be continued from a token prefix only by an agent that works in "
                                  "tokens (a tokenizer and no image turns).")
            if len(prefix) >= sampling.max_tokens:
                raise ConfigError(f"A token prefix of {len(prefix)} tokens leaves nothing to sample within "
                                  f"max_tokens={sampling.max_tokens}.")
            sampling = dataclasses.replace(sampling, max_tokens=sampling.max_tokens - len(prefix))
        prompt: Any = list(self.context_ids) + prefix if tokens else list(self.messages)
        generation = (await self.backend.generate([prompt], sampling))[0]
        if prefix:
            scores = self._prefix_scores or ([0.0] * len(prefix), [])
            self._prefix_scores = None
            output = prefix + list(generation.token_ids)
            entropies = (list(scores[1]) + list(generation.entropies)
                         if len(scores[1]) == len(prefix) and len(generation.entropies) == len(generation.token_ids)
                         else [])
            generation = dataclasses.replace(
                generation, token_ids=output, logprobs=list(scores[0]) + list(generation.logprobs),
                text=self.tokenizer.decode(output, skip_special_tokens=True), entropies=entropies,
                prompt_ids=list(self.context_ids), token_versions=[],
            )
        self.last_generation = generation
        self.turns.append(TurnRecord(
            prompt_ids=list(self.context_ids) if tokens else list(generation.prompt_ids),
            output_ids=list(generation.token_ids), output_logprobs=list(generation.logprobs),
            policy_version=generation.policy_version, finish_reason=generation.finish_reason,
            text=generation.text, output_versions=list(generation.token_versions),
            output_entropies=list(generation.entropies),
        ))
        if tokens:
            self.context_ids = self.context_ids + list(generation.token_ids)
        self.messages.append({"role": "assistant", "content": head + generation.text})
        return head + generation.text

    def _prefill(self, prefix: str) -> None:
        """Put ``reply_prefix``'s tokens at the end of the context: prompt tokens of the first turn, env tokens
        (mask 0) of the previous turn after it."""
        prefix_ids = self.prompts.encoder.encode(prefix)
        if self.turns and not self.per_turn_rows:
            self.turns[-1].obs_ids = self.turns[-1].obs_ids + prefix_ids
        self.context_ids = self.context_ids + prefix_ids
        self._context_text += prefix

    def set_prefix_scores(self, logprobs: list[float], entropies: list[float]) -> None:
        """The behaviour logprobs and entropies of the ``prefix_ids`` the next :meth:`aact` is given.

        A branch forked inside a reply passes its parent's, so the kept tokens carry the numbers
        they were sampled with (a trainer masks them in the branch; they are counted in the parent).
        """
        self._prefix_scores = (list(logprobs), list(entropies))

    def tokens_used(self) -> int:
        """Tokens after the first prompt so far: sampled and env tokens (the collector's token budget)."""
        if not self.turns:
            return 0
        if self.tokenizer is None or self.per_turn_rows or self.multimodal:
            return sum(len(t.output_ids) + len(t.obs_ids) for t in self.turns)
        return len(self.context_ids) - len(self.turns[0].prompt_ids)

    def record_reward(self, reward: float) -> None:
        """Attach the env's reward for the last turn."""
        if self.turns:
            self.turns[-1].reward = float(reward)

    # -- token bookkeeping ------------------------------------------------------
    def _append_observation(self) -> None:
        """Extend the context with the env's tokens after the last reply (one render of the conversation)."""
        assert self.tokenizer is not None
        prompts = self.prompts
        last = self.turns[-1]
        reply = self.messages[-2]["content"][len(self.reply_prefix):]  # the prefix is in the context already
        rendered = prompts.render(self.messages, self.tools)
        head = self._context_text + reply
        if self.per_turn_rows or not rendered.startswith(head):
            # The template rewrote history (or did on an earlier turn): the next turn is its own row.
            self.per_turn_rows = True
            self._context_text, self.context_ids = rendered, prompts.encoder.encode(rendered)
            return
        # After the reply the template closes it (e.g. "<|im_end|>\n"); the model may have sampled part of that.
        delta = rendered[len(head):]
        sampled = self.tokenizer.decode(last.output_ids, skip_special_tokens=False)
        sampled_tail = sampled[len(reply):] if sampled.startswith(reply) else ""
        suffix = delta[len(sampled_tail):] if sampled_tail and delta.startswith(sampled_tail) else delta
        obs_ids = prompts.encoder.encode(suffix)
        last.obs_ids = obs_ids
        self.context_ids = self.context_ids + obs_ids
        self._context_text = rendered

    def token_record(self) -> TokenRecord:
        """The episode's tokens: prompt, completion (model and env tokens), loss mask and logprobs."""
        exact = self.tokenizer is not None and not self.multimodal and all(t.output_ids for t in self.turns)
        if not self.turns:
            return TokenRecord([], [], [], [], [], False, exact)
        prompt_ids = list(self.turns[0].prompt_ids)
        completion: list[int] = []
        mask: list[int] = []
        logprobs: list[float] = []
        for turn in self.turns:
            lps = turn.output_logprobs if len(turn.output_logprobs) == len(turn.output_ids) else [0.0] * len(
                turn.output_ids)
            completion += turn.output_ids + turn.obs_ids
            mask += [1] * len(turn.output_ids) + [0] * len(turn.obs_ids)
            logprobs += list(lps) + [0.0] * len(turn.obs_ids)
        if self.per_turn_rows:
            last = self.turns[-1]
            prompt_ids, completion = list(last.prompt_ids), list(last.output_ids)
            mask, logprobs = [1] * len(completion), list(last.output_logprobs) or [0.0] * len(completion)
        return TokenRecord(prompt_ids, completion, mask, logprobs, list(self.turns), self.per_turn_rows, exact)


@dataclass(frozen=True)
class RemoteChatAgent:
    """A picklable recipe for a :class:`ChatAgent` over an OpenAI-compatible server, built where it is called.

    Distributed collection builds agents inside Ray workers from a factory; this one
    carries only the server URL, the tokenizer folder and the sampling settings, so it
    pickles by value and every worker talks to the same inference server.

    Example:
        >>> from rollgym.rollout.distributed import collect_ray  # doctest: +SKIP
        >>> factory = RemoteChatAgent("http://127.0.0.1:8000/v1", tokenizer="path/to/model")  # doctest: +SKIP
        >>> groups = collect_ray(factory, "Countdown-v0", 64, 8, num_workers=4)  # doctest: +SKIP
    """

    url: str
    tokenizer: str | None = None
    sampling: SamplingParams = field(default_factory=SamplingParams)
    model: str | None = None
    system_prompt: str | None = None

    def __call__(self) -> ChatAgent:
        from rollgym.agents.backends import make_backend
        from rollgym.agents.backends.catalog import load_tokenizer

        tokenizer = load_tokenizer(self.tokenizer) if self.tokenizer is not None else None
        backend = make_backend(self.url, model=self.model)
        return ChatAgent(backend, self.sampling, tokenizer=tokenizer, system_prompt=self.system_prompt)
