"""The web envs end to end with the system Chromium: reference solutions, no-ops, hacks, extras."""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import rollgym
from rollgym.envs.web.observation import PageView
from rollgym.envs.web.reference import reference_policy
from rollgym.envs.web.tasks import TEMPLATES, WebTaskSource

pytestmark = pytest.mark.slow


def task_of(name: str, index: int = 0) -> Any:
    return WebTaskSource((TEMPLATES[name].site,), "WebGym-v2", templates=(name,)).task(index)


def play_reference(env: Any, task: Any, stop_before_answer: bool = False) -> tuple[str, dict[str, Any], float]:
    obs, info = env.reset(options={"task": task})
    reward = 0.0
    for _ in range(40):
        action = reference_policy(obs, info)
        if stop_before_answer and action.startswith("answer("):
            return obs, info, reward
        obs, reward, terminated, truncated, info = env.step(action)
        assert not info.get("action_error"), (action, info["action_error"])
        if terminated or truncated:
            return obs, info, reward
    raise AssertionError("reference solution did not finish")


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_reference_solution_succeeds(web_env: Any, name: str) -> None:
    _, info, reward = play_reference(web_env, task_of(name, 1))
    assert reward == 1.0 and info["success"] and info["correct"], info["details"]
    assert all(info["details"]["criteria"].values())


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_answering_at_once_scores_zero(web_env: Any, name: str) -> None:
    web_env.reset(options={"task": task_of(name, 1)})
    _, reward, terminated, truncated, info = web_env.step('answer("done")')
    assert terminated and not truncated
    assert reward == 0.0 and not info["success"]


def test_running_out_of_steps_is_graded_and_scores_zero(web_runtime: Any) -> None:
    env = gym.make("WebShop-v2", max_steps=2).unwrapped
    try:
        env.reset(options={"task": task_of("shop_purchase")})
        assert env.step('scroll("down")')[2:4] == (False, False)
        _, reward, terminated, truncated, info = env.step("go_back()")
        assert truncated and not terminated and reward == 0.0 and info["parsed"] is None
    finally:
        env.close()


@pytest.mark.parametrize("env_id", ["WebShop-v2", "WebForum-v2", "WebTravel-v2", "WebGym-v2"])
def test_check_env_passes(web_runtime: Any, env_id: str) -> None:
    env = gym.make(env_id)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(env.unwrapped, skip_render_check=True)
    finally:
        env.close()


def test_reset_with_a_seed_is_reproducible(web_env: Any) -> None:
    first = web_env.reset(seed=11)
    second = web_env.reset(seed=11)
    assert first[0] == second[0] and first[1]["task_id"] == second[1]["task_id"]
    assert "URL: /" in first[0] and '[1] link "' in first[0]


def test_javascript_urls_are_refused(web_env: Any) -> None:
    web_env.reset(options={"task": task_of("shop_purchase")})
    obs, reward, terminated, _, info = web_env.step("goto(\"javascript:document.body.innerHTML='Order placed'\")")
    assert not terminated and reward == 0.0
    assert "goto only accepts a path" in info["action_error"] and "Last action error" in obs
    assert info["url"] == "/"
    assert web_env.step('answer("done")')[1] == 0.0


def test_leaving_the_site_is_blocked(web_env: Any) -> None:
    web_env.reset(options={"task": task_of("shop_extreme_price")})
    for target in ("http://example.com/", "http://127.0.0.2:1/"):
        web_env.step('goto("/search")')
        episode = web_env._episode
        web_env._runtime().call(
            episode.page.evaluate(
                "(href) => { const a = document.createElement('a'); a.href = href; a.textContent = 'away';"
                " a.setAttribute('data-rg-id', '999'); document.body.prepend(a); }",
                target,
            )
        )
        _, reward, _, _, info = web_env.step("click(999)")
        assert info["action_error"] == "That navigation would leave the site and was blocked."
        assert info["url"] == "/search" and reward == 0.0
    assert web_env.step('goto("http://example.com/")')[4]["action_error"].startswith("goto only accepts")


