"""ChatAgent and screenshots: image content parts to backends that take images, text to the others.

No vision-language model runs on this machine, so the image-taking backend here is the
real OpenAI-compatible HTTP backend talking to a small HTTP server on 127.0.0.1 that
records each request and answers with a fixed action (a stand-in for a vLLM server of a
VLM). The text-only side uses the real tiny transformers model.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from rollgym.agents.backends.base import SamplingParams
from rollgym.agents.chat import OMITTED_IMAGE, ChatAgent
from rollgym.core.errors import ConfigError
from tests.conftest import PostServer, require_module


class RecordingChatServer(PostServer):
    """``/v1/chat/completions`` on 127.0.0.1 that keeps every request body and answers ``click_at(10, 20)``."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        super().__init__(self._answer)

    def _answer(self, body: dict[str, Any]) -> tuple[str, bytes]:
        self.bodies.append(body)
        return "application/json", json.dumps({
            "choices": [{"message": {"role": "assistant", "content": "click_at(10, 20)"}, "finish_reason": "stop"}],
        }).encode()


@pytest.fixture
def vlm_server() -> Iterator[RecordingChatServer]:
    require_module("httpx")
    server = RecordingChatServer()
    yield server
    server.close()


def screen(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (60, 80, 3), dtype=np.uint8)


def decode(url: str) -> np.ndarray:
    from PIL import Image

    assert url.startswith("data:image/png;base64,")
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB"))


def test_screenshots_go_to_an_image_backend_as_image_url_parts(vlm_server: RecordingChatServer) -> None:
    from rollgym.agents.backends.openai_http import OpenAIBackend

    agent = ChatAgent(OpenAIBackend(vlm_server.url, model="vlm"), SamplingParams(max_tokens=16))
    agent.reset(seed=1)
    info = {"system_prompt": "Operate the browser."}
    assert agent.act({"text": "Task: find it\nURL: /", "screenshot": screen(1)}, info) == "click_at(10, 20)"
    agent.act({"text": "URL: /x", "screenshot": screen(2)}, info)
    first, second = vlm_server.bodies
    content = first["messages"][-1]["content"]
    assert [p["type"] for p in content] == ["text", "image_url"] and content[0]["text"].startswith("Task: find it")
    assert np.array_equal(decode(content[1]["image_url"]["url"]), screen(1))
    # the newest screenshot is sent whole, the older one is replaced by a note (max_images=1)
    earlier, latest = second["messages"][1]["content"], second["messages"][-1]["content"]
    assert {"type": "text", "text": OMITTED_IMAGE} in earlier
    assert np.array_equal(decode(latest[1]["image_url"]["url"]), screen(2))
    assert not agent.token_record().token_exact  # image turns go as messages, not tokens


def test_a_text_only_server_gets_the_text(vlm_server: RecordingChatServer) -> None:
    from rollgym.agents.backends.openai_http import OpenAIBackend

    agent = ChatAgent(OpenAIBackend(vlm_server.url, model="text", accepts_images=False))
    agent.reset()
    agent.act({"text": "URL: /", "screenshot": screen(3)}, {})
    assert vlm_server.bodies[0]["messages"][-1]["content"] == "URL: /"
    with pytest.raises(ConfigError, match="does not accept images"):
        ChatAgent(OpenAIBackend(vlm_server.url, accepts_images=False), images="always")
    never = ChatAgent(OpenAIBackend(vlm_server.url, model="vlm"), images="never")
    never.reset()
    never.act({"text": "URL: /y", "screenshot": screen(4)}, {})
    assert vlm_server.bodies[-1]["messages"][-1]["content"] == "URL: /y"


def test_the_tiny_model_takes_no_images_and_stays_token_exact(tiny_backend: Any) -> None:
    assert tiny_backend.accepts_images is False
    agent = ChatAgent(tiny_backend, SamplingParams(max_tokens=8))
    agent.reset(seed=3)
    for i in range(2):
        agent.act({"text": f"URL: /{i}", "screenshot": screen(i)}, {"system_prompt": "Act."})
    assert all(isinstance(m["content"], str) for m in agent.messages)
    record = agent.token_record()
    assert record.token_exact and len(record.completion_ids) == len(record.loss_mask)
    with pytest.raises(ConfigError, match="does not accept images"):
        ChatAgent(tiny_backend, images="always")
