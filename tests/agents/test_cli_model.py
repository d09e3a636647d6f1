"""`rollgym eval --model` and `rollgym serve-model` as a user runs them: real subprocesses, a real server."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

CLI = [sys.executable, "-m", "rollgym.cli"]


def run(*args, timeout=300):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout)


def test_eval_a_local_model_folder(tiny_model_dir):
    out = run("eval", "Countdown-v0", "--model", str(tiny_model_dir), "--n", "2", "--group-size", "2",
              "--max-tokens", "8", "--json")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["agent"] == f"llm:{tiny_model_dir}" and summary["episodes"] == 4 and summary["failures"] == 0


def test_serve_model_then_eval_over_http(tiny_model_dir):
    server = subprocess.Popen([*CLI, "serve-model", str(tiny_model_dir), "--port", "0"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        assert line.startswith("Serving") and " at http://127.0.0.1:" in line, server.stderr.read()
        url = line.rsplit(" at ", 1)[1].strip()
        out = run("eval", "Sudoku4x4-v0", "--model", url, "--tokenizer", str(tiny_model_dir), "--n", "2",
                  "--group-size", "2", "--max-tokens", "8", "--json")
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["episodes"] == 4
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.parametrize("model", ["./no/such/model", "ftp://example"])
def test_bad_model_is_one_sentence_and_exit_2(model):
    out = run("eval", "Countdown-v0", "--model", model, "--n", "1")
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_eval_with_a_draft_model_gives_the_greedy_tokens_of_the_target_alone(tiny_model_dir, tmp_path):
    common = ["eval", "Countdown-v0", "--model", str(tiny_model_dir), "--n", "2", "--group-size", "1",
              "--max-tokens", "12", "--temperature", "0", "--json"]
    plain = run(*common, "--out", str(tmp_path / "plain.jsonl"))
    fast = run(*common, "--draft", str(tiny_model_dir), "--out", str(tmp_path / "fast.jsonl"))
    assert plain.returncode == 0 and fast.returncode == 0, fast.stderr

    def completions(name):
        lines = [json.loads(line) for line in (tmp_path / name).read_text().splitlines()]
        return [line["trajectory"]["completion_ids"] for line in lines if line["kind"] == "episode"]

    assert completions("fast.jsonl") == completions("plain.jsonl") != []


def test_a_draft_over_http_is_one_sentence_and_exit_2():
    out = run("eval", "Countdown-v0", "--model", "http://127.0.0.1:9/v1", "--draft", "x", "--n", "1")
    assert out.returncode == 2
    assert "--draft works with a local transformers model only" in out.stderr
    assert "Traceback" not in out.stderr
