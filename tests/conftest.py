"""Shared test fixtures.

``require_binary`` and ``require_module`` skip a test with a clear reason on a
developer machine that lacks an optional system tool or package, but fail it in
CI (``CI=true``), where ``.ci/run`` installs everything. Both work inside a test
and at module level (before a module imports the optional package), where they
skip the whole module, or fail its collection in CI; never a bare ImportError.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import threading
import warnings
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NoReturn

import pytest

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("ROLLGYM_DATA_DIR", REPO.parent / "shared" / "data"))
if SHARED_DATA.is_dir():  # so that a bare `pytest` finds the MATH data as `make test` does
    os.environ.setdefault("ROLLGYM_DATA_DIR", str(SHARED_DATA))


class PostServer:
    """A real HTTP server on 127.0.0.1, in a thread, that answers every POST from its JSON body.

    ``answer(body)`` returns the reply's content type and bytes; ``url`` is an OpenAI-style
    base (``http://127.0.0.1:PORT/v1``), for stand-ins of chat-completions endpoints.
    """

    def __init__(self, answer: Callable[[dict[str, Any]], tuple[str, bytes]], *, http11: bool = False) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1" if http11 else "HTTP/1.0"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                content_type, data = answer(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def require_binary(name: str, *extra_paths: str) -> str:
    """Return the path of a system binary, or skip (fail in CI) when it is missing."""
    found = shutil.which(name) or next((p for p in extra_paths if os.access(p, os.X_OK)), None)
    if found:
        return found
    message = f"{name} is not installed (apt-get install {name}); .ci/run installs it in CI"
    _missing(message)


def require_module(name: str) -> None:
    """Skip (fail in CI) when an optional Python package is missing."""
    if importlib.util.find_spec(name) is None:
        extra = EXTRA_OF.get(name.partition(".")[0])
        how = f"pip install 'rollgym[{extra}]'" if extra else "`make test` installs it"
        _missing(f"Python package {name} is not installed ({how})")


def require_repo_real() -> None:
    """Skip (fail in CI) when the real projects of RepoRepairReal-v0 are not built."""
    from rollgym.core.errors import DataNotFoundError
    from rollgym.envs.code.repo_real.projects import load_projects, project_dir

    try:
        for project in load_projects():
            project_dir(project)
    except DataNotFoundError as exc:
        _missing(f"{exc} .ci/run builds them")


def require_modules(*names: str) -> None:
    """:func:`require_module` for each name."""
    for name in names:
        require_module(name)


def task_at(env_id: str, index: int, **env_kwargs: Any) -> Any:
    """Task ``index`` of ``env_id``'s default split, the task an episode reset to that index plays."""
    from rollgym.core.registration import make

    env = make(env_id, **env_kwargs)
    try:
        env.reset(options={"task_index": index})
        return env.unwrapped.task
    finally:
        env.close()


def check_env_quietly(env: Any) -> None:
    """Gymnasium's env checker passes on ``env`` without a finding (it reports through ``UserWarning``;
    ResourceWarnings from other tests' garbage are not its findings)."""
    from gymnasium.utils.env_checker import check_env

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
    assert not [w for w in caught if issubclass(w.category, UserWarning)], [str(w.message) for w in caught]


def check_score_fields(reward: float, info: dict[str, Any]) -> None:
    """The core Score fields an env's last ``info`` carries (the contract every family keeps)."""
    assert type(info["reward"]) is float and info["reward"] == reward
    assert type(info["correct"]) is bool
    assert "parsed" in info and (info["parsed"] is None or isinstance(info["parsed"], str))
    assert info["error"] is None if info["correct"] else isinstance(info["error"], str)
    details = info["details"]
    assert isinstance(details, dict) and details["criteria"] and isinstance(details["diff"], dict)
    assert all(type(v) is bool for v in details["criteria"].values())


def _missing(message: str) -> NoReturn:
    if IN_CI:
        pytest.fail(f"{message}; CI installs every extra, so this is a failure there", pytrace=False)
    pytest.skip(message, allow_module_level=True)


# The extra that provides each optional package (pyproject.toml); the test tools come with [dev].
EXTRA_OF = {
    "sympy": "math", "math_verify": "math", "datasets": "math", "docker": "docker", "chess": "games",
    "pettingzoo": "games", "playwright": "web", "PIL": "web", "torch": "llm", "transformers": "llm",
    "tokenizers": "llm", "httpx": "llm", "matplotlib": "train", "trl": "trl", "accelerate": "trl",
    "pyarrow": "trl", "vllm": "vllm", "fastapi": "leaderboard", "uvicorn": "leaderboard",
    "sqlalchemy": "leaderboard", "psycopg": "postgres", "ray": "ray", "bm25s": "search",
    "hypothesis": "dev", "psutil": "dev", "reasoning_gym": "dev", "pyspiel": "dev", "skimage": "dev",
    "rank_bm25": "dev", "grimp": "dev", "importlinter": "dev",
}


@pytest.fixture
def shared_data() -> Path:
    """The folder with MATH500, AIME24 and AMC23 JSONL files (never copied into the repo)."""
    if not (SHARED_DATA / "math500.jsonl").exists():
        message = f"evaluation data not found in {SHARED_DATA}; set ROLLGYM_DATA_DIR"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return SHARED_DATA


# -- a tiny chat model built from a config: no download, a few seconds on a CPU -----------------


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a tiny random Llama-architecture model and a trained BPE tokenizer."""
    require_module("torch")
    require_module("transformers")
    from rollgym.agents.backends.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"), seed=0)


@pytest.fixture(scope="session")
def tiny_backend(tiny_model_dir: Path):
    """A TransformersBackend over the tiny model (shared by the session: do not train it)."""
    from rollgym.agents.backends.hf import TransformersBackend

    return TransformersBackend.from_pretrained(str(tiny_model_dir))


@pytest.fixture(scope="session")
def tiny_server(tiny_backend):
    """``rollgym serve-model``'s server over the tiny backend, on 127.0.0.1 and a free port."""
    from rollgym.agents.server import ModelServer

    with ModelServer(tiny_backend, model_name="tiny") as server:
        yield server


#: Games where one episode can be lost by the best policy (chance, or a counterpart that decides): their oracle
#: must beat the random agent on average instead of winning every episode.
CHANCE_IDS = {"KuhnPoker-v0", "KuhnPoker-v1", "Negotiation-v0", "Negotiation-v1"}
