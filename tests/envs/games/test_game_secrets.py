"""Games keep their secrets: no observation or info shows the other seat's card or values, or a bot's seed.

The attack (issue 41): a policy that reads ``info["task_meta"]`` (any serve-env client can) saw the opponent's
Kuhn card, the other negotiator's item values and the bots' seeds on every reset. ``-v1`` tasks keep those in
``Task.answer``; every id (``-v0`` too, and the board games' opponent seed) leaves them out of ``info``.
"""

from __future__ import annotations

import importlib
import json
from typing import Any

import numpy as np
import pytest

import rollgym
from rollgym.envs.games.kuhn import CARDS, KuhnPoker
from rollgym.envs.games.negotiation import Negotiation

SEATED = ["KuhnPoker-v0", "KuhnPoker-v1", "Negotiation-v0", "Negotiation-v1"]
BOARD = ["ConnectFour-v0", "Hex-v0"]


def _read_the_opponents_card(info: dict[str, Any]) -> str | None:
    """The attack: the opponent's Kuhn card, if info gives it away."""
    cards = (info.get("task_meta") or {}).get("cards")
    if not cards:
        return None
    return CARDS[cards[1 - int(info["agent_seat"])]]


def _policy(spec: str | None) -> Any:
    assert spec is not None
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def _walk(value: Any, path: str = "") -> list[tuple[str, Any]]:
    out = [(path, value)]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _walk(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _walk(v, f"{path}.{i}")
    return out


def _play(env_id: str, episodes: int) -> list[tuple[dict[str, Any], dict[str, Any], bool]]:
    """``(deal, info, final)`` of every step of oracle episodes (random play on odd episodes)."""
    env = rollgym.make(env_id)
    info_of = rollgym.env_info(env_id)
    oracle, random_policy = _policy(info_of.oracle), _policy(info_of.random_policy)
    rng = np.random.default_rng(0)
    seen = []
    try:
        for e in range(episodes):
            obs, info = env.reset(seed=e)
            game = env.unwrapped.game
            deal = game.deal_of(env.unwrapped.task)
            seen.append((deal, info, False))
            done = False
            while not done:
                action = oracle(obs, info) if e % 2 == 0 else random_policy(obs, info, rng)
                obs, _, terminated, truncated, info = env.step(action)
                done = terminated or truncated
                seen.append((deal, info, done))
    finally:
        env.close()
    return seen


@pytest.mark.parametrize("env_id", SEATED)
def test_no_seated_game_info_shows_the_other_seats_secrets(env_id: str) -> None:
    leaks = 0
    for deal, info, final in _play(env_id, 40):
        if final:
            continue
        text = json.dumps(info)
        assert "bot_seed" not in text and str(deal["bot_seed"]) not in text
        assert not {"cards", "values"} & set(info["task_meta"])
        seat = int(info["agent_seat"])
        if "cards" in deal:
            leaks += _read_the_opponents_card(info) is not None
            assert info["card"] == CARDS[deal["cards"][seat]]
            assert not [p for p, v in _walk(info) if p.endswith("cards")]
        else:
            other = deal["values"][1 - seat]
            assert info["values"] == deal["values"][seat] != other
            assert [v for p, v in _walk(info) if p.rsplit(".", 1)[-1] == "values"] == [deal["values"][seat]]
    assert leaks == 0


@pytest.mark.parametrize("env_id", BOARD)
def test_no_board_game_info_shows_the_opponents_seed(env_id: str) -> None:
    env = rollgym.make(env_id, opponent="random")
    try:
        for seed in range(5):
            _, info = env.reset(seed=seed)
            secret = env.unwrapped.task.meta["opponent_seed"]
            assert "opponent_seed" not in info["task_meta"] and str(secret) not in json.dumps(info)
            _, _, _, _, info = env.step(f"Final Answer: {info['legal_moves'][0]}")
            assert "opponent_seed" not in info["task_meta"] and str(secret) not in json.dumps(info)
    finally:
        env.close()


@pytest.mark.parametrize(("game", "old", "new", "private"), [
    (KuhnPoker, "KuhnPoker-v0", "KuhnPoker-v1", {"cards", "bot_seed"}),
    (Negotiation, "Negotiation-v0", "Negotiation-v1", {"values", "bot_seed"}),
])
def test_v1_tasks_keep_the_deal_in_the_answer_and_deal_as_v0(game, old, new, private) -> None:
    for index in range(10):
        v1 = rollgym.make(new).unwrapped.source.task(index, "train")
        v0 = rollgym.make(old).unwrapped.source.task(index, "train")
        assert not private & set(v1.meta) and set(v1.answer) == private
        assert v0.answer is None and private <= set(v0.meta)  # v0's tasks are unchanged
        assert game.deal_of(v1) == game.deal_of(v0)


def test_v1_oracle_still_beats_random_play() -> None:
    def mean(env_id: str, policy: str) -> float:
        env = rollgym.make(env_id)
        info_of = rollgym.env_info(env_id)
        act = _policy(info_of.oracle if policy == "oracle" else info_of.random_policy)
        rng = np.random.default_rng(1)
        total = 0.0
        for e in range(60):
            obs, info = env.reset(seed=e)
            done = False
            while not done:
                action = act(obs, info) if policy == "oracle" else act(obs, info, rng)
                obs, reward, terminated, truncated, info = env.step(action)
                done = terminated or truncated
            total += reward
        env.close()
        return total / 60

    for env_id in ("KuhnPoker-v1", "Negotiation-v1"):
        assert mean(env_id, "oracle") > mean(env_id, "random")
