"""Env settings the trainer and adapter tests share: small enough that a tiny model's episodes are short."""

#: Countdown with three numbers from 1 to 9, + and - only, targets 10 to 20.
COUNTDOWN = {"num_numbers": 3, "operators": "+-", "min_value": 1, "max_value": 9, "min_target": 10,
             "max_target": 20}
#: Connect Four with no legal-move list in the prompt and two retries after an illegal move.
C4 = {"show_legal_moves": False, "max_retries": 2}
