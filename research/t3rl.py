"""T^3RL against TTRL: test-time RL on MATHTool-style arithmetic with the real sandbox and the tiny model.

The task set is 48 unlabelled arithmetic problems (``What is 7*4+3?``) in a JSONL
file played through ``MATHTool-v0`` (the python tool runs in rollgym's sandbox). Each row is
templated (:func:`template`): ``verified`` needs the agent's code to print the answers of two
hidden fresh instances of ``a*b+c`` too. The
tiny model is warmed up on two behaviours, in tokens exactly as
:class:`~rollgym.agents.chat.ChatAgent` plays them through the env:

- *tool* (40% of the demonstrations): call ``python`` with the expression,
  then box the printed value (right, and tool-verified: ``info["verified"] is True``);
- *shortcut* (the rest): box the first number of the problem at once (wrong, and the
  same in every sample: a spurious consensus).

Test-time RL then trains on the same problems without labels. Arms (same steps, same
rollouts, same sandbox runs):

- ``ttrl``: :class:`~rollgym.rollout.strategies.MajorityVoteScorer` pseudo-labels;
- ``t3rl``: :class:`~rollgym.rollout.strategies.VerifiedVoteScorer` with the default weight 5;
- ``tool-reward`` (the control): :class:`ToolRewardScorer`, reward 1 for a tool-verified rollout and 0
  otherwise, with no vote, to show what the vote adds beyond rewarding verified tool use.

The metric is greedy accuracy on the 48 problems against their true answers (never used in
training); secondary measures are the pseudo-labels' accuracy over the run and, over the last five
steps, the share of sampled rollouts that are right and that call the tool. Each run also records, on its first
step's groups (the warm model's samples, the same in both arms), the label accuracy that every
weight in :data:`SWEEP` would give: the weight sweep.

The sandbox runs each distinct program once per experiment; an identical program (the tiny model
writes the same code for a problem again and again) reuses the recorded output, since these
programs are deterministic arithmetic. ``sandbox_runs`` and ``sandbox_reuses`` count both.
"""

from __future__ import annotations

import copy
import json
import threading
from pathlib import Path
from typing import Any

import numpy as np

from research.runner import ArmResult, Experiment, difference_text, markdown_table, mde_text, paired_comparison
from rollgym.rollout.types import RolloutGroup

ARMS = ("ttrl", "t3rl", "tool-reward")
SWEEP = (1.0, 2.0, 3.0, 5.0, 10.0)
ENV_ID = "MATHTool-v0"


class MemoSandbox:
    """Runs each distinct program once and replays its recorded result for identical programs (thread-safe)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.cache: dict[tuple[str, str], Any] = {}
        self.runs = 0
        self.reuses = 0
        self._lock = threading.Lock()

    def _call(self, method: str, code: str) -> Any:
        key = (method, code)
        with self._lock:
            if key in self.cache:
                self.reuses += 1
                return self.cache[key]
        result = getattr(self.inner, method)(code)
        with self._lock:
            self.cache[key] = result
            self.runs += 1
        return result

    def run_python(self, code: str) -> Any:
        return self._call("run_python", code)

    def run(self, code: str) -> Any:
        return self._call("run", code)

    def close(self) -> None:
        """The inner sandbox is shared; closing an env does not close it."""


def problems(n_test: int, n_demo: int, seed: int = 0) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Disjoint test and demonstration problems ``a * b + c`` with one-digit numbers, and their answers."""
    rng = np.random.default_rng(np.random.SeedSequence(entropy=seed, spawn_key=(17,)))
    triples = [(a, b, c) for a in range(2, 10) for b in range(2, 10) for c in range(1, 10)]
    order = rng.permutation(len(triples))[: n_test + n_demo]
    rows = [{"problem": f"What is {a}*{b}+{c}?", "answer": str(a * b + c), "a": a, "b": b, "c": c}
            for a, b, c in (triples[int(i)] for i in order)]
    test = [{"id": f"test-{i}", **row} for i, row in enumerate(rows[:n_test])]
    demo = [{"id": f"demo-{i}", **row} for i, row in enumerate(rows[n_test:])]
    return test, demo


