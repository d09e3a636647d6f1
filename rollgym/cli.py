"""The ``rollgym`` command: list envs, play one at the terminal, evaluate agents, run the demo.

Sub-commands::

    rollgym list                          every env id with its description, by family
    rollgym play ENV [--seed S]           play an episode yourself
    rollgym eval ENV --agent oracle ...   run an agent for groups of episodes, print a summary
    rollgym demo                          reference agents on the quick suite, verified bundles, a static leaderboard

More sub-commands come from the modules named in
:data:`rollgym.commands.COMMAND_MODULES`; each exposes ``register(subparsers)``
and sets ``func`` with ``set_defaults``. A user's mistake prints one sentence on
stderr and exits with status 2; an interrupted ``eval`` exits with 130 and
resumes when run again with the same arguments.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import secrets
import sys
import time
from collections.abc import Sequence
from typing import Any, NoReturn

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

import rollgym
from rollgym.core.errors import ConfigError, MissingDependencyError, RollgymError, UnknownEnvError

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
DEMO_ENVS: tuple[str, ...] = ("Countdown-v0", "Sudoku4x4-v0", "Sudoku-v0")
DEMO_AGENTS: tuple[str, ...] = ("oracle", "random")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# Tables stay readable in logs and pipes, where rich would otherwise assume 80 columns.
stdout = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
stderr = Console(stderr=True, highlight=False, soft_wrap=True)


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one sentence on stderr and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}; run `{self.prog} --help` for usage.\n")


def parse_env_args(pairs: Sequence[str]) -> dict[str, Any]:
    """Parse ``KEY=VALUE`` strings into make() keyword arguments; values are JSON when they parse, else text.

    Example:
        >>> parse_env_args(["max_guesses=3", "mode=hard", "ops=[\\"+\\"]"])
        {'max_guesses': 3, 'mode': 'hard', 'ops': ['+']}
    """
    kwargs: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not _KEY.fullmatch(key):
            raise ConfigError(f"--env-arg expects KEY=VALUE with a Python name as KEY, got {pair!r}.")
        try:
            kwargs[key] = json.loads(raw)
        except json.JSONDecodeError:
            kwargs[key] = raw
    return kwargs


# -- list ---------------------------------------------------------------------
def cmd_list(args: argparse.Namespace) -> int:
    """Print every registered env id with its one-line description, grouped by family (``--stats``: counts)."""
    if getattr(args, "stats", False):
        from rollgym.commands.stats import cmd_stats

        return cmd_stats(args)
    envs = rollgym.list_envs()
    if not envs:
        stdout.print("No envs are registered.")
        return 0
    table = Table(title=f"rollgym envs ({len(envs)})", show_lines=False)
    table.add_column("Family", style="bold")
    table.add_column("Env id", style="cyan", no_wrap=True)
    table.add_column("Description")
    family = None
    for info in envs:
        if family is not None and info.family != family:
            table.add_section()
        table.add_row(escape(info.family) if info.family != family else "", escape(info.id), escape(info.description))
        family = info.family
    stdout.print(table)
    return 0


# -- play ---------------------------------------------------------------------
def cmd_play(args: argparse.Namespace) -> int:
    """Play one episode at the terminal with :class:`~rollgym.agents.HumanAgent`."""
    from rollgym.agents import HumanAgent
    from rollgym.rollout.collector import resolve_env, run_episode

    info = resolve_env(args.env)
    env = rollgym.make(info.id, split=args.split, **parse_env_args(args.env_arg))
    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    stdout.print(f"[bold]{info.id}[/bold]: {escape(info.description)}  (seed {seed}; replay with --seed {seed})")
    stdout.print("End a line with \\ to continue your answer on the next line.\n")
    first = True

    def show(text: str) -> None:
        nonlocal first
        if first:
            system = getattr(env.unwrapped, "system_prompt", "")
            if system:
                stdout.print(f"[dim]{escape(system)}[/dim]\n")
            first = False
        print(text, flush=True)

    def read(prompt: str) -> str:
        return input(prompt)

    try:
        trajectory, _ = run_episode(
            env, HumanAgent(read=read, write=show), seed=seed, max_steps=args.max_steps, env_id=info.id
        )
    finally:
        env.close()
    last = trajectory.messages[-1] if trajectory.messages else None
    if last is not None and last["role"] == "user" and len(trajectory.messages) > 2:
        print(last["content"], flush=True)
    if trajectory.status == "failed":
        failure = trajectory.info.get("failure", {})
        reason = (
            "no more input" if failure.get("type") == "EOFError" else f"{failure.get('type')}: {failure.get('message')}"
        )
        stderr.print(f"Episode ended without a result ({reason}).", markup=False)
        return 1
    verdict = trajectory.info.get("correct")
    suffix = "" if verdict is None else (" (correct)" if verdict else " (not correct)")
    if trajectory.info.get("parsed") is not None and not verdict:
        suffix += f"; parsed answer: {trajectory.info['parsed']!r}"
    elif trajectory.info.get("error") and not verdict:
        suffix += f"; {trajectory.info['error']}"
    stdout.print(
        f"Reward: {trajectory.reward:g}{suffix}  ({trajectory.status}, {len(trajectory.turns)} turn(s))", markup=False
    )
    return 0


# -- eval ---------------------------------------------------------------------
def _make_agent(name: str) -> Any:
    from rollgym.agents import make_agent

    return make_agent(name)


def _make_llm_agent(args: argparse.Namespace) -> Any:
    """A :class:`~rollgym.agents.chat.ChatAgent` over ``--model`` (a folder, hub id, vllm:PATH or URL)."""
    from rollgym.agents.backends import make_backend
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.chat import ChatAgent

    backend = make_backend(args.model)
    tokenizer = None
    if args.tokenizer:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    sampling = SamplingParams(max_tokens=args.max_tokens, temperature=args.temperature, top_p=args.top_p)
    agent = ChatAgent(backend, sampling, tokenizer=tokenizer)
    agent.name = f"llm:{args.model}"  # the results file's identity names the model
    return agent


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=stderr,
        transient=True,
        disable=not stderr.is_terminal,  # no bar (and no stray blank line) when stderr is a pipe or file
    )


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


def cmd_eval(args: argparse.Namespace) -> int:
    """Run an agent on an env with :func:`~rollgym.rollout.collect` and print a summary."""
    from rollgym.benchmarks.metrics import summarize
    from rollgym.rollout import collect
    from rollgym.rollout.collector import resolve_env

    info = resolve_env(args.env)
    env_kwargs = parse_env_args(args.env_arg)
    agent = _make_llm_agent(args) if args.model else _make_agent(args.agent)
    label = agent.name if args.model else args.agent
    with _progress() as progress:
        bar = progress.add_task(f"{info.id} · {label}", total=args.n * args.group_size)

        def report(done: int, total: int) -> None:
            progress.update(bar, completed=done, total=total)

        try:
            if args.model:
                from rollgym.rollout.stream import collect_async

                groups = collect_async(
                    agent, args.env, args.n, args.group_size, split=args.split, seed=args.seed,
                    concurrency=args.concurrency, max_steps=args.max_steps, out=args.out, env_kwargs=env_kwargs,
                    progress=report,
                )
            else:
                groups = collect(
                    agent, args.env, n_tasks=args.n, group_size=args.group_size, split=args.split, seed=args.seed,
                    out=args.out, env_kwargs=env_kwargs, max_steps=args.max_steps, progress=report,
                    workers=args.workers,
                )
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


# -- demo ---------------------------------------------------------------------
def cmd_demo(args: argparse.Namespace) -> int:
    """Oracle and random agents on Countdown-v0, Sudoku4x4-v0 and Sudoku-v0, in one results table."""
    from rollgym.benchmarks.metrics import summarize
    from rollgym.rollout import collect

    available = []
    for env_id in DEMO_ENVS:
        try:
            rollgym.env_info(env_id)
            available.append(env_id)
        except UnknownEnvError:
            stderr.print(f"Skipping {env_id}: it is not registered in this installation yet.")
    heading = (
        f"rollgym demo: {args.n} tasks × {args.group_size} rollouts per env and agent, split test, seed {args.seed}"
    )
    table = Table()
    for name, justify in (
        ("Env", "left"),
        ("Agent", "left"),
        ("Episodes", "right"),
        ("Accuracy [95% CI]", "right"),
        ("Mean reward [95% CI]", "right"),
        (f"pass@{args.group_size} [95% CI]", "right"),
        ("Failures", "right"),
        ("Time", "right"),
    ):
        table.add_column(name, justify=justify, no_wrap=name in {"Env", "Agent"})  # type: ignore[arg-type]
    runs = [(env_id, agent) for env_id in available for agent in DEMO_AGENTS]
    total = len(runs) * args.n * args.group_size
    with _progress() as progress:
        bar = progress.add_task("demo", total=total)
        for position, (env_id, agent_name) in enumerate(runs):
            offset = position * args.n * args.group_size
            progress.update(bar, description=f"{env_id} · {agent_name}")

            def report(done: int, _total: int, offset: int = offset) -> None:
                progress.update(bar, completed=offset + done)

            started = time.perf_counter()
            try:
                groups = collect(
                    _make_agent(agent_name),
                    env_id,
                    n_tasks=args.n,
                    group_size=args.group_size,
                    split="test",
                    seed=args.seed,
                    progress=report,
                )
            except ConfigError as exc:
                table.add_row(env_id, agent_name, "-", escape(f"skipped: {exc}"), "", "", "", "")
                continue
            elapsed = time.perf_counter() - started
            s = summarize(groups, seed=args.seed)
            top = s.pass_at_k.get(args.group_size)
            table.add_row(
                env_id,
                agent_name,
                str(s.episodes),
                escape(s.accuracy.format(percent=True)),
                escape(s.mean_reward.format()),
                escape(top.format(percent=True)) if top else "n/a",
                str(s.failures),
                f"{elapsed:.1f}s",
            )
    if not runs:
        stderr.print("No demo env is registered; nothing to run.")
        return 1
    stdout.print(heading, markup=False)
    stdout.print(table)
    if args.leaderboard:
        from rollgym.benchmarks.demo import run_demo

        stdout.print(f"\nThe whole loop: the 'quick' suite, verified bundles and a static leaderboard in {args.out}/")
        result = run_demo(args.out, log=lambda line: stdout.print(line, markup=False))
        verdict = "verified" if all(result.verified.values()) else "REJECTED"
        stdout.print(f"Bundles {verdict}. Open {result.site} in a browser to see the leaderboard.", markup=False)
        return 0 if all(result.verified.values()) else 1
    return 0


# -- parser -------------------------------------------------------------------
def _add_env_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--env-arg",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra argument for the env constructor (repeatable; VALUE is JSON or text)",
    )


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return value


def _register_plugins(subparsers: Any) -> None:
    from rollgym.commands import COMMAND_MODULES

    for module_name in COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            name = module_name.rsplit(".", 1)[-1].replace("_", "-")
            stub = subparsers.add_parser(name, help=f"(unavailable: {exc})", add_help=False)
            stub.add_argument("rest", nargs=argparse.REMAINDER)
            message = f"The `{name}` command is unavailable: {exc}. Install its extra, e.g. pip install 'rollgym[all]'."
            stub.set_defaults(func=lambda _args, message=message: _raise(MissingDependencyError(message)))
            continue
        module.register(subparsers)


def _raise(exc: Exception) -> int:
    raise exc


def build_parser() -> argparse.ArgumentParser:
    """The ``rollgym`` argument parser, with built-in and plugin sub-commands."""
    parser = _Parser(prog="rollgym", description="Gymnasium environments with verifiable rewards for LLM agents.")
    parser.add_argument("--version", action="version", version=f"rollgym {rollgym.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("list", help="list every env id with its description")
    p.add_argument("--stats", action="store_true", help="count sites, apps, tools and templates instead")
    p.add_argument("--json", action="store_true", help="with --stats: print JSON")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("play", help="play an episode yourself at the terminal")
    p.add_argument("env", metavar="ENV", help="env id, e.g. Countdown-v0")
    p.add_argument("--seed", type=_seed, default=None, help="episode seed (random when omitted)")
    p.add_argument("--split", default="test", help="task split (default: test)")
    p.add_argument("--max-steps", type=_positive, default=100, help="cap on your actions (default: 100)")
    _add_env_arg(p)
    p.set_defaults(func=cmd_play)

    p = sub.add_parser("eval", help="evaluate a reference agent and print a summary")
    p.add_argument("env", metavar="ENV", help="env id, e.g. Countdown-v0 (or module:Env-v0 to import module first)")
    p.add_argument("--agent", choices=["oracle", "random"], default="oracle", help="agent (default: oracle)")
    p.add_argument("--model", default=None, metavar="PATH_OR_URL",
                   help="evaluate a language model instead: a model folder, hub id, vllm:PATH, or an "
                        "OpenAI-compatible URL such as http://127.0.0.1:8000/v1")
    p.add_argument("--tokenizer", default=None, help="the model's tokenizer folder, for exact tokens over HTTP")
    p.add_argument("--max-tokens", type=_positive, default=512, help="generation cap per turn (default: 512)")
    p.add_argument("--temperature", type=float, default=1.0, help="sampling temperature (default: 1.0)")
    p.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling mass (default: 1.0)")
    p.add_argument("--concurrency", type=_positive, default=32,
                   help="episodes in flight with --model (default: 32)")
    p.add_argument("--n", type=_positive, default=100, help="number of tasks (default: 100)")
    p.add_argument("--group-size", type=_positive, default=4, help="rollouts per task (default: 4)")
    p.add_argument("--split", default="test", help="task split (default: test)")
    p.add_argument("--seed", type=_seed, default=0, help="run seed (default: 0)")
    p.add_argument("--out", default=None, help="JSONL results file; rerunning with it resumes the run")
    p.add_argument("--max-steps", type=_positive, default=100, help="cap on agent actions per episode (default: 100)")
    p.add_argument("--workers", type=_positive, default=1, help="episodes played at once (default: 1)")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON line instead of a table")
    _add_env_arg(p)
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("demo", help="reference agents on the quick suite, verified bundles, a static leaderboard")
    p.add_argument("--n", type=_positive, default=25, help="tasks per env and agent (default: 25)")
    p.add_argument("--group-size", type=_positive, default=4, help="rollouts per task (default: 4)")
    p.add_argument("--seed", type=_seed, default=0, help="run seed (default: 0)")
    p.add_argument("--out", default="demo-output", help="folder for the suite bundles and the leaderboard")
    p.add_argument("--no-leaderboard", dest="leaderboard", action="store_false",
                   help="only print the table; skip the quick suite, verification and the static leaderboard")
    p.set_defaults(func=cmd_demo)

    _register_plugins(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``rollgym`` command; return its exit status.

    Example:
        >>> main(["--version"])  # doctest: +SKIP
        rollgym 0.1.0
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args.func(args) or 0)
    except RollgymError as exc:
        stderr.print(f"rollgym: error: {exc}", markup=False)
        return EXIT_USAGE
    except KeyboardInterrupt:
        stderr.print("Interrupted.")
        return EXIT_INTERRUPTED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
