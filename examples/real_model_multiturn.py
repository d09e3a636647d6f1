"""Play multi-turn envs with a real model through ChatAgent and count re-tokenization mismatches.

For every episode whose template preserves prefixes (one training row), the
episode's ``prompt_ids + completion_ids`` must equal a fresh tokenization of the
rendered conversation: every message before the last reply rendered with the
chat template (with the generation prompt), followed by the text of the last
reply's sampled tokens. A mismatch means a trainer would see tokens the policy
never produced, or miss ones it did. Model output never crashes an env: the
script also counts failed episodes and the env's labels for bad actions.

    rollgym models pull smollm2-135m-instruct
    python examples/real_model_multiturn.py --model smollm2-135m-instruct --out docs/llm_multiturn.json

The defaults (ToolWorld-v1 and ConnectFour-v0, 30 episodes each, 48 new tokens a
turn, at most 4 turns) take about ten minutes on two CPU cores.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from typing import Any

from rollgym.agents.backends import SamplingParams, make_backend
from rollgym.agents.backends.hf import render_chat_text
from rollgym.agents.chat import ChatAgent, template_preserves_prefix
from rollgym.rollout import collect_async
from rollgym.rollout.types import Trajectory


def fresh_ids(tokenizer: Any, trajectory: Trajectory, tools: list[dict[str, Any]] | None) -> list[int]:
    """The episode's conversation rendered and tokenized from scratch, ending with the last reply's text."""
    last_reply = tokenizer.decode(trajectory.turns[-1].output_ids, skip_special_tokens=False)
    # the transcript may end with the env's answer to the last reply, which no prompt contained
    last = max(i for i, m in enumerate(trajectory.messages) if m["role"] == "assistant")
    text = render_chat_text(tokenizer, trajectory.messages[:last], tools) + last_reply
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def reply_round_trips(tokenizer: Any, output_ids: list[int]) -> bool:
    """Whether a reply's sampled ids are what its tokenizer makes of their text (the closing EOS aside).

    A sampling model may emit a token sequence the tokenizer would never produce (``"Ch" "ron"`` where
    the text tokenizes as ``"Chron"``), bytes that are no valid UTF-8, or a special token inside the
    text; a fresh tokenization of such a conversation cannot give the sampled ids back, and must not.
    """
    ids = list(output_ids)
    if ids and ids[-1] == tokenizer.eos_token_id:
        ids = ids[:-1]
    if set(ids) & set(tokenizer.all_special_ids):
        return False
    text = tokenizer.decode(ids, skip_special_tokens=False)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"]) == ids


def describe_mismatch(tokenizer: Any, trajectory: Trajectory, ours: list[int], fresh: list[int]) -> dict[str, Any]:
    """Where the two token lists part: which segment (the prompt, a turn's sampled tokens or env tokens) and the
    tokens around it on both sides."""
    at = next((i for i, (a, b) in enumerate(zip(ours, fresh)) if a != b), min(len(ours), len(fresh)))
    segment, start = "prompt", len(trajectory.prompt_ids)
    if at >= start:
        for k, turn in enumerate(trajectory.turns):
            if at < start + len(turn.output_ids):
                segment = f"turn {k} sampled ({turn.finish_reason})"
                break
            start += len(turn.output_ids)
            if at < start + len(turn.obs_ids):
                segment = f"turn {k} env tokens"
                break
            start += len(turn.obs_ids)
    return {"traj_id": trajectory.traj_id, "index": at, "lengths": [len(ours), len(fresh)], "segment": segment,
            "ours": tokenizer.convert_ids_to_tokens(ours[max(0, at - 3):at + 4]),
            "fresh": tokenizer.convert_ids_to_tokens(fresh[max(0, at - 3):at + 4])}


def bad_action_label(info: dict[str, Any]) -> str | None:
    """The env's label for a malformed or rejected final action, if it gave one."""
    for key in ("error", "parse_error", "invalid_action", "illegal_move"):
        value = info.get(key)
        if value:
            return f"{key}: {str(value).split(':')[0][:60]}"
    return None


def check_env(agent: ChatAgent, env_id: str, episodes: int, group: int, max_turns: int, seed: int) -> dict[str, Any]:
    """Play ``episodes`` episodes of ``env_id`` and count mismatches, failures and bad-action labels."""
    from rollgym.core.registration import make

    env = make(env_id)
    _, info = env.reset(seed=0)
    tools = info.get("tools") or None
    env.close()
    start = time.perf_counter()
    groups = collect_async(agent, env_id, n_tasks=episodes // group, group_size=group, seed=seed,
                           concurrency=16, max_steps=max_turns)
    elapsed = time.perf_counter() - start
    trajectories = [t for g in groups for t in g.trajectories]
    checked = mismatches = per_turn = canonical = canonical_mismatches = 0
    details: list[dict[str, Any]] = []
    for trajectory in trajectories:
        if not trajectory.turns or not trajectory.turns[-1].output_ids:
            continue
        if len(trajectory.turns) > 1 and trajectory.turns[0].prompt_ids != trajectory.prompt_ids:
            per_turn += 1  # a template that rewrote history: per-turn rows, nothing to compare
            continue
        checked += 1
        ours = list(trajectory.prompt_ids) + list(trajectory.completion_ids)
        fresh = fresh_ids(agent.tokenizer, trajectory, tools)
        replies_canonical = all(reply_round_trips(agent.tokenizer, t.output_ids) for t in trajectory.turns)
        canonical += replies_canonical
        if ours != fresh:
            mismatches += 1
            canonical_mismatches += replies_canonical
            details.append({**describe_mismatch(agent.tokenizer, trajectory, ours, fresh),
                            "replies_canonical": replies_canonical})
    labels = Counter(label for t in trajectories if (label := bad_action_label(t.info)))
    return {
        "env_id": env_id,
        "episodes": len(trajectories),
        "turns": sum(len(t.turns) for t in trajectories),
        "checked": checked,
        "mismatches": mismatches,
        "canonical_episodes": canonical,
        "canonical_mismatches": canonical_mismatches,
        "per_turn_rows": per_turn,
        "mismatch_details": details,
        "statuses": dict(Counter(t.status for t in trajectories)),
        "failed": sum(t.status == "failed" for t in trajectories),
        "correct": sum(t.correct for t in trajectories),
        "bad_action_labels": dict(labels.most_common(8)),
        "finish_reasons": dict(Counter(turn.finish_reason for t in trajectories for turn in t.turns)),
        "seconds": round(elapsed, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2-135m-instruct", help="a model folder or a pulled model's name")
    parser.add_argument("--envs", nargs="+", default=["ToolWorld-v1", "ConnectFour-v0"])
    parser.add_argument("--episodes", type=int, default=30, help="episodes per env")
    parser.add_argument("--group", type=int, default=2, help="rollouts per task (sampled, so they differ)")
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--max-turns", type=int, default=4)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="write the report here as JSON")
    args = parser.parse_args()

    backend = make_backend(args.model)
    sampling = SamplingParams(max_tokens=args.max_new_tokens, temperature=args.temperature, seed=args.seed)
    agent = ChatAgent(backend, sampling)
    report = {
        "model": args.model,
        "template_preserves_prefix": template_preserves_prefix(agent.tokenizer),
        "settings": {k: v for k, v in vars(args).items() if k not in {"out", "model"}},
        "envs": [check_env(agent, env_id, args.episodes, args.group, args.max_turns, args.seed)
                 for env_id in args.envs],
    }
    report["episodes"] = sum(e["episodes"] for e in report["envs"])
    report["mismatches"] = sum(e["mismatches"] for e in report["envs"])
    report["canonical_episodes"] = sum(e["canonical_episodes"] for e in report["envs"])
    report["canonical_mismatches"] = sum(e["canonical_mismatches"] for e in report["envs"])
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(text + "\n")


if __name__ == "__main__":
    main()