def template(p: dict[str, Any], count: int = 2) -> dict[str, Any]:
    """The row's ``template`` field: its numbers by name and ``count`` fresh instances of ``a*b+c`` (hidden from the
    agent; ``MATHTool`` checks the agent's code on them, :mod:`rollgym.envs.math.templates`).

    Example:
        >>> template({"a": 7, "b": 4, "c": 3})["params"]
        {'a': 7, 'b': 4, 'c': 3}
    """
    params = {name: int(p[name]) for name in "abc"}
    rng = np.random.default_rng(np.random.SeedSequence(entropy=0, spawn_key=(18, *params.values())))
    instances: list[dict[str, Any]] = []
    while len(instances) < count:
        mapping: dict[int, int] = {}
        for old in params.values():  # equal numbers stay equal, so the code's literal maps one way
            mapping.setdefault(old, int(rng.integers(2, 10)))
        fresh = {name: mapping[old] for name, old in params.items()}
        answer = fresh["a"] * fresh["b"] + fresh["c"]
        if answer != params["a"] * params["b"] + params["c"] and all(i["params"] != fresh for i in instances):
            instances.append({"params": fresh, "answer": str(answer)})
    return {"params": params, "instances": instances}


def tool_text(p: dict[str, Any]) -> str:
    code = f"print({p['a']}*{p['b']}+{p['c']})"
    return "<tool_call>" + json.dumps({"name": "python", "arguments": {"code": code}}) + "</tool_call>"


class ScriptedBackend:
    """Emits fixed replies in the tokenizer's tokens (for writing demonstrations through the real env)."""

    name = "scripted"

    def __init__(self, tokenizer: Any, replies: list[str]) -> None:
        self.tokenizer = tokenizer
        self.replies = list(replies)
        self.policy_version = 0

    async def generate(self, prompts: list[Any], sampling: Any) -> list[Any]:
        from rollgym.agents.backends.base import Generation

        text = self.replies.pop(0)
        ids = [*self.tokenizer(text, add_special_tokens=False)["input_ids"], int(self.tokenizer.eos_token_id)]
        return [Generation(text, ids, [0.0] * len(ids), "stop", 0, list(p)) for p in prompts]


class Setting:
    """The tiny model, its warm weights, the problem files and the shared sandbox."""

    def __init__(self, config: dict[str, Any], workdir: Path) -> None:
        self.config = config
        self.workdir = workdir
        self.test, self.train = problems(config["test_problems"], config["demo_problems"])
        for name, rows in (("test", self.test), ("demo", self.train)):
            with open(workdir / f"{name}.jsonl", "w", encoding="utf-8") as handle:
                for row in rows:
                    fields = {k: row[k] for k in ("id", "problem", "answer")}
                    handle.write(json.dumps({**fields, "template": template(row)}) + "\n")
        self.memo: MemoSandbox | None = None
        self.accuracy_warm: tuple[float, float] | None = None
        self.model: Any = None
        self.tokenizer: Any = None
        self.warm: dict[str, Any] = {}

    def env(self, name: str = "test") -> Any:
        """A MATHTool env over one problem file, sharing the memoising sandbox."""
        from rollgym.core.registration import make

        env = make(ENV_ID, path=str(self.workdir / f"{name}.jsonl"), max_turns=self.config["max_turns"],
                   max_calls_per_turn=1)
        unwrapped: Any = env.unwrapped
        if self.memo is None:
            self.memo = MemoSandbox(unwrapped.sandbox)
        unwrapped._sandbox = self.memo  # every episode of the experiment shares one recorded sandbox
        return env

    def tasks(self, name: str) -> list[Any]:
        env = self.env(name)
        try:
            source = env.unwrapped.source
            split = env.unwrapped.split
            return [source.task(i, split) for i in range(source.size(split))]
        finally:
            env.close()


