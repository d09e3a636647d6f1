"""Backends against a real tiny model: exact tokens and logprobs, batching, HTTP, retries."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from rollgym.agents.backends import make_backend
from rollgym.agents.backends.base import BackendError, SamplingParams
from rollgym.agents.backends.openai_http import OpenAIBackend
from rollgym.core import ConfigError

PROMPT = [5, 17, 42, 99, 7]


def assert_logprobs_match(backend, prompt_ids, gen, tol=1e-4):
    assert len(gen.logprobs) == len(gen.token_ids) > 0
    again = backend.logprobs_of(list(prompt_ids), list(gen.token_ids))
    assert max(abs(a - b) for a, b in zip(again, gen.logprobs)) < tol


def test_transformers_tokens_and_logprobs_match_a_forward_pass(tiny_backend):
    gens = asyncio.run(tiny_backend.generate([PROMPT, PROMPT[:2]], SamplingParams(max_tokens=12, seed=1, n=2)))
    assert len(gens) == 4
    assert [g.prompt_ids for g in gens] == [PROMPT, PROMPT, PROMPT[:2], PROMPT[:2]]
    for g in gens:
        assert_logprobs_match(tiny_backend, g.prompt_ids, g)
        assert g.finish_reason in ("stop", "length")
        assert g.finish_reason == "stop" or len(g.token_ids) == 12


def test_seeded_sampling_is_reproducible_and_greedy_is_deterministic(tiny_backend):
    s = SamplingParams(max_tokens=10, seed=7)
    a = asyncio.run(tiny_backend.generate([PROMPT], s))[0]
    b = asyncio.run(tiny_backend.generate([PROMPT], s))[0]
    assert a.token_ids == b.token_ids
    greedy = SamplingParams(max_tokens=10, temperature=0.0)
    g1 = asyncio.run(tiny_backend.generate([PROMPT], greedy))[0]
    g2 = asyncio.run(tiny_backend.generate([PROMPT, [3, 4, 5, 6, 7, 8, 9, 10]], greedy))[0]  # padded batch
    assert g1.token_ids == g2.token_ids
    assert max(abs(x - y) for x, y in zip(g1.logprobs, g2.logprobs)) < 1e-4


def test_concurrent_calls_are_merged_and_keep_their_order(tiny_backend):
    async def many():
        s = SamplingParams(max_tokens=6, temperature=0.0)
        return await asyncio.gather(*(tiny_backend.generate([PROMPT[: i + 1]], s) for i in range(5)))

    results = asyncio.run(many())
    for i, gens in enumerate(results):
        assert gens[0].prompt_ids == PROMPT[: i + 1]
        alone = tiny_backend.generate_ids([PROMPT[: i + 1]], SamplingParams(max_tokens=6, temperature=0.0))[0]
        assert gens[0].token_ids == alone.token_ids


def test_stop_strings_end_generation(tiny_backend):
    free = asyncio.run(tiny_backend.generate([PROMPT], SamplingParams(max_tokens=20, temperature=0.0)))[0]
    piece = tiny_backend.tokenizer.decode(free.token_ids[2:3])
    if not piece.strip():
        pytest.skip("the greedy continuation has no printable token to stop on")
    stopped = asyncio.run(tiny_backend.generate(
        [PROMPT], SamplingParams(max_tokens=20, temperature=0.0, stop=(piece,))))[0]
    assert stopped.finish_reason == "stop" and len(stopped.token_ids) <= 3


def test_sampling_params_validate():
    with pytest.raises(ConfigError, match="max_tokens"):
        SamplingParams(max_tokens=0)
    with pytest.raises(ConfigError, match="top_p"):
        SamplingParams(top_p=0)


def test_bad_prompts_are_clear_errors(tiny_backend):
    with pytest.raises(ConfigError, match="list of prompts"):
        asyncio.run(tiny_backend.generate("hello", SamplingParams()))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="token ids, a string"):
        asyncio.run(tiny_backend.generate([[1.5, 2]], SamplingParams()))  # type: ignore[list-item]


def test_make_backend_errors():
    with pytest.raises(ConfigError, match="does not exist"):
        make_backend("./no/such/model")
    with pytest.raises(ConfigError, match="model folder"):
        make_backend("")


def test_vllm_backend(tiny_model_dir):
    pytest.importorskip("vllm", reason="vLLM is not installed: it needs a CUDA machine (pip install 'rollgym[vllm]')")
    import torch

    if not torch.cuda.is_available():
        pytest.skip("vLLM needs a GPU; none is present")
    backend = make_backend(f"vllm:{tiny_model_dir}")
    gens = asyncio.run(backend.generate([PROMPT], SamplingParams(max_tokens=8, n=2, seed=0)))
    assert len(gens) == 2 and all(len(g.logprobs) == len(g.token_ids) for g in gens)


# -- HTTP against the real local server ------------------------------------------------------


def test_http_completions_with_token_ids_and_logprobs(tiny_backend, tiny_server):
    backend = OpenAIBackend(tiny_server.url)
    gens = asyncio.run(backend.generate([PROMPT, "12 + 7"], SamplingParams(max_tokens=8, seed=3, n=2)))
    assert len(gens) == 4 and gens[0].prompt_ids == PROMPT
    for g in gens:
        assert g.prompt_ids
        assert_logprobs_match(tiny_backend, g.prompt_ids, g)


def test_http_chat_renders_tools_and_returns_tokens(tiny_backend, tiny_server):
    backend = OpenAIBackend(tiny_server.url)
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Reach 24."}]
    gens = asyncio.run(backend.generate([messages], SamplingParams(max_tokens=8, seed=0)))
    g = gens[0]
    assert_logprobs_match(tiny_backend, g.prompt_ids, g)
    tools = [{"type": "function", "function": {"name": "calculator", "parameters": {"type": "object"}}}]
    response = httpx.post(tiny_server.url + "/chat/completions", json={
        "model": "tiny", "messages": messages, "tools": tools, "max_tokens": 4, "seed": 0}, timeout=60)
    body = response.json()
    assert "calculator" in tiny_backend.tokenizer.decode(body["prompt_token_ids"])
    assert body["usage"]["completion_tokens"] == len(body["choices"][0]["token_ids"])


@pytest.mark.parametrize(
    ("path", "payload", "status", "message"),
    [
        ("/completions", {"prompt": 12}, 400, "'prompt' must be"),
        ("/completions", {"prompt": "hi", "stream": True}, 400, "Streaming is not supported"),
        ("/completions", {"prompt": "hi", "max_tokens": 0}, 400, "max_tokens"),
        ("/chat/completions", {"messages": []}, 400, "'messages' must be"),
        ("/nope", {}, 404, "No route"),
    ],
)
def test_server_rejects_bad_requests_with_one_sentence(tiny_server, path, payload, status, message):
    response = httpx.post(tiny_server.url + path, json=payload, timeout=30)
    assert response.status_code == status
    assert message in response.json()["error"]["message"]


def test_server_rejects_invalid_json(tiny_server):
    response = httpx.post(tiny_server.url + "/completions", content=b"{not json", timeout=30)
    assert response.status_code == 400 and "not valid JSON" in response.json()["error"]["message"]


class _Flaky(BaseHTTPRequestHandler):
    """Fails the first ``failures`` requests with 503, then answers; or always answers garbage."""

    failures = 2
    calls = 0
    garbage = False

    def log_message(self, *args):
        return

    def do_POST(self):
        type(self).calls += 1
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if type(self).garbage:
            body, status = b"<html>oops</html>", 200
        elif type(self).calls <= type(self).failures:
            body, status = b'{"error": {"message": "busy"}}', 503
        else:
            body, status = json.dumps({"choices": [{"text": "ok", "token_ids": [1, 2],
                                                     "logprobs": {"token_logprobs": [-0.5, -0.1]},
                                                     "finish_reason": "stop"}]}).encode(), 200
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def flaky_server():
    _Flaky.calls, _Flaky.failures, _Flaky.garbage = 0, 2, False
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_http_retries_transient_failures(flaky_server):
    backend = OpenAIBackend(flaky_server, model="m", backoff_s=0.01)
    gen = asyncio.run(backend.generate([[1, 2, 3]], SamplingParams(max_tokens=2)))[0]
    assert (gen.text, gen.token_ids, gen.logprobs) == ("ok", [1, 2], [-0.5, -0.1])
    assert _Flaky.calls == 3


def test_http_gives_up_with_the_reason(flaky_server):
    _Flaky.failures = 100
    backend = OpenAIBackend(flaky_server, model="m", backoff_s=0.01, max_retries=2)
    with pytest.raises(BackendError, match=r"failed after 3 attempts .*HTTP 503"):
        asyncio.run(backend.generate([[1]], SamplingParams(max_tokens=2)))


def test_http_garbage_response_is_a_backend_error(flaky_server):
    _Flaky.garbage = True
    backend = OpenAIBackend(flaky_server, model="m", max_retries=0)
    with pytest.raises(BackendError, match="invalid JSON"):
        asyncio.run(backend.generate([[1]], SamplingParams(max_tokens=2)))


def test_http_unreachable_server_is_a_backend_error():
    backend = OpenAIBackend("http://127.0.0.1:9", model="m", max_retries=1, backoff_s=0.01, timeout_s=2)
    with pytest.raises(BackendError, match="failed after 2 attempts"):
        asyncio.run(backend.generate([[1]], SamplingParams(max_tokens=2)))


def test_native_tool_calls_become_hermes_text():
    backend = OpenAIBackend("http://127.0.0.1:1", model="m")
    gen = backend._from_chat({"message": {"content": "", "tool_calls": [
        {"id": "1", "type": "function", "function": {"name": "f", "arguments": '{"x": 2}'}}]},
        "finish_reason": "tool_calls"}, {}, 1)
    assert gen.text == '<tool_call>{"name": "f", "arguments": {"x": 2}}</tool_call>'


def test_a_hub_id_that_cannot_be_loaded_is_one_sentence(monkeypatch):
    """An uncached hub id offline (or a folder without a model) is a ConfigError naming what to pass, not an OSError."""
    pytest.importorskip("transformers")
    from rollgym.agents.backends.hf import TransformersBackend
    from rollgym.core.errors import ConfigError

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ConfigError, match=r"Cannot load model 'nobody/no-such-model'.*Pass a model folder"):
        TransformersBackend.from_pretrained("nobody/no-such-model")
