"""Screenshot observations and screen actions in real Chromium: spaces, check_env, and an episode won by pixels.

The pixel episode is played the way a vision-language agent would: from the
screenshot's element boxes (``env.element_boxes()``, what set-of-marks overlays draw)
the test computes where each link, box and button is and acts only with
``click_at(x, y)``, ``type("...")`` and ``press("Enter")``.
"""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from rollgym.envs.web.gen.tasks import GenTaskSource, context

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("env_id", "mode"), [("WebShop-v2", "both"), ("WebGen-v0", "text"),
                                             ("WebGen-v0", "screenshot")])
def test_check_env_passes_in_every_obs_mode(web_runtime: Any, env_id: str, mode: str) -> None:
    """Every mode once (``both`` holds the screenshot's observation space and the text of ``text``; WebShop-v2
    in text mode is checked in test_web_env.py; bench/sweep_websites.py --check-env checks every site)."""
    env = gym.make(env_id, obs_mode=mode)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(env.unwrapped, skip_render_check=True)
        if mode != "text":
            assert isinstance(env.observation_space, gym.spaces.Dict)
            assert env.observation_space["screenshot"].shape == (860, 1280, 3)
    finally:
        env.close()


def center(box: dict[str, Any]) -> str:
    return f"{int(box['x'] + box['width'] / 2)}, {int(box['y'] + box['height'] / 2)}"


def aim(env: Any, text: str, tag: str | None = None) -> str:
    """``click_at`` the centre of the first visible element whose label or text is ``text``."""
    for box in env.element_boxes():
        if box["text"] == text and (tag is None or box["tag"] == tag) and 0 <= box["y"] < 840:
            return f"click_at({center(box)})"
    raise AssertionError(f"no element {text!r} on the screen: {[b['text'] for b in env.element_boxes()][:40]}")


def test_a_screenshot_episode_is_won_with_coordinate_clicks(web_runtime: Any) -> None:
    task = GenTaskSource("WebGen-v0", sites=("gen-shop-00",), templates=("shop.add_favorite",)).task(0)
    site = context(task.meta["site"]).site
    p = task.meta["params"]
    env = gym.make("WebGen-v0", obs_mode="screenshot").unwrapped
    try:
        obs, info = env.reset(options={"task": task})
        assert set(obs) == {"text", "screenshot"} and obs["screenshot"].dtype == np.uint8
        assert "[1] link" not in obs["text"] and "screenshot" in obs["text"]  # the page is in the image only
        assert any(t["name"] == "click_at" for t in (f["function"] for f in info["tools"]))
        frames = [obs["screenshot"]]
        actions = [
            lambda: aim(env, site.label("sign_in"), "a"), lambda: aim(env, site.label("username"), "input"),
            lambda: f"type({p['username']!r})", lambda: aim(env, site.label("password"), "input"),
            lambda: f"type({p['password']!r})", lambda: aim(env, site.label("sign_in_button"), "button"),
            lambda: aim(env, site.label("search_field"), "input"), lambda: f"type({p['item']!r})",
            lambda: 'press("Enter")', lambda: aim(env, p["item"], "a"),
            lambda: aim(env, site.kind.favorites[1], "button"),
        ]
        for make_action in actions:
            obs, reward, terminated, _, info = env.step(make_action())
            assert info["action_error"] is None and not terminated, (info["action_error"], info["url"])
            frames.append(obs["screenshot"])
        assert info["url"].startswith(site.path("item", task.answer["item_id"]))
        assert all(f.shape == (860, 1280, 3) for f in frames) and not np.array_equal(frames[0], frames[-1])
        obs, reward, terminated, _, info = env.step('answer("done")')
        assert terminated and reward == 1.0 and info["correct"], info["details"]
    finally:
        env.close()


def test_screen_actions_report_bad_points_and_do_not_exist_in_text_mode(web_runtime: Any) -> None:
    env = gym.make("WebShop-v2", obs_mode="both").unwrapped
    try:
        obs, _ = env.reset(seed=1)
        assert "[1] link" in obs["text"]  # both: the page text beside the screenshot
        _, _, _, _, info = env.step("click_at(5000, 10)")
        assert "outside the 1280x860 screenshot" in info["action_error"]
        _, _, _, _, info = env.step('type("kettle")')
        assert "Nothing has the focus" in info["action_error"]
        _, _, _, _, info = env.step('scroll_at(640, 400, "down")')
        assert info["action_error"] is None
    finally:
        env.close()
    text_env = gym.make("WebShop-v2").unwrapped
    try:
        text_env.reset(seed=1)
        _, _, _, _, info = text_env.step("click_at(100, 100)")
        assert info["action_error"].startswith("No action found")  # text mode parses as it always did
    finally:
        text_env.close()