def _corpus(setting: Setting) -> list[str]:
    """Tokenizer training texts: the prompts as ChatAgent renders them, tool calls, tool responses, answers."""
    from rollgym.agents.backends.tiny import CHAT_TEMPLATE

    env = setting.env("demo")
    texts = []
    try:
        for i, p in enumerate(setting.train):
            obs, info = env.reset(options={"task_index": i})
            texts.append(obs)
            texts.append(json.dumps(info.get("tools")))
            texts.append(tool_text(p))
            texts.append(f'<tool_response name="python">\n{p["answer"]}\n</tool_response>')
            texts.append(f"\\boxed{{{p['answer']}}} \\boxed{{{p['a']}}}")
    finally:
        env.close()
    return [*texts, CHAT_TEMPLATE]


def prepare(config: dict[str, Any], workdir: Path) -> Setting:
    """Problem files, the tokenizer and tiny model, and the warm-up on tool and shortcut demonstrations."""
    import torch

    from research.countdown import demo_config
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.chat import ChatAgent
    from rollgym.train.adapters.episodes import play_tasks
    from rollgym.train.demo import build_demo_model
    from rollgym.train.sft import Demonstration, sft_train

    setting = Setting(config, workdir)
    torch.manual_seed(0)
    model, tokenizer = build_demo_model(workdir / "model", demo_config({**config, "env_id": "Countdown-v0",
                                                                        "env_kwargs": {}}), texts=_corpus(setting),
                                        text_tool_tags=True)
    setting.model, setting.tokenizer = model, tokenizer
    demos: list[Demonstration] = []
    rng = np.random.default_rng(0)
    tasks = setting.tasks("demo")
    for task, p in zip(tasks, setting.train):
        uses_tool = rng.random() < config["tool_share"]
        replies = [tool_text(p), f"\\boxed{{{p['answer']}}}"] if uses_tool else [f"\\boxed{{{p['a']}}}"]
        agent = ChatAgent(ScriptedBackend(tokenizer, replies), SamplingParams(max_tokens=64), system_prompt="")
        (traj,) = play_tasks(agent, ENV_ID, [task], max_turns=config["max_turns"],
                             make_env=lambda: setting.env("demo"))
        for turn in traj.turns:
            demos.append(Demonstration(task, list(turn.prompt_ids), list(turn.output_ids), "", float(traj.reward or 0)))
    sft_train(model, demos, steps=config["sft_steps"], batch_size=config["sft_batch"], learning_rate=config["sft_lr"],
              pad_id=int(tokenizer.pad_token_id), seed=0)
    setting.warm = copy.deepcopy(model.state_dict())
    return setting


class ToolRewardScorer:
    """The control arm's reward: 1 for a tool-verified rollout (the env's ``info["verified"]``), else 0; no vote."""

    def __call__(self, group: RolloutGroup) -> RolloutGroup:
        from rollgym.rollout.verification import verdict

        group.pseudo_label = None
        for traj in group.usable():
            ok, source = verdict(traj, group)
            traj.metrics["verified"], traj.metrics["verified_by"] = ok, source
            traj.reward_components["tool"] = float(ok)
            traj.reward = float(ok)
        return group


def _agent(setting: Setting, backend: Any, temperature: float, seed: int | None) -> Any:
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.chat import ChatAgent

    return ChatAgent(backend, SamplingParams(max_tokens=setting.config["max_tokens"], temperature=temperature,
                                             seed=seed), system_prompt="")


def greedy_accuracy(setting: Setting, backend: Any) -> tuple[float, float]:
    """Greedy accuracy on the test problems (true answers), and the share of episodes that called the tool."""
    from rollgym.train.adapters.episodes import play_tasks

    tasks = setting.tasks("test")
    trajs = play_tasks(_agent(setting, backend, 0.0, 0), ENV_ID, tasks, max_turns=setting.config["max_turns"],
                       make_env=lambda: setting.env("test"))
    correct = float(np.mean([t.correct for t in trajs]))
    tool = float(np.mean([len(t.turns) > 1 for t in trajs]))
    return correct, tool


