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
