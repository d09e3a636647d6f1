"""Board games: Chess, Chess960, Connect Four and Hex, as single-agent text envs and PettingZoo AEC envs.

The agent plays one colour against a bot from :mod:`rollgym.envs.games.bots`;
see ``docs/games.md``. Nothing heavy is imported here: python-chess loads when a
chess env is built, PettingZoo when an AEC env is.
"""

from typing import Any

from rollgym.core.registration import register_env

_ORACLE = "rollgym.agents.game_bots:game_oracle"
_RANDOM = "rollgym.agents.game_bots:random_legal_move"
_BOARD_PRIVATE = "rollgym.envs.games.private:board_game_private"


def _board_game(env_id: str, entry_point: str, description: str, **extra: Any) -> None:
    """Register a board game against a bot: every one shares the oracle, the random policy and the private state."""
    register_env(env_id, entry_point, description=description, family="games", oracle=_ORACLE,
                 random_policy=_RANDOM, private_state=_BOARD_PRIVATE, grader="pure", **extra)


def _seat_game(env_id: str, game: str, entry_point: str, description: str, **extra: Any) -> None:
    """Register a hidden-information game against a seat bot; its oracle and private state are named after ``game``."""
    register_env(env_id, entry_point, description=description, family="games",
                 oracle=f"rollgym.agents.seat_bots:{game}_oracle",
                 random_policy="rollgym.agents.seat_bots:random_seat_action",
                 private_state=f"rollgym.envs.games.private:{game}_private", grader="pure", **extra)

# v1's default opponent is the greedy bot (wins when it can, blocks a win in one): against v0's random bot one
# fixed column (the prompt's example answer) won 70% of games. Same tasks and rules otherwise.
for _version, _opponent, _note in (("v1", "greedy", ""),
                                   ("v0", "random", " Superseded by -v1: one fixed column beats v0's random bot.")):
    _board_game(
        f"ConnectFour-{_version}",
        "rollgym.envs.games.connect_four:ConnectFourEnv",
        f"Connect Four (rows, columns, x-in-a-row configurable) against a {_opponent} bot by default "
        "(random/greedy/MCTS bots available)." + _note,
        kwargs={"opponent": _opponent} if _version != "v0" else {},
        superseded_by="ConnectFour-v1" if _version == "v0" else None,
    )
_board_game("Hex-v0", "rollgym.envs.games.hex:HexEnv",
            "Hex (5x5 to 19x19, 11x11 default, optional swap rule) against random/greedy/MCTS bots.")
_board_game("Chess-v1", "rollgym.envs.games.chess_env:ChessEnv",
            "Chess against random, greedy or Stockfish; SAN, long algebraic or UCI moves; ply cap ends in a draw.")
_board_game("Chess960-v1", "rollgym.envs.games.chess_env:Chess960Env",
            "Chess960 from a numbered start position, with Chess960 castling, against random, greedy or Stockfish.")
# v1 keeps the other seat's secrets (cards, values, the bots' seed) in Task.answer; v0's tasks hold them in meta
# (same deals and scores; kept so that its task ids and results stay valid). Neither shows them in info.
_KEPT = " Superseded by -v1 (same deals; the other seat's secrets are out of the task's public meta)."
for _version, _note in (("v1", ""), ("v0", _KEPT)):
    _seat_game(f"KuhnPoker-{_version}", "kuhn", "rollgym.envs.games.kuhn:KuhnPokerEnv",
               "Kuhn poker (imperfect information, exact chip payoffs) against the Nash-equilibrium bot." + _note,
               superseded_by="KuhnPoker-v1" if _version == "v0" else None)
    _seat_game(
        f"Negotiation-{_version}", "negotiation", "rollgym.envs.games.negotiation:NegotiationEnv",
        "Item division with private values (deal or no deal, payoffs by formula) against a conceding bot." + _note,
        reward_floor=0.35,  # a fixed proposal gets a deal from the fair bot: 0.265 a game over 40 seeds (oracle 0.706)
        superseded_by="Negotiation-v1" if _version == "v0" else None,
    )
