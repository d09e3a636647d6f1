"""``rollgym play ENV``: play one episode yourself at the terminal."""

from __future__ import annotations

import argparse
import re
import secrets
from typing import Any

from rich.markup import escape

from rollgym.commands.console import stderr, stdout
from rollgym.commands.options import add_env_arg, parse_env_args, positive_int, seed_int


def register(subparsers: Any) -> None:
    """Add the ``play`` sub-command."""
    p = subparsers.add_parser("play", help="play an episode yourself at the terminal")
    p.add_argument("env", metavar="ENV", help="env id, e.g. Countdown-v0")
    p.add_argument("--seed", type=seed_int, default=None, help="episode seed (random when omitted)")
    p.add_argument("--split", default="test", help="task split (default: test)")
    p.add_argument("--max-steps", type=positive_int, default=100, help="cap on your actions (default: 100)")
    add_env_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Play one episode at the terminal with :class:`~rollgym.agents.HumanAgent`."""
    from rollgym.agents import HumanAgent
    from rollgym.core.registration import make
    from rollgym.rollout.collector import resolve_env, run_episode

    info = resolve_env(args.env)
    env = make(info.id, split=args.split, **parse_env_args(args.env_arg))
    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    stdout.print(f"[bold]{info.id}[/bold]: {escape(info.description)}  (seed {seed}; replay with --seed {seed})")
    stdout.print("End a line with \\ to continue your answer on the next line.\n")
    first = True

    def show(text: str) -> None:
        nonlocal first
        if first:
            system = getattr(env.unwrapped, "system_prompt", "")
            if system and system.strip() not in text:  # many envs repeat their rules in the first observation
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
    shown = trajectory.status == "failed"  # input ran out while the last observation was on screen
    if last is not None and last["role"] == "user" and len(trajectory.messages) > 2 and not shown:
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
    if not verdict:
        shown_text = " ".join(m["content"] for m in trajectory.messages if m["role"] != "assistant")
        hint = format_hint(trajectory.info, shown_text)
        if hint:
            stdout.print(f"Hint: {hint}", markup=False)
    return 0


def format_hint(info: dict[str, Any], prompt: str) -> str | None:
    """What to change when an answer could not be read: the env's own reason, else the format the task asks for.

    Example:
        >>> format_hint({"error": "no_answer"}, "Answer inside <answer></answer>, e.g. <answer>7</answer>.")
        'no answer was found: put your final answer inside <answer>...</answer> tags, as in <answer>7</answer>.'
    """
    error = info.get("error")
    if error not in {"no_answer", "wrong_format", "format", "parse_error", "empty", "invalid", "wrong_size"}:
        return None
    reason = (info.get("details") or {}).get("reason")
    if error != "no_answer":
        return str(reason) if reason else None
    if "<answer>" in prompt:
        example = re.search(r"<answer>[^<\n]+</answer>", prompt)
        where = "inside <answer>...</answer> tags" + (f", as in {example.group(0)}" if example else "")
    elif "\\boxed" in prompt:
        where = "in \\boxed{...}, e.g. \\boxed{42}"
    elif "Final Answer:" in prompt:
        where = "on the last line as `Final Answer: <move>`"
    else:
        return str(reason) if reason else None
    return f"no answer was found: put your final answer {where}."