def label_accuracy(groups: list[RolloutGroup], weight: float) -> float:
    """The share of groups whose verification-weighted vote (``weight``; 1 = TTRL) is the true answer."""
    from rollgym.rollout.strategies import VerifiedVoteScorer

    hits = []
    for group in groups:
        copy_ = RolloutGroup.from_dict(group.to_dict())
        VerifiedVoteScorer(verified_weight=weight)(copy_)
        hits.append(copy_.pseudo_label is not None and copy_.task is not None
                    and str(copy_.pseudo_label) == str(copy_.task.answer))
    return float(np.mean(hits)) if hits else 0.0


def run(setting: Setting, arm: str, seed: int, config: dict[str, Any]) -> ArmResult:
    from rollgym.agents.backends.hf import TransformersBackend
    from rollgym.rollout.strategies import MajorityVoteScorer, VerifiedVoteScorer
    from rollgym.train.adapters.episodes import play_groups
    from rollgym.train.grpo import GRPOConfig, GRPOTrainer

    setting.model.load_state_dict(setting.warm)
    backend = TransformersBackend(setting.model, setting.tokenizer, max_batch=512, batch_window_s=0.02)
    trainer = GRPOTrainer(setting.model, setting.tokenizer, GRPOConfig(learning_rate=config["learning_rate"],
                                                                       micro_batch_size=64, seed=seed))
    truth = {t.id: t.answer for t in setting.tasks("test")}
    label_fn = lambda g: truth.get(g.task.id) if g.task is not None else None  # noqa: E731
    scorer: Any = (MajorityVoteScorer(label_fn=label_fn) if arm == "ttrl" else ToolRewardScorer()
                   if arm == "tool-reward" else VerifiedVoteScorer(label_fn=label_fn))
    tasks = setting.tasks("test")
    rng = np.random.default_rng(np.random.SeedSequence(entropy=seed, spawn_key=(3,)))
    if setting.accuracy_warm is None:
        setting.accuracy_warm = greedy_accuracy(setting, backend)
    acc0, tool0 = setting.accuracy_warm
    curve = [(0.0, acc0)]
    labels: list[float] = []
    extras: dict[str, Any] = {}
    late: list[tuple[float, float]] = []
    runs_before = setting.memo.runs if setting.memo else 0
    for step in range(config["steps"]):
        chosen = [tasks[int(i)] for i in rng.choice(len(tasks), size=config["tasks_per_step"], replace=False)]
        sampling_seed = seed * 1_000_003 + step
        groups = play_groups(_agent(setting, backend, config["temperature"], sampling_seed), ENV_ID, chosen,
                             config["group_size"], max_turns=config["max_turns"], seed=sampling_seed,
                             prefix=f"s{step}-g", make_env=lambda: setting.env("test"))
        if step == 0:
            for w in SWEEP:
                extras[f"label_acc_w{w:g}"] = label_accuracy(groups, w)
            extras["verified_share_step0"] = float(np.mean([t.info.get("verified") is True
                                                            for g in groups for t in g.usable()]))
        for group in groups:
            scorer(group)
            labels.append(float(bool(group.trajectories and group.trajectories[0].metrics.get("label_correct"))))
        if step >= config["steps"] - 5:  # the policy's own samples near the end, against the true answers
            late += [(float(t.correct), float(len(t.turns) > 1)) for g in groups for t in g.usable()]
        trainer.step(groups)
        if (step + 1) % config["eval_every"] == 0 or step + 1 == config["steps"]:
            acc, tool = greedy_accuracy(setting, backend)
            curve.append((float(step + 1), acc))
    extras.update(label_accuracy=float(np.mean(labels)) if arm != "tool-reward" else None,  # no vote, no label
                  tool_use_greedy=tool, tool_use_warm=tool0,
                  sampled_accuracy_last5=float(np.mean([c for c, _ in late])),
                  tool_use_sampled_last5=float(np.mean([u for _, u in late])))
    cost = {"grpo_steps": float(config["steps"]),
            "policy_rollouts": float(config["steps"] * config["tasks_per_step"] * config["group_size"]),
            "sandbox_runs": float((setting.memo.runs if setting.memo else 0) - runs_before)}
    return ArmResult(curve[-1][1], cost, curve, extras)


