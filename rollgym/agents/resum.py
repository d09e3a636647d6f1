"""ReSum's summarize-and-continue: a chat agent that, when its context outgrows a window, summarizes and starts over.

Long search episodes outgrow a model's context. ReSum's answer (summarize-and-continue) is a
:class:`SummarizingAgent`: before a reply, when the context already holds ``window`` tokens or
more, the agent

1. asks the model for a summary: the latest observation and the summary request
   (:data:`SUMMARY_PROMPT`) go in as one user message (prompt tokens, never trained), and the
   model samples the summary (policy tokens, trained like any reply);
2. replaces the conversation with the task and the summary (:data:`RESUME_TEMPLATE`: the
   system prompt, then one user message holding the first observation and the summary);
3. samples its reply from that fresh context, and the episode goes on.

The summary is not an action: the env never sees it. It is recorded as its own turn, so the
episode's token record switches to one row per turn (``per_turn_rows``): every row is the
exact context a reply (or the summary) was sampled from and the tokens sampled, with their
logprobs, so a trainer's loss covers the summary and the replies and never the injected request
or the replaced history. :attr:`SummarizingAgent.summary_turns` lists the summary turns' indices
in :attr:`~rollgym.agents.chat.ChatAgent.turns`.

The summary point is a branch point of a tree rollout (:func:`agrow_resum_tree`): a branch forked
just before it redraws the summary; ReSum's contrastive branches come from ``summarize_next``
on a forked agent: ``False`` masks the summary at that point (the branch keeps its whole context),
``True`` injects one where the window did not ask for it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from rollgym.agents.backends.base import Backend, SamplingParams
from rollgym.agents.chat import ChatAgent, TurnRecord, observation_parts
from rollgym.core.errors import ConfigError

__all__ = ["RESUME_TEMPLATE", "SUMMARY_PROMPT", "SummarizingAgent"]

#: The request for a summary, after the latest observation.
SUMMARY_PROMPT = ("Your context is nearly full and will be cleared. Summarize what you have found so far and what is "
                  "left to do, with every fact you still need; you will continue from this summary alone.")
#: The first user message of the context after a summary.
RESUME_TEMPLATE = "{task}\n\nSummary of your progress so far (the earlier conversation was cleared):\n{summary}"


class SummarizingAgent(ChatAgent):
    """A :class:`~rollgym.agents.chat.ChatAgent` with ReSum's summarize-and-continue (see the module docstring).

    Args:
        window: Context tokens at which the next reply is preceded by a summary.
        summary_tokens: Most tokens of a summary (default: the replies' ``max_tokens``).
        summary_prompt, resume_template: The request and the fresh context's user message
            (``{task}`` and ``{summary}`` are filled in).
        Other arguments are :class:`~rollgym.agents.chat.ChatAgent`'s; a tokenizer is required.
    """

    name = "llm-resum"

    def __init__(self, backend: Backend, sampling: SamplingParams | None = None, *, window: int,
                 summary_tokens: int | None = None, summary_prompt: str = SUMMARY_PROMPT,
                 resume_template: str = RESUME_TEMPLATE, **kwargs: Any) -> None:
        super().__init__(backend, sampling, **kwargs)
        if self.tokenizer is None:
            raise ConfigError("SummarizingAgent works in tokens: pass the model's tokenizer (or a backend that has "
                              "one).")
        if not isinstance(window, int) or window < 1:
            raise ConfigError(f"window must be a positive number of tokens, got {window!r}.")
        if summary_tokens is not None and summary_tokens < 1:
            raise ConfigError(f"summary_tokens must be at least 1, got {summary_tokens!r}.")
        if "{task}" not in resume_template or "{summary}" not in resume_template:
            raise ConfigError("resume_template must contain {task} and {summary}.")
        self.window = window
        self.summary_tokens = summary_tokens
        self.summary_prompt = summary_prompt
        self.resume_template = resume_template

    def spawn(self) -> SummarizingAgent:
        """A fresh agent with the same settings, sharing the prompt cache."""
        agent = SummarizingAgent(self.backend, self.sampling, window=self.window, summary_tokens=self.summary_tokens,
                                 summary_prompt=self.summary_prompt, resume_template=self.resume_template,
                                 tokenizer=self.tokenizer, system_prompt=self.system_prompt,
                                 observation_role=self.observation_role, images=self.images,
                                 max_images=self.max_images, reply_prefix=self.reply_prefix)
        agent._prompt_cache = self.prompts
        return agent

    def fork(self, seed: int | None = None) -> SummarizingAgent:
        """A copy mid-episode (see :meth:`ChatAgent.fork`), with the summaries so far and the first prompt's info."""
        child = super().fork(seed)
        assert isinstance(child, SummarizingAgent)
        child.task_text = self.task_text
        child.first_info = dict(self.first_info)
        child.summary_turns = list(self.summary_turns)
        child.summaries = list(self.summaries)
        child.summarize_next = self.summarize_next
        return child

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self.task_text = ""
        self.first_info: dict[str, Any] = {}
        self.summary_turns: list[int] = []
        self.summaries: list[str] = []
        #: Overrides the window for the next reply only: True summarizes (ReSum's injected branch), False does not.
        self.summarize_next: bool | None = None

    def due(self) -> bool:
        """Whether the next reply is preceded by a summary."""
        if not self.messages or self.multimodal:
            return False
        if self.summarize_next is not None:
            return self.summarize_next
        return len(self.context_ids) >= self.window

    async def aact(self, observation: Any, info: dict[str, Any], *, prefix_ids: list[int] | None = None) -> str:
        """Reply to ``observation``; first summarize and start over when the context is full (see the module)."""
        if not self.messages:
            self.task_text = observation_parts(observation)[0]
            self.first_info = {k: info[k] for k in ("system_prompt", "tools") if k in info}
            return await super().aact(observation, info, prefix_ids=prefix_ids)
        due = self.due()
        self.summarize_next = None
        if not due or prefix_ids:
            return await super().aact(observation, info, prefix_ids=prefix_ids)
        summary = await self._summarize(observation)
        self.messages, self.context_ids, self._context_text = [], [], ""
        self.per_turn_rows = True  # the context was replaced: each turn is its own exact row from here on
        resumed = self.resume_template.format(task=self.task_text, summary=summary)
        return await super().aact(resumed, {**info, **self.first_info})

    async def _summarize(self, observation: Any) -> str:
        """Sample the summary from the conversation, the latest observation and the request; record its turn."""
        text = observation_parts(observation)[0]
        request = [*self.messages, {"role": "user", "content": f"{text}\n\n{self.summary_prompt}".strip()}]
        prompt_ids = self.prompts.encoder.encode(self.prompts.render(request, self.tools))
        sampling = self.sampling
        if self.summary_tokens is not None:
            sampling = dataclasses.replace(sampling, max_tokens=self.summary_tokens)
        if self.seed is not None:
            sampling = dataclasses.replace(sampling, seed=(self.seed * 1_000_003 + len(self.turns)) % 2**63)
        generation = (await self.backend.generate([prompt_ids], sampling))[0]
        self.turns.append(TurnRecord(
            prompt_ids=list(prompt_ids), output_ids=list(generation.token_ids),
            output_logprobs=list(generation.logprobs), reward=0.0, policy_version=generation.policy_version,
            finish_reason=generation.finish_reason, text=generation.text,
            output_versions=list(generation.token_versions), output_entropies=list(generation.entropies),
        ))
        self.summary_turns.append(len(self.turns) - 1)
        self.summaries.append(generation.text)
        return generation.text
