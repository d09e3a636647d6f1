"""An in-process vLLM backend (``vllm.LLM``), used when vLLM is installed and a GPU is present.

vLLM is imported lazily: the ``vllm`` extra pulls a CUDA build of torch and is
not part of ``all``. Speculative decoding is lossless, so rollouts may use it:
pass vLLM's ``speculative_config`` through, e.g.
``{"method": "eagle", "model": "path/to/eagle-head", "num_speculative_tokens": 3}``,
``{"model": "path/to/draft", "num_speculative_tokens": 4}`` for a draft model,
or ``{"method": "mtp", "num_speculative_tokens": 1}`` for a model's own MTP heads.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from rollgym.agents.backends.base import Generation, Prompt, SamplingParams, check_prompts
from rollgym.core.errors import MissingDependencyError


def import_vllm() -> Any:
    """Import vllm or raise a :class:`MissingDependencyError` that says how to get it."""
    try:
        import vllm
    except ImportError as exc:
        raise MissingDependencyError(
            "The vLLM backend needs vllm and a GPU: pip install 'rollgym[vllm]' on a CUDA machine."
        ) from exc
    return vllm


class VLLMBackend:
    """Generate with ``vllm.LLM`` in this process.

    Args:
        model: A model folder or hub id.
        speculative_config: vLLM's speculative decoding settings (draft model, EAGLE, MTP), passed through.
        **engine_kwargs: Any other ``vllm.LLM`` argument (``tensor_parallel_size``, ``gpu_memory_utilization``...).
    """

    name = "vllm"
    accepts_images = False
    """Token-id prompts only; screenshots reach it as their text part."""

    def __init__(self, model: str, *, speculative_config: dict[str, Any] | None = None, **engine_kwargs: Any) -> None:
        vllm = import_vllm()
        if speculative_config:
            engine_kwargs["speculative_config"] = speculative_config
        self.llm = vllm.LLM(model=model, **engine_kwargs)
        self.tokenizer = self.llm.get_tokenizer()
        self.policy_version = 0
        self._vllm = vllm
        self._lock = threading.Lock()

    def to_vllm_sampling(self, sampling: SamplingParams) -> Any:
        """The equivalent ``vllm.SamplingParams`` (sampled-token logprobs on, raw mode)."""
        return self._vllm.SamplingParams(
            n=sampling.n, temperature=sampling.temperature, top_p=sampling.top_p,
            top_k=sampling.top_k if sampling.top_k > 0 else -1, max_tokens=sampling.max_tokens,
            stop=list(sampling.stop) or None, seed=sampling.seed, logprobs=0, **sampling.extra,
        )

    async def generate(self, prompts: list[Prompt], sampling: SamplingParams) -> list[Generation]:
        """Generate ``n`` samples for each prompt (token ids, text or messages)."""
        check_prompts(prompts)
        inputs: list[dict[str, Any]] = []
        for p in prompts:
            if isinstance(p, str):
                inputs.append({"prompt": p})
            elif p and isinstance(p[0], dict):
                text = self.tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True)
                inputs.append({"prompt": text})
            else:
                inputs.append({"prompt_token_ids": list(p)})
        params = self.to_vllm_sampling(sampling)

        def run() -> list[Any]:
            with self._lock:
                return list(self.llm.generate(inputs, params, use_tqdm=False))

        outputs = await asyncio.to_thread(run)
        return [generation_from_vllm(o, c, self.policy_version) for o in outputs for c in o.outputs]


def generation_from_vllm(request_output: Any, completion: Any, policy_version: int) -> Generation:
    """Convert one vLLM ``CompletionOutput`` into a :class:`Generation`."""
    token_ids = [int(t) for t in completion.token_ids]
    logprobs: list[float] = []
    for tok, entry in zip(token_ids, completion.logprobs or []):
        logprobs.append(float(entry[tok].logprob))
    reason = completion.finish_reason
    return Generation(
        text=completion.text,
        token_ids=token_ids,
        logprobs=logprobs,
        finish_reason="length" if reason == "length" else ("abort" if reason == "abort" else "stop"),
        policy_version=policy_version,
        prompt_ids=list(request_output.prompt_token_ids or []),
    )