def render_sweep(data: dict[str, Any]) -> str:
    """The weight sweep table: pseudo-label accuracy of each weight on the warm model's first-step groups."""
    from rollgym.train.stats import estimate

    runs = [r for r in data["runs"] if r["arm"] == "t3rl" and "label_acc_w1" in r["extras"]]
    if not runs:
        return ""
    def accuracies(w: float) -> list[float]:
        return [r["extras"][f"label_acc_w{w:g}"] for r in runs]

    sweep = [[f"{w:g}", estimate(accuracies(w)).format(3), ", ".join(f"{v:.3f}" for v in accuracies(w))]
             for w in SWEEP]
    seeds = [int(r["seed"]) for r in runs]
    differences = []
    for i, high in enumerate(SWEEP):
        for low in SWEEP[:i]:
            diffs = [h - lo for h, lo in zip(accuracies(high), accuracies(low))]
            c = paired_comparison(f"{high:g}", f"{low:g}", "label accuracy", seeds, diffs)
            differences.append([f"{high:g} − {low:g}", difference_text(c, 3), mde_text(c, 3), c["verdict"]])
    return "\n".join([
        "Weight sweep (pseudo-label accuracy of verification-weighted voting on the warm model's first-step "
        "groups, 8 groups of 8 rollouts per seed; weight 1 is TTRL):", "",
        *markdown_table(["verified_weight", "label accuracy (mean ± 95% CI)", "per seed"], sweep),
        "", "Paired differences of label accuracy between weights (the same groups score every weight):", "",
        *markdown_table(["weights", "difference (mean ± 95% CI)", "MDE (80% power)", "reading"], differences)])


EXPERIMENT = Experiment(
    name="t3rl",
    title="T^3RL against TTRL: test-time RL with tool-verified votes",
    question="When a wrong answer is the popular one and a few rollouts verify the right one with the python "
             "tool, does verification-weighted voting (weight 5) give better pseudo-labels and a better policy "
             "than majority voting?",
    metric="greedy accuracy (true answers)",
    arms=ARMS,
    baseline="ttrl",
    comparisons=(("t3rl", "ttrl"), ("t3rl", "tool-reward"), ("tool-reward", "ttrl")),
    secondary=("label_accuracy", "sampled_accuracy_last5", "tool_use_sampled_last5"),
    prepare=prepare,
    run=run,
    configs={
        "full": {"vocab_size": 1024, "hidden_size": 64, "layers": 2, "test_problems": 48, "demo_problems": 128,
                 "tool_share": 0.4, "sft_steps": 300, "sft_batch": 32, "sft_lr": 3e-3, "max_turns": 3,
                 "max_tokens": 40, "temperature": 1.0, "steps": 30, "tasks_per_step": 8, "group_size": 8,
                 "learning_rate": 5e-4, "eval_every": 10},
        "quick": {"vocab_size": 500, "hidden_size": 32, "layers": 2, "test_problems": 4, "demo_problems": 8,
                  "tool_share": 0.5, "sft_steps": 2, "sft_batch": 4, "sft_lr": 3e-3, "max_turns": 2,
                  "max_tokens": 24, "temperature": 1.0, "steps": 1, "tasks_per_step": 2, "group_size": 3,
                  "learning_rate": 5e-4, "eval_every": 1},
    },
    seeds=5,
    render_extra=render_sweep,
    notes="Compute: every arm samples the same rollouts per step (the tool runs are part of the rollouts), makes "
          "the same GRPO steps, and differs only in the reward: the vote (ttrl), the verification-weighted vote "
          "(t3rl), or verification alone with no vote (tool-reward, the control; it has no pseudo-label, so no "
          "label_accuracy); T^3RL's verification is the env's own signal, so it costs nothing extra.",
)
