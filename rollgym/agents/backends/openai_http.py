"""An OpenAI-compatible HTTP backend: a vLLM server, ``rollgym serve-model``, or any chat API.

Token-id and text prompts go to ``/v1/completions`` and chat messages to
``/v1/chat/completions``. The request asks for vLLM's extensions
(``return_token_ids`` and sampled-token logprobs); servers that ignore them
still work, and their generations simply carry no token ids. Native tool calls
in a chat response are rewritten into the Hermes ``<tool_call>`` form that
rollgym envs parse.

Transient failures (connection errors, timeouts, HTTP 429 and 5xx) are retried
with exponential backoff; a semaphore caps requests in flight and a token
bucket caps requests per second.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Any

from rollgym.agents.backends.base import BackendError, Generation, Prompt, SamplingParams, check_prompts
from rollgym.core.errors import ConfigError, MissingDependencyError

_RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


class _RateLimiter:
    def __init__(self, per_second: float | None) -> None:
        self.interval = 1.0 / per_second if per_second else 0.0
        self._next = 0.0
        self._lock = asyncio.Lock()

    async def wait(self) -> None:
        if not self.interval:
            return
        async with self._lock:
            now = time.monotonic()
            delay = self._next - now
            self._next = max(now, self._next) + self.interval
        if delay > 0:
            await asyncio.sleep(delay)


class OpenAIBackend:
    """Generate through an OpenAI-compatible server.

    Args:
        base_url: e.g. ``http://127.0.0.1:8000/v1`` (``/v1`` is added when missing).
        model: The served model's name; asked from ``/v1/models`` when ``None``.
        api_key: Bearer token; defaults to ``$OPENAI_API_KEY``.
        max_concurrency: Most requests in flight at once.
        requests_per_second: Rate cap, or ``None`` for none.
        max_retries: Retries of a transient failure.
        timeout_s: Per-request timeout.
        accepts_images: Whether the server's model takes images (OpenAI ``image_url`` content parts): true for
            vision-language models (a vLLM server of Qwen2-VL, an API's vision model); set it false for text-only
            servers such as ``rollgym serve-model``, and :class:`~rollgym.agents.chat.ChatAgent` sends text only.
    """

    name = "openai"

    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        api_key: str | None = None,
        max_concurrency: int = 32,
        requests_per_second: float | None = None,
        max_retries: int = 3,
        timeout_s: float = 120.0,
        backoff_s: float = 0.5,
        accepts_images: bool = True,
    ) -> None:
        try:
            import httpx
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise MissingDependencyError("The HTTP backend needs httpx: pip install 'rollgym[llm]'.") from exc
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"base_url must start with http:// or https://, got {base_url!r}.")
        base_url = base_url.rstrip("/")
        self.base_url = base_url if base_url.endswith("/v1") else base_url + "/v1"
        self.model = model
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY", "")
        self.max_retries = max_retries
        self.timeout_s = timeout_s
        self.backoff_s = backoff_s
        self.max_concurrency = max_concurrency
        self.accepts_images = accepts_images
        self.policy_version = 0
        self._httpx = httpx
        self._limiter = _RateLimiter(requests_per_second)
        self._semaphores: dict[int, asyncio.Semaphore] = {}
        self._clients: dict[int, Any] = {}

    # one client and semaphore per event loop: asyncio objects cannot cross loops
    def _client(self) -> Any:
        key = id(asyncio.get_running_loop())
        if key not in self._clients:
            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            self._clients[key] = self._httpx.AsyncClient(timeout=self.timeout_s, headers=headers)
            self._semaphores[key] = asyncio.Semaphore(self.max_concurrency)
        return self._clients[key]

    async def aclose(self) -> None:
        """Close the HTTP client of the running loop."""
        client = self._clients.pop(id(asyncio.get_running_loop()), None)
        if client is not None:
            await client.aclose()

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        client = self._client()
        semaphore = self._semaphores[id(asyncio.get_running_loop())]
        last_error = "no attempt made"
        for attempt in range(self.max_retries + 1):
            if attempt:
                await asyncio.sleep(self.backoff_s * 2 ** (attempt - 1))
            await self._limiter.wait()
            async with semaphore:
                try:
                    response = await client.post(self.base_url + path, json=body)
                except (self._httpx.TransportError, self._httpx.TimeoutException) as exc:
                    last_error = f"{type(exc).__name__}: {exc}"
                    continue
            if response.status_code in _RETRY_STATUS:
                last_error = f"HTTP {response.status_code}: {response.text[:200]}"
                continue
            if response.status_code != 200:
                raise BackendError(f"{self.base_url}{path} answered HTTP {response.status_code}: {response.text[:300]}")
            try:
                data = response.json()
            except json.JSONDecodeError as exc:
                raise BackendError(f"{self.base_url}{path} returned invalid JSON: {exc}") from exc
            if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
                raise BackendError(f"{self.base_url}{path} returned a response without 'choices'.")
            return data
        raise BackendError(f"{self.base_url}{path} failed after {self.max_retries + 1} attempts ({last_error}).")

    async def model_name(self) -> str:
        """The model to ask for: the given one, or the first one the server lists."""
        if self.model is None:
            response = await self._client().get(self.base_url + "/models")
            try:
                self.model = str(response.json()["data"][0]["id"])
            except (KeyError, IndexError, ValueError) as exc:
                raise BackendError(f"{self.base_url}/models lists no model; pass model=...") from exc
        return self.model

    def _sampling_body(self, sampling: SamplingParams) -> dict[str, Any]:
        body: dict[str, Any] = {
            "max_tokens": sampling.max_tokens,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "n": sampling.n,
        }
        if sampling.top_k:
            body["top_k"] = sampling.top_k
        if sampling.stop:
            body["stop"] = list(sampling.stop)
        if sampling.seed is not None:
            body["seed"] = sampling.seed
        body.update(sampling.extra)
        return body

    async def generate(self, prompts: list[Prompt], sampling: SamplingParams) -> list[Generation]:
        """Send each prompt as one request (``n`` samples each) and gather the generations in order."""
        check_prompts(prompts)
        model = await self.model_name()
        results = await asyncio.gather(*(self._one(model, p, sampling) for p in prompts))
        return [g for gens in results for g in gens]

    async def _one(self, model: str, prompt: Prompt, sampling: SamplingParams) -> list[Generation]:
        body = {"model": model, **self._sampling_body(sampling), "return_token_ids": True}
        if isinstance(prompt, list) and prompt and isinstance(prompt[0], dict):
            body.update(messages=prompt, logprobs=True, top_logprobs=0)
            data = await self._post("/chat/completions", body)
            return [self._from_chat(c, data, sampling.n) for c in data["choices"]]
        body.update(prompt=prompt, logprobs=0)
        data = await self._post("/completions", body)
        return [self._from_completion(c, prompt) for c in data["choices"]]

    def _from_completion(self, choice: dict[str, Any], prompt: Prompt) -> Generation:
        logprobs = choice.get("logprobs") or {}
        token_ids = _token_ids(choice.get("token_ids"), logprobs.get("tokens"))
        return Generation(
            text=str(choice.get("text") or ""),
            token_ids=token_ids,
            logprobs=[float(x) for x in (logprobs.get("token_logprobs") or []) if x is not None],
            finish_reason=_finish(choice.get("finish_reason")),
            policy_version=self.policy_version,
            prompt_ids=_prompt_ids(choice.get("prompt_token_ids"), prompt),
        )

    def _from_chat(self, choice: dict[str, Any], data: dict[str, Any], n: int) -> Generation:
        message = choice.get("message") or {}
        text = str(message.get("content") or "")
        calls = message.get("tool_calls") or []
        for call in calls:  # native tool calls become Hermes text, the form envs parse
            fn = call.get("function") or {}
            args = fn.get("arguments") or "{}"
            try:
                parsed = json.loads(args) if isinstance(args, str) else args
            except json.JSONDecodeError:
                parsed = args
            text += "<tool_call>" + json.dumps({"name": fn.get("name"), "arguments": parsed}) + "</tool_call>"
        content = (choice.get("logprobs") or {}).get("content") or []
        token_ids = _token_ids(choice.get("token_ids"), [c.get("token") for c in content])
        return Generation(
            text=text,
            token_ids=token_ids,
            logprobs=[float(c["logprob"]) for c in content if c.get("logprob") is not None],
            finish_reason=_finish(choice.get("finish_reason")),
            policy_version=self.policy_version,
            prompt_ids=list(data.get("prompt_token_ids") or choice.get("prompt_token_ids") or []),
            tool_calls=list(calls),
        )


def _prompt_ids(reported: Any, prompt: Prompt) -> list[int]:
    if isinstance(reported, list):
        return [int(t) for t in reported]
    if isinstance(prompt, list) and all(isinstance(t, int) for t in prompt):
        return [int(t) for t in prompt]  # type: ignore[arg-type]
    return []


def _finish(reason: Any) -> str:
    if reason in ("length", "max_tokens"):
        return "length"
    if reason in ("abort", "cancelled"):
        return "abort"
    return "stop"


def _token_ids(explicit: Any, tokens: Any) -> list[int]:
    if isinstance(explicit, list):
        return [int(t) for t in explicit]
    # vLLM's return_tokens_as_token_ids renders logprob tokens as "token_id:123"
    if isinstance(tokens, list) and tokens and all(isinstance(t, str) and t.startswith("token_id:") for t in tokens):
        return [int(t.split(":", 1)[1]) for t in tokens]
    return []
