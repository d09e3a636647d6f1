"""The verl adapters without verl: reward function, parquet dataset, and the standalone agent loop."""

from __future__ import annotations

import asyncio
import json

import pytest

from rollgym.train.adapters.verl import (
    BackendServerManager,
    RollgymAgentLoop,
    compute_score,
    verl_rows,
    write_parquet,
)
from tests.conftest import require_module
from tests.train.small_envs import C4, COUNTDOWN


def test_compute_score_uses_the_verifier():
    row = verl_rows("Countdown-v0", 1, env_kwargs=COUNTDOWN)[0]
    truth = row["reward_model"]["ground_truth"]
    answer = json.loads(truth)["answer"]
    extra = row["extra_info"]
    assert compute_score("Countdown-v0", f"Sure. <answer>{answer}</answer>", truth, extra) == {"score": 1.0,
                                                                                             "acc": 1.0}
    assert compute_score("Countdown-v0", answer, truth, extra) == {"score": 0.0, "acc": 0.0}  # no answer tags
    assert compute_score("Countdown-v0", None, truth, extra)["score"] == 0.0  # type: ignore[arg-type]
    from rollgym.core import ConfigError

    with pytest.raises(ConfigError, match="multi-turn"):
        compute_score("ConnectFour-v0", "x", verl_rows("ConnectFour-v0", 1)[0]["reward_model"]["ground_truth"])


def test_parquet_has_verl_rl_dataset_columns(tmp_path):
    require_module("pyarrow")
    import pyarrow.parquet as pq
    path = write_parquet("Countdown-v0", 5, tmp_path / "train.parquet", env_kwargs=COUNTDOWN, split="test")
    table = pq.read_table(path)
    assert table.num_rows == 5
    assert {"data_source", "prompt", "ability", "reward_model", "extra_info"} <= set(table.column_names)
    assert "agent_name" not in table.column_names  # single-turn: verl's own loop plus compute_score
    row = table.to_pylist()[0]
    assert row["data_source"] == "Countdown-v0" and row["ability"] == "countdown"
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    assert row["reward_model"]["style"] == "rule"
    assert json.loads(row["reward_model"]["ground_truth"])["id"] == row["extra_info"]["task_id"]
    assert row["extra_info"]["split"] == "test" and json.loads(row["extra_info"]["env_kwargs"]) == COUNTDOWN
    multi = pq.read_table(write_parquet("ConnectFour-v0", 2, tmp_path / "c4.parquet")).to_pylist()
    assert all(r["agent_name"] == "rollgym" for r in multi)


def test_agent_loop_plays_a_multi_turn_episode_in_tokens(tiny_backend):
    row = verl_rows("ConnectFour-v0", 1, env_kwargs=C4)[0]
    loop = RollgymAgentLoop(None, BackendServerManager(tiny_backend), tiny_backend.tokenizer, max_turns=3,
                            max_tokens_per_turn=6)
    out = asyncio.run(loop.run({"temperature": 1.0, "seed": 3}, **row))
    assert set(out) >= {"prompt_ids", "response_ids", "response_mask", "response_logprobs", "reward_score",
                        "num_turns", "metrics", "extra_fields"}
    assert len(out["response_ids"]) == len(out["response_mask"]) == len(out["response_logprobs"])
    assert out["num_turns"] >= 2 and out["extra_fields"]["status"] in ("completed", "truncated")
    # a random model's answers are unplayable: the env replies, and its tokens are masked out
    assert out["response_mask"][0] == 1 and 0 in out["response_mask"]
    assert all(lp == 0.0 for lp, m in zip(out["response_logprobs"], out["response_mask"]) if m == 0)
    assert out["reward_score"] in (0.0, 0.5, 1.0)
    assert out["extra_fields"]["task_id"] == row["extra_info"]["task_id"]
    assert out["prompt_ids"] == tiny_backend.encode(row["prompt"])
    cut = RollgymAgentLoop(None, BackendServerManager(tiny_backend), tiny_backend.tokenizer, max_turns=3,
                           max_tokens_per_turn=6, max_response_length=5)
    assert len(asyncio.run(cut.run({"seed": 3}, **row))["response_ids"]) <= 5


def test_agent_loop_accepts_a_plain_token_list_server(tiny_backend):
    class ListServer:  # older verl server managers return bare token ids
        async def generate(self, request_id, *, prompt_ids, sampling_params):
            out = await BackendServerManager(tiny_backend).generate(request_id, prompt_ids=prompt_ids,
                                                                      sampling_params=sampling_params)
            return out.token_ids

    row = verl_rows("Countdown-v0", 1, env_kwargs=COUNTDOWN)[0]
    out = asyncio.run(RollgymAgentLoop(None, ListServer(), tiny_backend.tokenizer, max_tokens_per_turn=4).run(
        {"seed": 1}, **row))
    assert out["num_turns"] == 2 and all(m == 1 for m in out["response_mask"])
    assert out["response_logprobs"] == [0.0] * len(out["response_ids"])  # unknown logprobs are 0.0, never made up


class _CrashingBot:
    """A ConnectFour opponent whose engine dies on its first move."""

    name = "crashing-bot"

    def choose(self, state: object, rng: object) -> int:
        raise ValueError("the bot fell over")


def test_agent_loop_marks_an_env_failure_failed_and_trains_nothing_on_it(tiny_backend, monkeypatch):
    """A dead opponent is not the policy's fault: verl gets status failed and no trainable token."""
    import rollgym.train.adapters.verl as verl_adapter
    from rollgym.core.registration import make as real_make

    def make_with_broken_opponent(env_id: str, **kw: object) -> object:
        if env_id.startswith("ConnectFour"):
            kw.update(opponent=_CrashingBot(), agent_color="first")
        return real_make(env_id, **kw)

    monkeypatch.setattr(verl_adapter, "make", make_with_broken_opponent)

    class FirstLegalMove:  # a server that always answers column 4: a legal move, so the opponent must answer
        async def generate(self, request_id, *, prompt_ids, sampling_params):
            return tiny_backend.tokenizer.encode("Final Answer: 4", add_special_tokens=False)

    row = verl_rows("ConnectFour-v0", 1, env_kwargs=C4)[0]
    out = asyncio.run(RollgymAgentLoop(None, FirstLegalMove(), tiny_backend.tokenizer, max_turns=3,
                                       max_tokens_per_turn=8).run({"seed": 0}, **row))
    fields = out["extra_fields"]
    assert fields["status"] == "failed" and fields["failure"]["type"] == "OpponentError"
    assert "bot fell over" in fields["failure"]["message"]
    assert out["response_ids"] and set(out["response_mask"]) == {0}
    healthy = asyncio.run(RollgymAgentLoop(None, FirstLegalMove(), tiny_backend.tokenizer, max_turns=1,
                                           max_tokens_per_turn=8).run({"seed": 0}, **verl_rows("Countdown-v0", 1,
                                                                                              env_kwargs=COUNTDOWN)[0]))
    assert healthy["extra_fields"]["failure"] is None and 1 in healthy["response_mask"]
