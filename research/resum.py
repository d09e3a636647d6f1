"""ReSum's summarize-and-continue against independent samples and in-context retries, at the same token budget.

The warmed-up tiny Countdown model of :mod:`~research.countdown`, the same tasks for a seed
and the same budget of policy-sampled tokens per task in every arm (replies and summaries alike); a task is
solved when an attempt made within the budget is correct. Attempts come from :class:`RetryCountdown`: a
wrong answer gets "That is not right. Try again." and the episode goes on, up to ``attempts`` answers.

- ``independent``: fresh single-attempt episodes, as a GRPO group is sampled today.
- ``retry``: one episode of attempts with a plain :class:`~rollgym.agents.chat.ChatAgent`; the context grows.
- ``resum``: the same episode with a :class:`~rollgym.agents.resum.SummarizingAgent`: when the context
  reaches ``window`` tokens the model summarizes and continues from the task and its summary.

Sampling only, no training step. The tiny model was warmed up on single answers, so a retry and a
summary are both new to it: the experiment asks whether the mechanism costs or buys anything at a fixed
budget here, not whether a trained summarizer helps.
"""

from __future__ import annotations

from typing import Any

from research import countdown
from research.budget import budget_experiment, for_each_task, setting, task_rollouts, task_seed
from research.runner import ArmResult

ARMS = ("independent", "retry", "resum")
RETRY = "That is not right. Try again."


def _retry_env(config: dict[str, Any]) -> Any:
    import gymnasium as gym

    from rollgym.core.registration import make

    class RetryCountdown(gym.Env):  # type: ignore[type-arg]
        """Countdown with retries: each answer is graded on a fresh copy of the task; the first correct one ends."""

        def __init__(self) -> None:
            self.inner = make(config["env_id"], split="train", **config["env_kwargs"])
            self.attempts = int(config["attempts"])

        def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
            self.seed, self.options, self.tries = seed, options, 0
            return self.inner.reset(seed=seed, options=options)

        def step(self, action: str) -> Any:
            self.tries += 1
            if self.tries > 1:
                self.inner.reset(seed=self.seed, options=self.options)
            _, reward, _, _, info = self.inner.step(action)
            correct = bool(info.get("correct"))
            done = correct or self.tries >= self.attempts
            return ("" if done else RETRY), float(reward), done, False, {**info, "correct": correct,
                                                                          "attempts": self.tries}

        def close(self) -> None:
            self.inner.close()

    return RetryCountdown()


def solved_within(traj: Any, turns: list[Any], budget: int) -> tuple[bool, int, int]:
    """Whether an answer made within ``budget`` sampled tokens (summaries counted) was correct; the answers and
    the summaries made within it."""
    spent, answers, made, rewards = 0, 0, 0, list(traj.step_rewards)
    summaries = set(traj.metrics.get("summary_turns", ()))
    for i, turn in enumerate(turns):
        spent += len(turn.output_ids)
        if spent > budget:
            break
        if i in summaries:
            made += 1
            continue
        if answers < len(rewards) and rewards[answers] > 0:
            return True, answers + 1, made
        answers += 1
    return False, answers, made


def run(ctx: countdown.TinyCountdown, arm: str, seed: int, config: dict[str, Any]) -> ArmResult:
    from rollgym.agents.chat import ChatAgent
    from rollgym.agents.resum import SummarizingAgent
    from rollgym.rollout.branching import Branch
    from rollgym.rollout.episode import EpisodeLimits

    backend, sampling, tasks = setting(ctx, config, seed)
    budget = config["token_budget"]
    plain = ChatAgent(backend, sampling, system_prompt="")
    summarizing = SummarizingAgent(backend, sampling, window=config["window"], summary_tokens=config["max_tokens"],
                                   system_prompt="")

    async def one(index: int, task: Any) -> tuple[bool, int, int]:
        if arm == "independent":
            kept = await task_rollouts(arm, plain.spawn(), config, seed, index, task)
            return any(t.correct for t in kept), len(kept), 0
        seed_of_task, options = task_seed(seed, index), {"task": task}
        env = _retry_env(config)
        agent = (summarizing if arm == "resum" else plain).spawn()
        try:
            root = Branch.start(env, agent, seed=seed_of_task, agent_seed=seed_of_task, group_id=f"t{index}",
                                limits=EpisodeLimits(max_steps=config["attempts"]), options=options)
            traj = await root.aplay()
        finally:
            env.close()
        traj.metrics["summary_turns"] = list(agent.summary_turns) if isinstance(agent, SummarizingAgent) else []
        return solved_within(traj, list(agent.turns), budget)

    results = for_each_task(tasks, one)
    n = len(results)
    extras = {"answers_per_task": sum(a for _, a, _ in results) / n,
              "summaries_per_task": sum(s for _, _, s in results) / n}
    return ArmResult(sum(s for s, _, _ in results) / n, {"tasks": float(n)}, [], extras)


EXPERIMENT = budget_experiment(
    name="resum",
    title="ReSum's summarize-and-continue against independent samples and in-context retries",
    question="At the same budget of policy-sampled tokens per task, does one episode of retries that summarizes and "
             "continues when its context reaches a window solve more tasks than independent samples, and than the "
             "same retries in a growing context?",
    arms=ARMS,
    comparisons=(("resum", "independent"), ("resum", "retry"), ("retry", "independent")),
    secondary=("answers_per_task", "summaries_per_task"),
    run=run,
    full={"tasks": 40, "token_budget": 128, "roots": 2, "attempts": 12, "window": 128},
    quick={"tasks": 3, "token_budget": 40, "roots": 2, "attempts": 4, "window": 64},
    notes="The branching experiment's warm-up recipe, temperature 0.7, max 16 tokens a reply and a summary, "
          "budget 128 policy-sampled tokens per task, 40 tasks per seed. Retry episodes allow 12 answers; the "
          "budget is counted over the turns in order (a summary's tokens count), and an answer or a summary "
          "counts when its tokens fit. Window 128 context tokens: in a pilot episode (training-task seed 99) the "
          "first prompt held 34 tokens and each retry added about 55, the context after a summary about 101, so "
          "the first summary comes before the third answer and then one before every answer.",
)
