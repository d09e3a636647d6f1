"""Every env family. Importing this package registers all env ids with Gymnasium.

Each module below registers its ids next to its code and keeps heavy
dependencies out of import time.
"""

from rollgym.envs import (
    code,  # noqa: F401  (HumanEval-v0, HumanEvalTool-v0, CodeGen-v0, RepoRepair-v0, Terminal-v0)
    countdown,  # noqa: F401  (Countdown-v0)
    games,  # noqa: F401  (Chess-v0, Chess960-v0, ConnectFour-v0, Hex-v0)
    math,  # noqa: F401  (MATH500-v0, AIME24-v0, AMC23-v0, MATH-v0 and their Tool variants)
    search,  # noqa: F401  (Search-v1, SearchQA-v1)
    sudoku,  # noqa: F401  (Sudoku-v0, Sudoku4x4-v0, Sudoku6x6-v0)
    tools,  # noqa: F401  (ToolWorld-v0 and its scenario ids)
    web,  # noqa: F401  (WebShop-v1, WebForum-v1, WebTravel-v1, WebGym-v1)
    worldmodel,  # noqa: F401  (WorldModel-v0)
)
