"""Self-play and multi-agent episodes: one trajectory per seat, grouped for role-conditioned advantages.

:func:`play_seated` plays one game of a :class:`~rollgym.envs.games.seats.SeatedGame`
with one agent per seat (the same policy in every seat for self-play, or
different ones) and returns one :class:`Trajectory` per seat. From a seat's point
of view the other seats are part of the environment: its trajectory holds its own
prompt and completion tokens (the other seats' moves arrive as env tokens in its
observations), its own reward, and ``info["role"]`` and ``info["seat"]``.

:func:`collect_seated` plays ``group_size`` games per task and puts every seat's
trajectory of those games in one :class:`RolloutGroup`; ``info["role"]`` tells
the trainer which members share a role (:func:`rollgym.train.advantages.role_advantages`,
SPIRAL's role-conditioned advantages, or per-role GRPO with :func:`split_by_role`).
Its seeds and ids are the collection engine's :class:`~rollgym.rollout.layout.SeatLayout`; the games
play in its own loop, not as engine jobs (a game is a caller-built ``SeatedGame`` with one caller-owned
agent per seat and one trajectory per seat: docs/architecture.md, "Collection modes beside the engine").

Every seat needs its own agent object, because an agent keeps its episode's
conversation: for self-play with one model, pass ``[agent, agent.spawn()]``
(a :class:`~rollgym.agents.chat.ChatAgent` spawns a fresh agent on the same backend).

Failures: an agent that raises fails its seat (stage ``act``) and ends the game;
every seat's trajectory is then ``failed`` with ``reward=None`` (the game has no
result, so it is never scored). More than ``max_steps`` actions in one game
truncate every seat (``info["truncated_by"] = "max_steps"``, reward 0).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from rollgym.core.agent import Agent
from rollgym.core.errors import ConfigError
from rollgym.rollout.episode import DEFAULT_MAX_STEPS, EpisodeLimits, EpisodeRecorder, ReportedFailure
from rollgym.rollout.layout import SeatLayout, seat_seed
from rollgym.rollout.types import RolloutGroup, Trajectory

__all__ = ["collect_seated", "play_seated", "round_robin", "seat_seed", "split_by_role"]


def play_seated(
    game: Any,
    agents: Sequence[Agent],
    *,
    seed: int | None,
    task_index: int | None = None,
    split: str = "train",
    group_id: str = "",
    episode: int = 0,
    traj_prefix: str = "",
    max_steps: int = DEFAULT_MAX_STEPS,
    agent_seeds: Sequence[int | None] | None = None,
    players: Sequence[str] | None = None,
) -> list[Trajectory]:
    """Play one game with ``agents[i]`` in seat ``i``; return one trajectory per seat, in seat order.

    ``max_steps`` caps the actions of all seats together. ``players`` names the agents
    (for ratings; default ``"seat<i>"``); they go to every trajectory's ``info["players"]``.

    Example:
        >>> import rollgym
        >>> from rollgym.agents import RandomAgent
        >>> from rollgym.envs.games.board_seats import BoardSeats
        >>> game = BoardSeats(rollgym.make("ConnectFour-v0"))
        >>> trajs = play_seated(game, [RandomAgent(seed=0), RandomAgent(seed=1)], seed=3)
        >>> [t.info["role"] for t in trajs], sum(t.reward for t in trajs)
        (['first', 'second'], 1.0)
    """
    n = int(game.num_seats)
    if len(agents) != n:
        raise ConfigError(f"{type(game).__name__} has {n} seats; pass {n} agents, got {len(agents)}.")
    if len({id(a) for a in agents}) != n:
        raise ConfigError("Every seat needs its own agent object (an agent keeps its episode's conversation); "
                          "for self-play pass [agent, agent.spawn()] or two agents on one backend.")
    names = list(players) if players is not None else [f"seat{i}" for i in range(n)]
    if len(names) != n:
        raise ConfigError(f"players must name {n} seats, got {len(names)}.")
    eps = [EpisodeRecorder(agent, EpisodeLimits(max_steps=max(1, max_steps))) for agent in agents]
    started = [False] * n
    seeds = list(agent_seeds) if agent_seeds is not None else [seat_seed(seed, episode, s) for s in range(n)]
    failed_seat: int | None = None
    truncated = False
    clock = time.perf_counter()
    try:
        game.reset(seed, split=split, task_index=task_index)
    except Exception as exc:
        for ep in eps:
            ep.fail("reset", exc)
        failed_seat = -1
    for ep in eps:
        ep.env_s += time.perf_counter() - clock
    actions = 0
    while failed_seat is None and not game.done:
        if actions >= max_steps:
            truncated = True
            break
        seat = int(game.to_move)
        ep, agent = eps[seat], agents[seat]
        clock = time.perf_counter()
        observation, info = game.observe(seat)
        if started[seat]:
            ep.stepped((observation, 0.0, False, False, info))
        else:
            ep.begin(game, observation, info)
            started[seat] = True
            try:
                agent.reset(seed=seeds[seat])
            except Exception as exc:
                ep.fail("agent_reset", exc)
                failed_seat = seat
                break
        ep.env_s += time.perf_counter() - clock
        clock = time.perf_counter()
        try:
            ep.acted(agent.act(ep.observation, ep.info))
        except Exception as exc:
            ep.fail("act", exc)
            failed_seat = seat
            break
        finally:
            ep.agent_s += time.perf_counter() - clock
        clock = time.perf_counter()
        game.act(seat, ep.messages[-1]["content"])
        ep.env_s += time.perf_counter() - clock
        actions += 1
    payoffs: list[float | None] = [None] * n
    if failed_seat is None and not truncated:
        payoffs = [float(p) for p in game.payoffs()]
    for seat, ep in enumerate(eps):
        if failed_seat is not None:
            if failed_seat != seat and ep.failure is None:
                ep.failure = ReportedFailure({"type": "SeatFailed",
                                               "message": f"seat {failed_seat} failed, so the game has no result"})
            continue
        observation, info = game.observe(seat)
        if truncated:
            info = {**info, "truncated_by": "max_steps"}
        if not started[seat]:  # the game ended before this seat's first turn
            ep.begin(game, observation, info)
            ep.status = "truncated" if truncated else "completed"
        elif truncated:
            ep.stepped((observation, 0.0, False, True, info))
        else:
            ep.stepped((observation, float(payoffs[seat] or 0.0), True, False, info))
            ep.give_reward()
    trajectories = []
    for seat, ep in enumerate(eps):
        traj = ep.trajectory(traj_id=f"{traj_prefix}e{episode}s{seat}", group_id=group_id,
                             sample_idx=episode * n + seat, env_id=str(getattr(game, "env_id", "")),
                             seed=seed, source="policy")
        if traj.status != "failed":
            traj.reward = 0.0 if truncated else payoffs[seat]
        traj.info.update({"seat": seat, "role": game.roles[seat], "episode": episode, "players": names})
        trajectories.append(traj)
    return trajectories


def collect_seated(
    make_game: Callable[[], Any],
    make_agents: Callable[[], Sequence[Agent]],
    *,
    seeds: Sequence[int],
    group_size: int = 1,
    split: str = "train",
    max_steps: int = DEFAULT_MAX_STEPS,
    players: Sequence[str] | None = None,
) -> list[RolloutGroup]:
    """Self-play or multi-agent rollouts: ``group_size`` games per seed, every seat's trajectory in one group.

    The games of a group play the same task (the seed draws it); each game's seats sample
    with their own seeds (:func:`seat_seed`). ``make_game()`` and ``make_agents()`` are
    called once; the agents are reset before every game.

    Example:
        >>> import rollgym
        >>> from rollgym.agents import RandomAgent
        >>> from rollgym.envs.games.board_seats import BoardSeats
        >>> groups = collect_seated(lambda: BoardSeats(rollgym.make("ConnectFour-v0")),
        ...                         lambda: [RandomAgent(seed=0), RandomAgent(seed=1)], seeds=[0, 1], group_size=2)
        >>> len(groups), len(groups[0].trajectories), sorted({t.info["role"] for t in groups[0].trajectories})
        (2, 4, ['first', 'second'])
    """
    if group_size < 1:
        raise ConfigError(f"group_size must be at least 1, got {group_size}.")
    game = make_game()
    agents = list(make_agents())
    n = int(game.num_seats)
    layout = SeatLayout(tuple(int(seed) for seed in seeds), n, str(getattr(game, "env_id", "seated")), split)
    groups = []
    for i in range(len(layout.seeds)):
        seed = layout.env_seed(0, i)
        group_id = layout.names("", i, 0).group_id
        members: list[Trajectory] = []
        for episode in range(group_size):
            members += play_seated(game, agents, seed=seed, split=split, group_id=group_id, episode=episode,
                                   traj_prefix=f"{group_id}:", max_steps=max_steps, players=players,
                                   agent_seeds=[layout.agent_seed(0, i, episode * n + s) for s in range(n)])
        groups.append(RolloutGroup(group_id, game.task, group_size * n, members))
    return groups


def split_by_role(groups: Sequence[RolloutGroup]) -> list[RolloutGroup]:
    """One group per (group, role): the members of each role alone, for plain per-seat GRPO.

    Example:
        >>> ts = [Trajectory(f"t{i}", "g", i, "E", "t", 0, reward=1.0, info={"role": "ab"[i % 2]}) for i in range(4)]
        >>> [(g.group_id, len(g.trajectories)) for g in split_by_role([RolloutGroup("g", None, 4, ts)])]
        [('g/a', 2), ('g/b', 2)]
    """
    out = []
    for group in groups:
        roles: dict[str, list[Trajectory]] = {}
        for traj in group.trajectories:
            roles.setdefault(str(traj.info.get("role", "")), []).append(traj)
        for role, members in roles.items():
            out.append(RolloutGroup(f"{group.group_id}/{role}", group.task, len(members), members))
    return out


def round_robin(
    make_game: Callable[[], Any],
    players: dict[str, Callable[[], Agent]],
    *,
    games_per_pair: int,
    seed: int = 0,
    max_steps: int = DEFAULT_MAX_STEPS,
) -> list[Trajectory]:
    """Every pair of ``players`` (name -> agent factory: checkpoints, fixed bots) plays ``games_per_pair`` games.

    Seats alternate between a pair's games and every game draws its own task from ``seed``; the
    trajectories carry the names in ``info["players"]``, ready for
    :func:`rollgym.benchmarks.ratings.seated_results` and :func:`~rollgym.benchmarks.ratings.fit_elo`.
    """
    if games_per_pair < 1:
        raise ConfigError(f"games_per_pair must be at least 1, got {games_per_pair}.")
    game = make_game()
    names = list(players)
    out: list[Trajectory] = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            for k in range(games_per_pair):
                seated = (a, b) if k % 2 == 0 else (b, a)
                group_id = f"{a}|{b}:{k}"
                out += play_seated(game, [players[seated[0]](), players[seated[1]]()],
                                   seed=seed * 1_000_003 + len(out), group_id=group_id, traj_prefix=f"{group_id}:",
                                   max_steps=max_steps, players=list(seated))
    return out
