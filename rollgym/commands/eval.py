"""``rollgym eval ENV``: run a reference agent or a language model for groups of episodes, print a summary."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.markup import escape
from rich.table import Table

from rollgym.agents.capabilities import require_capabilities
from rollgym.commands.console import EXIT_INTERRUPTED, EpisodeStats, progress_bar, stderr, stdout
from rollgym.commands.options import add_env_arg, parse_env_args, positive_int, seed_int
from rollgym.core.agent import Agent
from rollgym.core.errors import ConfigError


def register(subparsers: Any) -> None:
    """Add the ``eval`` sub-command."""
    p = subparsers.add_parser("eval", help="evaluate a reference agent and print a summary")
    p.add_argument("env", metavar="ENV", help="env id, e.g. Countdown-v0 (or module:Env-v0 to import module first)")
    p.add_argument("--agent", choices=["oracle", "random", *SEARCH_AGENTS], default="oracle",
                   help="agent (default: oracle); model-mcts and internal-search play the board games with --model "
                        "(a local model) guiding the search")
    p.add_argument("--search-budget", type=positive_int, default=None, metavar="N",
                   help="model-mcts: MCTS simulations per move (default: 16); internal-search: the most candidate "
                        "moves in the model's tree (default: 3)")
    p.add_argument("--model", default=None, metavar="PATH_OR_URL",
                   help="evaluate a language model instead: a model folder, a pulled model's name (rollgym models "
                        "list), hub id, vllm:PATH, or an "
                        "OpenAI-compatible URL such as http://127.0.0.1:8000/v1")
    p.add_argument("--tokenizer", default=None, help="the model's tokenizer folder, for exact tokens over HTTP")
    p.add_argument("--draft", default=None, metavar="PATH_OR_NAME",
                   help="decode speculatively with this smaller model of the same tokenizer (local --model only; "
                        "greedy tokens and the sampling distribution stay the target's)")
    p.add_argument("--max-tokens", type=positive_int, default=512, help="generation cap per turn (default: 512)")
    p.add_argument("--temperature", type=float, default=1.0, help="sampling temperature (default: 1.0)")
    p.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling mass (default: 1.0)")
    p.add_argument("--n", type=positive_int, default=100, help="number of tasks (default: 100)")
    p.add_argument("--group-size", type=positive_int, default=4, help="rollouts per task (default: 4)")
    p.add_argument("--split", default="test", help="task split (default: test)")
    p.add_argument("--seed", type=seed_int, default=0, help="run seed (default: 0)")
    p.add_argument("--out", default=None, help="JSONL results file; rerunning with it resumes the run")
    p.add_argument("--max-steps", type=positive_int, default=100,
                   help="cap on agent actions per episode (default: 100)")
    p.add_argument("--driver", choices=["threads", "async"], default=None,
                   help="how episodes run at once: threads (each with its own env and agent) or async (one event "
                        "loop, model calls batched); default: async with --model, threads otherwise. Results do "
                        "not depend on it")
    p.add_argument("--parallel", "--workers", "--concurrency", dest="parallel", type=positive_int, default=None,
                   metavar="N", help="episodes played at once (default: 1 with threads, 32 with async); "
                                     "--workers and --concurrency are its older names")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON line instead of a table")
    add_env_arg(p)
    p.set_defaults(func=run)


#: Agents that search with a local model in the evaluator's seat (``--agent NAME --model M``).
SEARCH_AGENTS = ("model-mcts", "internal-search")


def make_search_agent(args: argparse.Namespace) -> Agent:
    """A model-guided search agent (:mod:`rollgym.agents.model_search`, :mod:`rollgym.agents.internal_search`)."""
    from rollgym.agents.backends import backend_kind, make_backend

    if not args.model:
        raise ConfigError(f"--agent {args.agent} needs --model: a model folder, a pulled model's name or a hub id.")
    if not backend_kind(args.model).local:
        raise ConfigError(f"--agent {args.agent} scores moves with a local transformers model; pass a model folder, "
                          "a pulled model's name or a hub id as --model, not a URL or vllm:PATH.")
    backend = make_backend(args.model)
    if args.agent == "model-mcts":
        from rollgym.agents.model_search import ModelMCTSAgent

        agent: Any = ModelMCTSAgent(backend, simulations=args.search_budget or 16, seed=args.seed)
    else:
        from rollgym.agents.internal_search import InternalSearchAgent

        agent = InternalSearchAgent(backend, width=args.search_budget or 3, temperature=args.temperature,
                                    max_tokens=None, seed=args.seed)
    agent.name = f"{agent.name}:{args.model}"  # the results file's identity names the search and the model
    return agent  # type: ignore[no-any-return]


def make_llm_agent(args: argparse.Namespace) -> Agent:
    """A ChatAgent over ``--model``, built by :func:`~rollgym.agents.factory.build_llm_agent`."""
    from rollgym.agents.factory import build_llm_agent

    sampling = {"max_tokens": args.max_tokens, "temperature": args.temperature, "top_p": args.top_p}
    # the results file's identity names the model
    return build_llm_agent(args.model, sampling=sampling, tokenizer=args.tokenizer or None,
                           draft=getattr(args, "draft", None), name=f"llm:{args.model}")


def summary_table(summary: Any) -> Table:
    """A two-column rich table of a :class:`~rollgym.benchmarks.metrics.Summary`."""
    table = Table()
    table.add_column("Metric", style="bold")
    table.add_column("Value (95% interval)", justify="right")
    table.add_row("episodes", f"{summary.episodes} ({summary.tasks} tasks)")
    table.add_row("accuracy", escape(summary.accuracy.format(percent=True)))
    table.add_row("mean reward", escape(summary.mean_reward.format()))
    for k, estimate in summary.pass_at_k.items():
        table.add_row(f"pass@{k}", escape(estimate.format(percent=True)))
    table.add_row("failures", str(summary.failures))
    table.add_row("truncated", str(summary.truncated))
    return table


def run(args: argparse.Namespace) -> int:
    """Run an agent on an env with the episode engine (:func:`~rollgym.rollout.engine.run_spec`), print a summary."""
    from rollgym.agents import make_agent
    from rollgym.benchmarks.metrics import summarize
    from rollgym.rollout.drivers import run_spec
    from rollgym.rollout.engine import resolve_env
    from rollgym.rollout.spec import RunSpec

    info = resolve_env(args.env)
    env_kwargs = parse_env_args(args.env_arg)
    search = args.agent in SEARCH_AGENTS
    if args.search_budget is not None and not search:
        raise ConfigError("--search-budget applies to --agent model-mcts or internal-search only.")
    if search:
        from rollgym.agents.model_search import check_board_game

        check_board_game(info.id, args.agent)  # before the model loads
        agent = make_search_agent(args)
    else:
        agent = make_llm_agent(args) if args.model else make_agent(args.agent)
    label = agent.name if args.model else args.agent
    driver = args.driver or ("async" if args.model and not search else "threads")
    if args.model and not search and driver == "async":  # read once here: aact batches the model's calls
        require_capabilities(agent, "asynchronous", purpose="--driver async with --model (model calls batched)")
    spec = RunSpec.of(args.env, args.n, args.group_size, split=args.split, seed=args.seed, out=args.out,
                      env_kwargs=env_kwargs, max_steps=args.max_steps)
    stats = EpisodeStats()
    with progress_bar(stats=True) as progress:
        bar = progress.add_task(f"{info.id} · {label}", total=args.n * args.group_size, **stats.fields())
        first = True

        def report(done: int, total: int) -> None:
            nonlocal first
            if first:  # the first call comes after the episodes found in --out: from here on they are played
                stats.resumed_done()
                first = False
            progress.update(bar, completed=done, total=total, **stats.fields())

        try:
            groups = run_spec(spec, agent, driver=driver, parallel=args.parallel, progress=report,
                              on_episode=stats.add)
        except KeyboardInterrupt:
            hint = " Run the same command again to resume." if args.out else ""
            stderr.print(f"Interrupted.{hint}")
            return EXIT_INTERRUPTED
    summary = summarize(groups, seed=args.seed)
    if args.json:
        print(
            json.dumps(
                {"env_id": info.id, "agent": label, "spec_hash": info.content_hash, **summary.to_dict()},
                sort_keys=True,
            )
        )
        return 0
    title = f"{info.id} · agent {label} · split {args.split} · seed {args.seed} · spec {info.content_hash}"
    stdout.print(title, markup=False)
    stdout.print(summary_table(summary))
    if args.out:
        stdout.print(f"Results: {args.out}")
    return 0