def test_faking_a_confirmation_in_the_page_scores_zero(web_env: Any) -> None:
    web_env.reset(options={"task": task_of("shop_purchase")})
    episode = web_env._episode
    web_env._runtime().call(
        episode.page.evaluate("() => { document.body.innerHTML = '<h1>Thank you! Order #1200 has been placed.</h1>'; }")
    )
    obs, _, _, _, _ = web_env.step('scroll("down")')
    assert "Order #1200 has been placed" in obs
    _, reward, terminated, _, info = web_env.step('answer("done")')
    weighted = [v for k, v in info["details"]["criteria"].items() if info["details"]["weights"][k] > 0]
    assert terminated and reward == 0.0 and weighted and not any(weighted)  # the zero-weight site gate holds


def test_grader_reads_the_server_not_the_page(web_env: Any) -> None:
    obs, info, _ = play_reference(web_env, task_of("shop_cancel_order"), stop_before_answer=True)
    assert "has been cancelled" in obs
    episode = web_env._episode
    web_env._runtime().call(
        episode.page.evaluate("() => { document.body.innerHTML = '<h1>Cancellation failed</h1>'; }")
    )
    _, reward, _, _, info = web_env.step('answer("done")')
    assert reward == 1.0 and info["success"]


def test_posted_script_does_not_run(web_env: Any) -> None:
    obs, info = web_env.reset(options={"task": task_of("forum_reply")})
    params = info["task_meta"]["params"]
    for action in ['goto("/login")']:
        obs = web_env.step(action)[0]
    view = PageView.parse(obs)
    web_env.step(f'fill({view.find("textbox", "Username").id}, "{params["username"]}")')
    web_env.step(f'fill({view.find("textbox", "Password").id}, "{params["password"]}")')
    web_env.step(f"click({view.find('button', 'Sign in').id})")
    obs = web_env.step('goto("/t/2")')[0]
    payload = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"
    view = PageView.parse(obs)
    web_env.step(f"fill({view.find('textbox', 'Your reply').id}, {payload!r})")
    obs, _, _, _, info = web_env.step(f"click({view.find('button', 'Post reply').id})")
    assert info["action_error"] is None and "Your reply was posted" in obs
    pages = next((line for line in PageView.parse(obs).lines if line.startswith("Page 1 of")), "Page 1 of 1")
    obs = web_env.step(f'goto("/t/2?page={pages.split()[3]}")')[0]
    assert "<script>document.title='pwned'</script>" in obs  # shown as text
    assert PageView.parse(obs).title != "pwned"
    runtime = web_env._runtime()
    assert (
        runtime.call(web_env._episode.page.evaluate("() => document.querySelectorAll('main script, main img').length"))
        == 0
    )
    assert "&lt;script&gt;" in web_env.page_html()


def test_bad_actions_become_error_observations(web_env: Any) -> None:
    obs, _ = web_env.reset(options={"task": task_of("travel_cheapest_flight")})
    link = PageView.parse(obs).find("link", "Hotels")
    for action, expected in [
        ("hello", "No action found"),
        ("click(4242)", "no element [4242]"),
        (f'fill({link.id}, "x")', "fill failed"),
        ('select(1, "x")', "select only works"),
        ('goto("/nowhere")', None),
    ]:
        obs, reward, terminated, _, info = web_env.step(action)
        assert reward == 0.0 and not terminated
        if expected:
            assert expected in (info["action_error"] or ""), (action, info["action_error"])
    assert "Page not found" in obs


def test_typing_and_pressing_enter_submits_a_form(web_env: Any) -> None:
    obs, _ = web_env.reset(options={"task": task_of("shop_extreme_price")})
    box = PageView.parse(obs).find("textbox", "Search the catalogue")
    web_env.step(f'fill({box.id}, "kettle")')
    obs, _, _, _, info = web_env.step('press("Enter")')
    assert info["action_error"] is None and info["url"] == "/search?q=kettle"
    assert "Kettle" in obs and "products found" in obs


def test_screenshot_html_and_rgb_render(web_runtime: Any) -> None:
    env = gym.make("WebTravel-v2", render_mode="rgb_array")
    try:
        env.reset(seed=0)
        frame = env.render()
        assert isinstance(frame, np.ndarray) and frame.dtype == np.uint8 and frame.shape == (860, 1280, 3)
        assert frame.std() > 5  # a styled page, not a blank one
        assert "<html" in env.unwrapped.page_html() and "Wayfarer Travel" in env.unwrapped.page_html()
    finally:
        env.close()


def test_oracle_agent_and_make_work_after_import() -> None:
    assert "WebGym-v2" in gym.registry and rollgym.env_info("WebShop-v2").oracle
