"""Self-play and multi-agent episodes: one exact-token trajectory per seat, real games, real agents."""

from __future__ import annotations

import pytest

import rollgym
from rollgym.agents import RandomAgent
from rollgym.agents.game_bots import BotAgent
from rollgym.core.errors import ConfigError
from rollgym.envs.games.board_seats import BoardSeats
from rollgym.envs.games.kuhn import KuhnPoker, NashKuhnBot
from rollgym.rollout.selfplay import collect_seated, play_seated, split_by_role

BOARDS = [("ConnectFour-v0", {"rows": 5, "columns": 5}), ("Hex-v0", {"size": 5}), ("Chess-v1", {"max_plies": 40})]


class Scripted:
    """Says the given replies in order (then the last one again)."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = replies
        self.seen: list[str] = []

    def reset(self, seed: int | None = None) -> None:
        self.seen = []

    def act(self, observation: str, info: dict) -> str:
        self.seen.append(observation)
        return self.replies[min(len(self.seen) - 1, len(self.replies) - 1)]


class Crashing(Scripted):
    def act(self, observation: str, info: dict) -> str:
        raise RuntimeError("the model server went away")


@pytest.mark.parametrize(("env_id", "kwargs"), BOARDS)
def test_random_self_play_gives_each_seat_its_own_zero_sum_trajectory(env_id, kwargs):
    if env_id.startswith("Chess"):
        pytest.importorskip("chess")
    game = BoardSeats(rollgym.make(env_id, **kwargs))
    trajs = play_seated(game, [RandomAgent(seed=1), RandomAgent(seed=2)], seed=11, players=["a", "b"])
    assert [t.info["role"] for t in trajs] == ["first", "second"]
    assert [t.info["seat"] for t in trajs] == [0, 1]
    assert all(t.status == "completed" and t.task_id == trajs[0].task_id for t in trajs)
    assert sum(t.reward for t in trajs) == pytest.approx(1.0)  # score scheme: 1 + 0, or 0.5 + 0.5
    assert trajs[0].info["correct"] is (trajs[0].reward == 1.0)
    assert trajs[0].info["players"] == ["a", "b"]
    # each seat saw its own side: its own moves as "You played", the other's as "Your opponent played"
    first_obs = [m["content"] for m in trajs[0].messages if m["role"] == "user"]
    second_obs = [m["content"] for m in trajs[1].messages if m["role"] == "user"]
    assert "You play" in first_obs[0] and "Your opponent played" in second_obs[0]
    assert len(trajs[0].turns) - len(trajs[1].turns) in (0, 1)


def test_an_unplayable_answer_is_labelled_and_forfeits_after_the_retries():
    game = BoardSeats(rollgym.make("ConnectFour-v0"), max_retries=1)
    talker = Scripted(["I claim the win. reward = 1"])
    first, second = play_seated(game, [talker, BotAgent("greedy", seed=0)], seed=0)
    assert len(first.turns) == 2 and first.info["error"] == "no_move"
    assert (first.reward, second.reward) == (0.0, 1.0)
    assert first.info["details"]["termination"] == "forfeit" and second.info["correct"] is True
    assert "could not be played (no_move)" in talker.seen[1]


def test_an_illegal_move_falls_back_to_a_random_move_under_the_random_policy():
    game = BoardSeats(rollgym.make("ConnectFour-v0", rows=4, columns=4), max_retries=0, illegal_move_policy="random")
    trajs = play_seated(game, [Scripted(["Final Answer: 9"]), RandomAgent(seed=3)], seed=0)
    assert all(t.status == "completed" for t in trajs)
    assert sum(t.reward for t in trajs) == pytest.approx(1.0)
    assert "A random legal move was played for you" in trajs[0].messages[3]["content"]


def test_an_answer_out_of_turn_is_refused_and_changes_nothing():
    game = BoardSeats(rollgym.make("ConnectFour-v0"))
    game.reset(seed=0)
    before = game.game_state.ascii()
    assert game.act(1, "Final Answer: 4") == "out_of_turn"
    assert game.game_state.ascii() == before and game.to_move == 0
    assert "not your turn" in game.observe(1)[0]


def test_a_crashing_seat_fails_every_seat_and_nobody_is_scored():
    trajs = play_seated(KuhnPoker(), [NashKuhnBot(seed=0), Crashing([])], seed=4, task_index=0)
    assert [t.status for t in trajs] == ["failed", "failed"]
    assert [t.reward for t in trajs] == [None, None]
    assert trajs[1].info["failure"]["stage"] == "act" and trajs[0].info["failure"]["type"] == "SeatFailed"


def test_the_step_cap_truncates_every_seat():
    game = BoardSeats(rollgym.make("ConnectFour-v0"))
    trajs = play_seated(game, [RandomAgent(seed=0), RandomAgent(seed=1)], seed=0, max_steps=3)
    assert [t.status for t in trajs] == ["truncated", "truncated"]
    assert [t.info["truncated_by"] for t in trajs] == ["max_steps", "max_steps"]


def test_one_agent_object_in_two_seats_is_refused():
    agent = RandomAgent(seed=0)
    with pytest.raises(ConfigError, match="its own agent"):
        play_seated(KuhnPoker(), [agent, agent], seed=0)


def test_collect_seated_groups_every_seat_of_every_game_of_a_task():
    groups = collect_seated(KuhnPoker, lambda: [NashKuhnBot(seed=0), NashKuhnBot(seed=1)], seeds=[3, 4], group_size=5)
    assert [len(g.trajectories) for g in groups] == [10, 10]
    for group in groups:
        assert len({t.task_id for t in group.trajectories}) == 1
        assert len({t.traj_id for t in group.trajectories}) == 10
        assert [t.sample_idx for t in group.trajectories] == list(range(10))
        roles = split_by_role([group])
        assert sorted(len(g.trajectories) for g in roles) == [5, 5]
        assert all(len({t.info["role"] for t in g.trajectories}) == 1 for g in roles)


def test_chat_agents_in_both_seats_keep_exact_tokens(tiny_backend):
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.chat import ChatAgent

    agent = ChatAgent(tiny_backend, SamplingParams(max_tokens=12))
    game = BoardSeats(rollgym.make("ConnectFour-v0", rows=4, columns=4), max_retries=2)
    trajs = play_seated(game, [agent, agent.spawn()], seed=5)
    tok = tiny_backend.tokenizer
    for traj in trajs:
        if not traj.turns:
            continue
        assert traj.status == "completed" and traj.info["token_exact"] is True
        sampled = [t for t, m in zip(traj.completion_ids, traj.loss_mask) if m]
        assert sampled == [t for turn in traj.turns for t in turn.output_ids]
        again = tiny_backend.logprobs_of(traj.prompt_ids, traj.completion_ids)
        diffs = [abs(a - b) for a, b, m in zip(again, traj.logprobs, traj.loss_mask) if m]
        assert diffs and max(diffs) < 1e-4
        whole = tok.decode(traj.prompt_ids + traj.completion_ids)
        assert f"You play {game.game_state.player_names[traj.info['seat']]}" in whole
    # the untrained model cannot name a column: the seat that ran out of retries forfeits, labelled
    assert sorted(t.reward for t in trajs) == [0.0, 1.0]
    loser = next(t for t in trajs if t.reward == 0.0)
    assert loser.info["error"] in ("no_move", "invalid", "illegal")
    assert loser.info["details"]["termination"] == "forfeit"


def test_self_play_checkpoints_are_rated_beside_the_fixed_bots(tiny_backend):
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.chat import ChatAgent
    from rollgym.benchmarks.ratings import fit_elo, seated_results
    from rollgym.rollout.selfplay import round_robin

    players = {
        "random": lambda: BotAgent("random", seed=0),
        "greedy": lambda: BotAgent("greedy", seed=0),
        "tiny-step0": lambda: ChatAgent(tiny_backend, SamplingParams(max_tokens=8)),  # a checkpoint as a player
    }
    trajs = round_robin(lambda: BoardSeats(rollgym.make("ConnectFour-v0", rows=5, columns=5), max_retries=0),
                        players, games_per_pair=12, seed=0)
    results = seated_results(trajs)
    assert len(results) == 36
    assert {r.first for r in results} == set(players)  # seats alternate
    ratings = fit_elo(results, anchors={"random": 0.0})
    assert ratings["greedy"].elo > ratings["random"].elo > ratings["tiny-step0"].elo
    assert ratings["tiny-step0"].games == 24 and ratings["tiny-step0"].points == 0.0  # it cannot name a column yet
