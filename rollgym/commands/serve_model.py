"""``rollgym serve-model PATH``: serve a local transformers model on the OpenAI-compatible API."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    """Add the ``serve-model`` sub-command."""
    parser = subparsers.add_parser(
        "serve-model", help="serve a transformers model through the OpenAI-compatible API on 127.0.0.1",
        description="Serve a transformers model folder (or hub id) at http://HOST:PORT/v1 "
                    "with /v1/completions and /v1/chat/completions, token ids and logprobs.",
    )
    parser.add_argument("model", help="model folder or hub id")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    parser.add_argument("--name", default=None, help="model name the API reports (default: the folder name)")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--device", default="cpu")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load the model and serve until interrupted."""
    from pathlib import Path

    from rollgym.agents.backends.hf import TransformersBackend
    from rollgym.agents.server import ModelServer

    backend = TransformersBackend.from_pretrained(args.model, device=args.device, dtype=args.dtype)
    server = ModelServer(backend, model_name=args.name or Path(args.model).name, host=args.host, port=args.port)
    print(f"Serving {args.model} at {server.url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0
