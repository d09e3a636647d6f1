"""Board games: Chess, Chess960, Connect Four and Hex, as single-agent text envs and PettingZoo AEC envs.

The agent plays one colour against a bot from :mod:`rollgym.envs.games.bots`;
see ``docs/games.md``. Nothing heavy is imported here: python-chess loads when a
chess env is built, PettingZoo when an AEC env is.
"""

from rollgym.core.registration import register_env

_ORACLE = "rollgym.agents.game_bots:game_oracle"
_RANDOM = "rollgym.agents.game_bots:random_legal_move"
_BOARD_PRIVATE = "rollgym.envs.games.private:board_game_private"

# v1's default opponent is the greedy bot (wins when it can, blocks a win in one): against v0's random bot one
# fixed column (the prompt's example answer) won 70% of games. Same tasks and rules otherwise.
for _version, _opponent, _note in (("v1", "greedy", ""),
                                   ("v0", "random", " Superseded by -v1: one fixed column beats v0's random bot.")):
    register_env(
        f"ConnectFour-{_version}",
        "rollgym.envs.games.connect_four:ConnectFourEnv",
        description=f"Connect Four (rows, columns, x-in-a-row configurable) against a {_opponent} bot by default "
                    "(random/greedy/MCTS bots available)." + _note,
        family="games",
        kwargs={"opponent": _opponent} if _version != "v0" else {},
        oracle=_ORACLE,
        random_policy=_RANDOM,
        private_state=_BOARD_PRIVATE,
        grader="pure",
        superseded_by="ConnectFour-v1" if _version == "v0" else None,
    )
register_env(
    "Hex-v0",
    "rollgym.envs.games.hex:HexEnv",
    description="Hex (5x5 to 19x19, 11x11 default, optional swap rule) against random/greedy/MCTS bots.",
    family="games",
    oracle=_ORACLE,
    random_policy=_RANDOM,
    private_state=_BOARD_PRIVATE,
    grader="pure",
)
register_env(
    "Chess-v1",
    "rollgym.envs.games.chess_env:ChessEnv",
    description="Chess against random, greedy or Stockfish; SAN, long algebraic or UCI moves; ply cap ends in a draw.",
    family="games",
    oracle=_ORACLE,
    random_policy=_RANDOM,
    private_state=_BOARD_PRIVATE,
    grader="pure",
)
register_env(
    "Chess960-v1",
    "rollgym.envs.games.chess_env:Chess960Env",
    description="Chess960 from a numbered start position, with Chess960 castling, against random, greedy or Stockfish.",
    family="games",
    oracle=_ORACLE,
    random_policy=_RANDOM,
    private_state=_BOARD_PRIVATE,
    grader="pure",
)
# v1 keeps the other seat's secrets (cards, values, the bots' seed) in Task.answer; v0's tasks hold them in meta
# (same deals and scores; kept so that its task ids and results stay valid). Neither shows them in info.
_KEPT = " Superseded by -v1 (same deals; the other seat's secrets are out of the task's public meta)."
for _version, _note in (("v1", ""), ("v0", _KEPT)):
    register_env(
        f"KuhnPoker-{_version}",
        "rollgym.envs.games.kuhn:KuhnPokerEnv",
        description="Kuhn poker (imperfect information, exact chip payoffs) against the Nash-equilibrium bot." + _note,
        family="games",
        oracle="rollgym.agents.seat_bots:kuhn_oracle",
        random_policy="rollgym.agents.seat_bots:random_seat_action",
        private_state="rollgym.envs.games.private:kuhn_private",
        grader="pure",
        superseded_by="KuhnPoker-v1" if _version == "v0" else None,
    )
    register_env(
        f"Negotiation-{_version}",
        "rollgym.envs.games.negotiation:NegotiationEnv",
        description="Item division with private values (deal or no deal, payoffs by formula) against a conceding "
                    "bot." + _note,
        family="games",
        oracle="rollgym.agents.seat_bots:negotiation_oracle",
        random_policy="rollgym.agents.seat_bots:random_seat_action",
        private_state="rollgym.envs.games.private:negotiation_private",
        grader="pure",
        reward_floor=0.35,  # a fixed proposal gets a deal from the fair bot: 0.265 a game over 40 seeds (oracle 0.706)
        superseded_by="Negotiation-v1" if _version == "v0" else None,
    )
