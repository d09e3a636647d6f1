"""Test helpers shared by the hand-written and the generated sites' tests: a browser-less HTTP client of one
episode on the real site server, and the reference solution played in Chromium up to its answer."""

from __future__ import annotations

import http.client
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode, urlsplit

from rollgym.core.task import Task
from rollgym.envs.web.actions import parse_action
from rollgym.envs.web.server import EPISODE_COOKIE


class Client:
    """Real HTTP requests for one episode, a connection each: its cookies (set and cleared as a browser would)."""

    def __init__(self, server: Any, token: str, login_path: str = "/login") -> None:
        url = urlsplit(server.base_url)
        self.host, self.port = url.hostname or "127.0.0.1", url.port or 80
        self.cookies = {EPISODE_COOKIE: token}
        self.login_path = login_path

    def request(self, method: str, path: str, form: dict[str, Any] | None = None) -> tuple[int, dict[str, str], str]:
        """Status, headers and body of one request (redirects not followed)."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        body = urlencode(form) if form is not None else None
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        if body is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            text = response.read().decode()
            for header in response.headers.get_all("Set-Cookie") or []:
                name, _, rest = header.partition("=")
                value = rest.split(";")[0]
                if "Max-Age=0" in header or not value:
                    self.cookies.pop(name, None)
                else:
                    self.cookies[name] = value
            return response.status, dict(response.getheaders()), text
        finally:
            conn.close()

    def send(self, method: str, path: str, form: dict[str, Any] | None = None) -> tuple[int, str]:
        """Status and body of one request."""
        status, _, text = self.request(method, path, form)
        return status, text

    def post(self, path: str, form: dict[str, Any] | None = None) -> None:
        """A write, which must answer with a redirect."""
        status, text = self.send("POST", path, form or {})
        assert status == 303, f"POST {path} {form} answered {status}, not a redirect after a write: {text[-300:]}"

    def sign_in(self, username: str) -> None:
        """Sign in as ``username`` (the sites' passwords are the username plus ``123``)."""
        self.cookies.pop("session", None)
        self.post(self.login_path, {"username": username, "password": username + "123", "next": "/"})
        assert "session" in self.cookies


def play_until_answer(runtime: Any, task: Task, policy: Callable[[Any, dict[str, Any]], str]) -> tuple[Any, str]:
    """Run ``policy`` (a reference solution) in Chromium up to its answer; returns the episode and the answer."""
    from rollgym.envs.web.episode import WebEpisode

    episode = WebEpisode(runtime, task, max_steps=60)
    observation, info = runtime.call(episode.start(), timeout=120)
    info = {**info, "task_meta": dict(task.meta), "task_id": task.id}
    for _ in range(60):
        action = policy(observation, info)
        parsed = parse_action(action)
        if parsed.verb == "answer":
            return episode, parsed.args[0]
        observation, _, _, _, step_info = runtime.call(episode.step(action), timeout=120)
        assert not step_info.get("action_error"), (action, step_info["action_error"])
        info = {**info, **step_info}
    raise AssertionError(f"the reference solution of {task.id} did not reach its answer")
