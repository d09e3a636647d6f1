"""Every env family. Importing this package registers all env ids with Gymnasium.

Each module below registers its ids next to its code and keeps heavy
dependencies out of import time.
"""

from rollgym.envs import (
    code,  # noqa: F401  (HumanEval-v0, HumanEvalTool-v0, CodeGen-v0, RepoRepair-v0, Terminal-v0)
    countdown,  # noqa: F401  (Countdown-v0)
    games,  # noqa: F401  (Chess-v1, Chess960-v1, ConnectFour-v0, Hex-v0)
    math,  # noqa: F401  (MATH500, AIME24, AMC23, MATH and their Tool variants, -v1 and -v0)
    search,  # noqa: F401  (Search-v1, SearchQA-v1)
    sudoku,  # noqa: F401  (Sudoku-v0, Sudoku4x4-v0, Sudoku6x6-v0)
    tools,  # noqa: F401  (ToolWorld-v1, its scenario ids and their -v0s)
    usersim,  # noqa: F401  (UserSim-v0)
    web,  # noqa: F401  (WebShop-v2, WebForum-v2, WebTravel-v2, WebGym-v2 and their older versions)
    worldmodel,  # noqa: F401  (WorldModel-v0)
)
