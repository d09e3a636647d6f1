"""``rollgym serve-model``: serve a transformers model through the OpenAI-compatible API.

A small threaded HTTP server on 127.0.0.1 for tests and small users. Requests
from many connections are merged into batches by :class:`TransformersBackend`,
which runs on one event-loop thread. Endpoints: ``GET /v1/models``,
``POST /v1/completions`` (text or token-id prompts) and
``POST /v1/chat/completions`` (messages, ``tools`` rendered by the chat
template, Hermes tool calls returned as native ``tool_calls``). Every choice
carries ``token_ids`` and sampled-token logprobs, like vLLM's
``return_token_ids``; the response carries ``prompt_token_ids``. Streaming is
not supported.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from rollgym.agents.backends.base import Generation, SamplingParams
from rollgym.agents.backends.hf import TransformersBackend, render_chat_ids
from rollgym.core.errors import ConfigError
from rollgym.core.toolcalls import parse_tool_calls

MAX_BODY_BYTES = 8 * 1024 * 1024


class _RequestError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class ModelServer:
    """Serve ``backend`` on ``host:port`` (port 0 picks a free one); use as a context manager.

    Example:
        >>> with ModelServer(backend) as server:  # doctest: +SKIP
        ...     print(server.url)   # http://127.0.0.1:PORT/v1
    """

    def __init__(self, backend: TransformersBackend, *, model_name: str = "local", host: str = "127.0.0.1",
                 port: int = 0) -> None:
        self.backend = backend
        self.model_name = model_name
        self._loop = asyncio.new_event_loop()
        self._loop_thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="rollgym-model-loop")
        self._httpd = ThreadingHTTPServer((host, port), self._handler_class())
        self._httpd.daemon_threads = True
        self._http_thread = threading.Thread(target=self._httpd.serve_forever, daemon=True, name="rollgym-http")

    @property
    def url(self) -> str:
        """The API base URL, ending in ``/v1``."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> ModelServer:
        """Start serving in background threads."""
        self._loop_thread.start()
        self._http_thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in the calling thread until interrupted."""
        self._loop_thread.start()
        try:
            self._httpd.serve_forever()
        finally:
            self.close()

    def close(self) -> None:
        """Stop serving and free the port."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._loop.call_soon_threadsafe(self._loop.stop)

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- request handling ---------------------------------------------------
    def _generate(self, prompts: list[list[int]], sampling: SamplingParams) -> list[Generation]:
        future = asyncio.run_coroutine_threadsafe(self.backend.generate(list(prompts), sampling), self._loop)
        return future.result()

    def _sampling(self, body: dict[str, Any]) -> SamplingParams:
        if body.get("stream") and "messages" not in body:
            raise _RequestError(400, "Streaming is not supported on /v1/completions (only on /v1/chat/completions); "
                                     "set stream to false.")
        stop = body.get("stop") or ()
        try:
            return SamplingParams(
                max_tokens=int(next((body[k] for k in ("max_completion_tokens", "max_tokens")
                                     if body.get(k) is not None), 256)),
                temperature=float(body.get("temperature", 1.0)),
                top_p=float(body.get("top_p", 1.0)),
                top_k=int(body.get("top_k") or 0),
                n=int(body.get("n") or 1),
                stop=(stop,) if isinstance(stop, str) else tuple(stop),
                seed=None if body.get("seed") is None else int(body["seed"]),
            )
        except (ConfigError, TypeError, ValueError) as exc:
            raise _RequestError(400, str(exc)) from exc

    def completions(self, body: dict[str, Any]) -> dict[str, Any]:
        """Answer ``POST /v1/completions``."""
        sampling = self._sampling(body)
        prompt = body.get("prompt")
        if isinstance(prompt, str) or (isinstance(prompt, list) and prompt and isinstance(prompt[0], int)):
            prompts = [prompt]
        elif isinstance(prompt, list) and prompt and all(isinstance(p, (str, list)) for p in prompt):
            prompts = list(prompt)
        else:
            raise _RequestError(400, "'prompt' must be a string, a list of token ids, or a list of those.")
        ids = [self.backend.encode(p) for p in prompts]
        if any(not p for p in ids):
            raise _RequestError(400, "A prompt has no tokens.")
        gens = self._generate(ids, sampling)
        choices = []
        for i, g in enumerate(gens):
            choices.append({
                "index": i,
                "text": g.text,
                "finish_reason": g.finish_reason,
                "token_ids": g.token_ids,
                "prompt_token_ids": g.prompt_ids,
                "logprobs": {
                    "tokens": [self.backend.tokenizer.decode([t]) for t in g.token_ids],
                    "token_logprobs": g.logprobs,
                },
            })
        return self._envelope("text_completion", choices, gens)

    def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        """Answer ``POST /v1/chat/completions``."""
        sampling = self._sampling(body)
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
            raise _RequestError(400, "'messages' must be a non-empty list of {'role', 'content'} objects.")
        for m in messages:
            m.setdefault("content", "")
            if m.get("content") is None:
                m["content"] = ""
        tools = body.get("tools") or None
        try:
            prompt_ids = render_chat_ids(self.backend.tokenizer, messages, tools)
        except ConfigError as exc:
            raise _RequestError(400, str(exc)) from exc
        except Exception as exc:  # a template error is the client's message shape
            raise _RequestError(400, f"The chat template could not render these messages ({exc}).") from exc
        gens = self._generate([prompt_ids], sampling)
        choices = []
        for i, g in enumerate(gens):
            parsed = parse_tool_calls(g.text) if tools else None
            message: dict[str, Any] = {"role": "assistant", "content": g.text}
            finish = g.finish_reason
            if parsed is not None and parsed.calls:
                message["content"] = parsed.text or None
                message["tool_calls"] = [
                    {"id": f"call_{uuid.uuid4().hex[:12]}", "type": "function",
                     "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                    for c in parsed.calls
                ]
                finish = "tool_calls" if finish == "stop" else finish
            choices.append({
                "index": i,
                "message": message,
                "finish_reason": finish,
                "token_ids": g.token_ids,
                "logprobs": {"content": [
                    {"token": self.backend.tokenizer.decode([t]), "logprob": lp}
                    for t, lp in zip(g.token_ids, g.logprobs)
                ]},
            })
        out = self._envelope("chat.completion", choices, gens)
        out["prompt_token_ids"] = prompt_ids
        return out

    def _envelope(self, kind: str, choices: list[dict[str, Any]], gens: list[Generation]) -> dict[str, Any]:
        prompt_tokens = len(gens[0].prompt_ids) if gens else 0
        completion_tokens = sum(len(g.token_ids) for g in gens)
        return {
            "id": f"cmpl-{uuid.uuid4().hex[:16]}",
            "object": kind,
            "created": int(time.time()),
            "model": self.model_name,
            "choices": choices,
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet by default
                return

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, out: dict[str, Any], usage: bool) -> None:
                """Send a finished chat completion as OpenAI's server-sent chunks (the text in one delta)."""
                events = []
                for choice in out["choices"]:
                    delta = {k: v for k, v in choice["message"].items() if v is not None}
                    if "tool_calls" in delta:
                        delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(delta["tool_calls"])]
                    events.append({"index": choice["index"], "delta": delta, "finish_reason": None})
                    events.append({"index": choice["index"], "delta": {}, "finish_reason": choice["finish_reason"]})
                base = {"id": out["id"], "object": "chat.completion.chunk", "created": out["created"],
                        "model": out["model"]}
                chunks = [{**base, "choices": [event]} for event in events]
                if usage:
                    chunks.append({**base, "choices": [], "usage": out["usage"]})
                data = b"".join(b"data: " + json.dumps(c).encode("utf-8") + b"\n\n" for c in chunks)
                data += b"data: [DONE]\n\n"
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _error(self, status: int, message: str) -> None:
                kind = "invalid_request_error" if status < 500 else "server_error"
                self._send(status, {"error": {"message": message, "type": kind}})

            def do_GET(self) -> None:
                if self.path.rstrip("/") in ("/v1/models", "/models"):
                    self._send(200, {"object": "list", "data": [
                        {"id": server.model_name, "object": "model", "owned_by": "rollgym"}]})
                elif self.path.rstrip("/") in ("/health", "/v1/health"):
                    self._send(200, {"status": "ok"})
                else:
                    self._error(404, f"No route {self.path}; use /v1/completions or /v1/chat/completions.")

            def do_POST(self) -> None:
                routes = {"/v1/completions": server.completions, "/v1/chat/completions": server.chat}
                handler = routes.get(self.path.rstrip("/"))
                if handler is None:
                    self._error(404, f"No route {self.path}; use /v1/completions or /v1/chat/completions.")
                    return
                length = int(self.headers.get("Content-Length") or 0)
                if length > MAX_BODY_BYTES:
                    self._error(413, f"Request body over {MAX_BODY_BYTES} bytes.")
                    return
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                    if not isinstance(body, dict):
                        raise _RequestError(400, "The request body must be a JSON object.")
                    if body.get("stream") and handler == server.chat:
                        self._stream(handler(body), bool((body.get("stream_options") or {}).get("include_usage")))
                    else:
                        self._send(200, handler(body))
                except json.JSONDecodeError:
                    self._error(400, "The request body is not valid JSON.")
                except _RequestError as exc:
                    self._error(exc.status, str(exc))
                except Exception as exc:  # keep serving; report without a traceback
                    self._error(500, f"{type(exc).__name__}: {exc}")

        return Handler
